"""The probe child's command line (``python -m continuity.sampling.child``): a request that
cannot be decoded, and a probe that fails with a typed error, each end in one
``error <code>: ...`` line and exit status 3, never in a traceback."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from continuity.errors import HarnessError
from continuity.sampling.child import probe_target, read_request
from continuity.sampling.receipts import ProbeReply, ProbeRequest


def _child(workspace: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "continuity.sampling.child", "--workspace", str(workspace)],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


INVALID = {
    "empty": b"",
    "truncated": b'{"arm": "native", "probe_te',
    "not json": b"{not json",
    "wrong type": b'{"arm": 3, "probe_text": "where?", "parent_pid": 1}',
    "field missing": b'{"arm": "native", "probe_text": "where?"}',
    "unknown arm": b'{"arm": "no-such-arm", "probe_text": "where?", "parent_pid": 1}',
}


@pytest.mark.parametrize("stdin", INVALID.values(), ids=INVALID.keys())
def test_an_invalid_request_is_probe_request_invalid(tmp_path: Path, stdin: bytes) -> None:
    result = _child(tmp_path, stdin)
    assert result.returncode == 3, result.stderr.decode()
    (line,) = result.stdout.decode().splitlines()
    assert line.startswith("error probe_request_invalid: ") and line.endswith(" (at stdin)")
    assert b"Traceback" not in result.stderr


def test_a_probe_over_no_checkpoint_fails_with_its_own_code(tmp_path: Path) -> None:
    request = ProbeRequest(arm="native", probe_text="where?", parent_pid=os.getpid())
    result = _child(tmp_path / "missing", msgspec.json.encode(request))
    assert result.returncode == 3, result.stderr.decode()
    (line,) = result.stdout.decode().splitlines()
    assert line.startswith("error session_corrupt: ")
    assert b"Traceback" not in result.stderr


def test_read_request_raises_the_code_in_process() -> None:
    with pytest.raises(HarnessError) as caught:
        read_request(io.BytesIO(b'{"arm": "native"'))
    assert caught.value.code == "probe_request_invalid" and caught.value.location == "stdin"
    request = ProbeRequest(arm="native", probe_text="where?", parent_pid=1)
    assert read_request(io.BytesIO(msgspec.json.encode(request))) == request


def _call(workspace: Path, request: bytes) -> bytes:
    """A `ProbeCall` payload holding the raw `request` bytes."""
    return b'{"workspace": %s, "request": %s}' % (msgspec.json.encode(str(workspace)), request)


@pytest.mark.parametrize(
    "payload",
    [b"{not json", *(_call(Path("/nowhere"), r) for r in list(INVALID.values())[3:])],
    ids=["not json", *list(INVALID)[3:]],
)
def test_the_zygote_target_replies_probe_request_invalid(payload: bytes) -> None:
    """The same child as a zygote's target: the error line in its reply, never a raise."""
    reply = msgspec.json.decode(probe_target(payload), type=ProbeReply)
    assert reply.evidence is None and reply.pid == os.getpid()
    assert reply.error is not None and reply.error.startswith("error probe_request_invalid: ")
    assert reply.error.endswith(" (at pipe)")


def test_the_zygote_target_replies_a_failed_probes_own_code(tmp_path: Path) -> None:
    request = ProbeRequest(arm="native", probe_text="where?", parent_pid=os.getpid())
    reply = msgspec.json.decode(
        probe_target(_call(tmp_path / "missing", msgspec.json.encode(request))), type=ProbeReply
    )
    assert reply.error is not None and reply.error.startswith("error session_corrupt: ")
