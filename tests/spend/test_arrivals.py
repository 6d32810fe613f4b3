"""The child's arrival witness (`continuity.spend.arrivals`): written before a request
leaves, read back by the controller when the slot ends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import httpx
import pytest

from continuity.errors import SpendError
from continuity.spend.arrivals import ARRIVAL_INVALID, check_arrivals, witnessed
from continuity.spend.private import write_new

SLOT = "b0-native"


def _sent(root: Path, count: int) -> list[bytes]:
    """`count` requests through a witnessed send; the bodies the inner send saw."""
    seen: list[bytes] = []

    async def inner(request: httpx.Request) -> httpx.Response:
        # the witness is on disk before the request reaches the inner send
        assert (root / "arrivals" / SLOT / f"{len(seen) + 1}.json").is_file()
        seen.append(request.content)
        return httpx.Response(200)

    send = witnessed(inner, root, SLOT)

    async def go() -> None:
        for n in range(count):
            await send(httpx.Request("POST", "http://127.0.0.1:9/v1/responses", content=b"%d" % n))

    anyio.run(go)
    return seen


def test_each_request_is_witnessed_before_it_leaves(tmp_path: Path) -> None:
    assert _sent(tmp_path, 2) == [b"0", b"1"]
    record = json.loads((tmp_path / "arrivals" / SLOT / "1.json").read_text())
    assert set(record) == {"slot", "pid", "seq", "body_sha256"}  # nothing else
    assert (record["slot"], record["pid"], record["seq"]) == (SLOT, os.getpid(), 1)
    assert oct((tmp_path / "arrivals" / SLOT / "1.json").stat().st_mode & 0o777) == "0o600"
    assert check_arrivals(tmp_path, SLOT, os.getpid(), consumed=2, completed=True) is None
    # a slot cut short may have fewer witnesses than consumptions (killed before writing)
    assert check_arrivals(tmp_path, SLOT, os.getpid(), consumed=3, completed=False) is None


def test_a_witness_that_cannot_be_written_stops_the_request_unsent(tmp_path: Path) -> None:
    (tmp_path / "arrivals").write_text("not a directory")
    called: list[int] = []

    async def inner(request: httpx.Request) -> httpx.Response:
        called.append(1)
        return httpx.Response(200)

    send = witnessed(inner, tmp_path, SLOT)
    with pytest.raises(SpendError) as caught:
        anyio.run(send, httpx.Request("POST", "http://127.0.0.1:9/v1/responses"))
    assert caught.value.code == "lookup_arrival_persist_failed" and called == []


@pytest.mark.parametrize(
    "fault",
    ["another pid", "a gap", "more than consumed", "completed without one", "garbage", "renamed"],
)
def test_witnesses_that_do_not_match_the_slot_are_refused(tmp_path: Path, fault: str) -> None:
    _sent(tmp_path, 2)
    folder = tmp_path / "arrivals" / SLOT
    pid, consumed, completed = os.getpid(), 2, True
    if fault == "another pid":
        pid = pid + 1
    elif fault == "a gap":
        (folder / "1.json").unlink()
        completed = False
    elif fault == "more than consumed":
        consumed, completed = 1, False
    elif fault == "completed without one":
        consumed = 3
    elif fault == "garbage":
        write_new(folder / "3.json", b"{not json")
        consumed, completed = 3, False
    else:
        (folder / "2.json").rename(folder / "7.json")
        completed = False
    found = check_arrivals(tmp_path, SLOT, pid, consumed=consumed, completed=completed)
    assert found == ARRIVAL_INVALID


def test_a_journal_that_cannot_be_written_is_a_coded_stop(tmp_path: Path) -> None:
    from continuity.spend.schedule import Journal

    (tmp_path / "journal").mkdir()  # a directory where the journal file should be
    with pytest.raises(SpendError) as caught:
        Journal(tmp_path / "journal").add("visit", slot=SLOT)
    assert caught.value.code == "lookup_journal_failed" and caught.value.location == "visit"


def test_children_under_this_interpreter_import_the_controllers_own_code() -> None:
    import continuity
    from continuity.spend.controller import _child_environment

    root = str(Path(continuity.__file__).resolve().parents[1])
    mine = _child_environment({"PYTHONPATH": "/elsewhere", "HOME": "/h"}, None)
    assert mine["PYTHONPATH"] == root + os.pathsep + "/elsewhere" and mine["HOME"] == "/h"
    assert _child_environment({"A": "1"}, None)["PYTHONPATH"] == root
    # under a registered build's interpreter the venv imports its own exported tree
    assert _child_environment({"A": "1"}, "/venv/bin/python") == {"A": "1"}


_EGRESS = """
import json, socket, sys
from pathlib import Path
from continuity.spend.pilot_child import deny_egress

server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
port = server.getsockname()[1]
record = Path(sys.argv[1])
deny_egress((("localhost", port),), record)
outcomes = []
with socket.create_connection(("127.0.0.1", port), timeout=5):
    outcomes.append("allowed tcp")
for attempt in ("tcp", "udp"):
    try:
        if attempt == "tcp":
            socket.create_connection(("127.0.0.1", 9), timeout=1)
        else:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 53))
        outcomes.append(attempt + " sent")
    except PermissionError:
        outcomes.append(attempt + " denied")
print(json.dumps(outcomes))
"""


def test_egress_is_denied_but_to_the_allowed_hosts_resolved_addresses(tmp_path: Path) -> None:
    """In a child process of its own (the denial patches that process's sockets)."""
    import subprocess
    import sys

    record = tmp_path / "egress.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _EGRESS, str(record)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == ["allowed tcp", "tcp denied", "udp denied"]
    ports = [json.loads(line)["port"] for line in record.read_text().splitlines()]
    assert ports == [9, 53]  # content-free: the family and the port only
