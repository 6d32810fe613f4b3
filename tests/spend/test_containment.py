"""Containment with real process groups: membership journaled before the first signal,
SIGTERM-resistant descendants killed and reported as lookup_worker_lost, a member that
cannot be re-proven never signalled, and an unreconciled group."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from continuity.spend.containment import Containment, Member, group_members
from continuity.spend.lease import process_start

# A leader that starts one descendant and prints both PIDs; `stubborn` makes the
# descendant ignore SIGTERM, `leader_exits` makes the leader exit at once on SIGTERM.
FAMILY = """
    import os, signal, subprocess, sys, time
    stubborn, leader_exits = sys.argv[1] == "1", sys.argv[2] == "1"
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, sys, time\\n"
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n" if stubborn else "")
        + "print('ready', flush=True)\\n"
        + "time.sleep(300)"], stdout=subprocess.PIPE, text=True)
    child.stdout.readline()
    if leader_exits:
        signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    print(os.getpid(), child.pid, flush=True)
    time.sleep(300)
"""


@pytest.fixture
def spawn() -> Iterator[list[subprocess.Popen[str]]]:
    made: list[subprocess.Popen[str]] = []
    yield made
    for process in made:  # never leave a group behind, whatever a test did
        with contextlib.suppress(OSError):
            os.killpg(process.pid, 9)
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def _family(
    spawn: list[subprocess.Popen[str]], *, stubborn: bool, leader_exits: bool
) -> tuple[subprocess.Popen[str], int]:
    leader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(FAMILY), str(int(stubborn)), str(int(leader_exits))],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group
    )
    spawn.append(leader)
    assert leader.stdout is not None
    _, descendant = (int(x) for x in leader.stdout.readline().split())
    return leader, descendant


def _gone(pid: int) -> bool:
    return process_start(pid) is None


def _reap_soon(leader: subprocess.Popen[str]) -> None:
    """Reap the leader as its parent would, so a dead leader is not a zombie."""
    deadline = time.monotonic() + 10
    while leader.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_group_that_obeys_sigterm_is_contained_cleanly(
    spawn: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    leader, descendant = _family(spawn, stubborn=False, leader_exits=False)
    assert {m.pid for m in group_members(leader.pid)} == {leader.pid, descendant}
    # a long grace: a loaded machine may take a while to schedule an obeying exit
    done = Containment(tmp_path / "journal.jsonl", grace=5.0).contain(leader.pid, slot="slot-1")
    _reap_soon(leader)
    assert done.code is None and done.survivors == []
    assert {pid for pid, sig in done.signals if sig == 15} == {leader.pid, descendant}
    assert _gone(descendant)


def test_a_sigterm_resistant_descendant_is_killed_and_reported(
    spawn: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    # the leader exits on SIGTERM at once; its descendant ignores SIGTERM. Membership
    # was journaled before the first signal, so the descendant is not stranded.
    leader, descendant = _family(spawn, stubborn=True, leader_exits=True)
    journal = tmp_path / "journal.jsonl"
    done = Containment(journal).contain(leader.pid, slot="slot-1")
    _reap_soon(leader)
    assert done.code == "lookup_worker_lost" and done.survivors == [descendant]
    assert (descendant, 9) in done.signals
    assert _gone(descendant)
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert records[0]["event"] == "members"  # persisted before any signal
    assert {m["pid"] for m in records[0]["members"]} == {leader.pid, descendant}
    assert records[1] == {
        "event": "lookup_worker_lost",
        "slot": "slot-1",
        "survivors": [descendant],
    }


def test_a_member_that_cannot_be_re_proven_is_never_signalled(
    spawn: list[subprocess.Popen[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader, descendant = _family(spawn, stubborn=False, leader_exits=False)
    from continuity.spend import containment

    real = containment.group_members

    def reused(pgid: int) -> list[Member]:
        # the descendant's recorded start identity is not the live process's: as if
        # its PID had been reused since it was observed
        return [
            Member(m.pid, "another-boot:1", m.pgid) if m.pid == descendant else m
            for m in real(pgid)
        ]

    monkeypatch.setattr(containment, "group_members", reused)
    done = Containment(tmp_path / "journal.jsonl", grace=0.1).contain(leader.pid, slot="s")
    assert all(pid != descendant for pid, _ in done.signals)
    assert done.code == "lookup_containment_unreconciled"  # a live, unproven member
    monkeypatch.setattr(containment, "group_members", real)
    assert not _gone(descendant)  # left alone (the fixture cleans up)


def test_a_journal_that_cannot_be_written_keeps_the_members_in_memory(
    spawn: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    leader, descendant = _family(spawn, stubborn=True, leader_exits=False)
    blocked = tmp_path / "no-such-dir" / "journal.jsonl"
    done = Containment(blocked, grace=0.1).contain(leader.pid, slot="s")
    _reap_soon(leader)
    assert done.journal_failed and not blocked.exists()
    assert done.code == "lookup_worker_lost" and _gone(descendant)
