"""`continuity.processes`: signalling process groups, their members, whether one runs.

Real children, each leading its own session (``start_new_session=True``), so a signal
to the group never reaches the test runner.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from continuity import processes
from continuity.processes import (
    ANY_OS_ERROR,
    GONE,
    GONE_OR_DENIED,
    ZOMBIE,
    group_alive,
    group_of,
    group_pids,
    kill_group,
    proc_stat,
    process_alive,
    signal_group,
)


def _until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def leader() -> Iterator[subprocess.Popen[bytes]]:
    """A shell leading its own group, with a `sleep` of the same group beside it."""
    process = subprocess.Popen(["sh", "-c", "sleep 60 & exec sleep 60"], start_new_session=True)
    try:
        assert _until(lambda: len(group_pids(process.pid)) == 2)
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_a_child_in_its_own_session_leads_its_group(leader: subprocess.Popen[bytes]) -> None:
    assert group_of(leader.pid) == leader.pid
    assert group_of(os.getpid()) == os.getpgid(0) != leader.pid
    assert leader.pid in group_pids(leader.pid)
    assert group_pids(leader.pid) == sorted(group_pids(leader.pid))
    assert group_alive(leader.pid)


def test_killing_the_group_takes_every_member(leader: subprocess.Popen[bytes]) -> None:
    assert kill_group(leader.pid) is True
    assert leader.wait(10) == -signal.SIGKILL
    # the orphaned sleep is reaped by init: gone, not merely a zombie
    assert _until(lambda: not group_alive(leader.pid))
    assert group_pids(leader.pid) == []


def test_a_gone_group_is_not_an_error_unless_the_caller_says_so(
    leader: subprocess.Popen[bytes],
) -> None:
    kill_group(leader.pid)
    leader.wait(10)
    assert _until(lambda: group_pids(leader.pid, gone=()) == [])
    assert kill_group(leader.pid) is False
    assert signal_group(leader.pid, signal.SIGTERM, tolerate=GONE_OR_DENIED) is False
    assert signal_group(leader.pid, signal.SIGTERM, tolerate=ANY_OS_ERROR) is False
    with pytest.raises(ProcessLookupError):
        signal_group(leader.pid, signal.SIGTERM, tolerate=())
    assert group_of(leader.pid) is None


def test_another_signal_reaches_the_group(leader: subprocess.Popen[bytes]) -> None:
    assert signal_group(leader.pid, signal.SIGTERM) is True
    assert leader.wait(10) == -signal.SIGTERM


def test_the_callers_own_group_is_never_signalled() -> None:
    for pgid in (0, -1):
        with pytest.raises(ValueError):
            kill_group(pgid)


def test_a_refused_signal_is_tolerated_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(pgid: int, signum: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "killpg", denied)
    assert kill_group(12345, tolerate=GONE_OR_DENIED) is False
    assert kill_group(12345, tolerate=ANY_OS_ERROR) is False
    with pytest.raises(PermissionError):
        kill_group(12345, tolerate=GONE)


def test_a_zombie_is_not_running_but_is_still_listed() -> None:
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        os.kill(process.pid, signal.SIGKILL)  # not reaped yet: a zombie
        assert _until(lambda: not group_alive(process.pid))
        assert not group_alive(process.pid, gone=ZOMBIE)
        assert group_pids(process.pid, gone=()) == [process.pid]
    finally:
        process.wait()
    assert group_pids(process.pid, gone=()) == []


def test_without_proc_the_kernel_is_asked(
    leader: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_proc(pgid: int, *, gone: object = None) -> list[int]:
        raise FileNotFoundError(2, "No such file or directory", "/proc")

    monkeypatch.setattr(processes, "group_pids", no_proc)
    assert group_alive(leader.pid)
    kill_group(leader.pid)
    leader.wait(10)
    assert _until(lambda: not group_alive(leader.pid))


def test_one_process_is_alive_until_it_is_a_zombie() -> None:
    """`process_alive` reads the state `proc_stat` gives: a zombie no longer runs."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert process_alive(child.pid)
        fields = proc_stat(child.pid)
        assert fields is not None and fields[2] == str(child.pid)  # pgrp: its own group
        child.kill()
        assert _until(lambda: (proc_stat(child.pid) or ["Z"])[0] == "Z")
        assert not process_alive(child.pid)  # killed, not yet reaped
    finally:
        child.kill()
        child.wait()
    assert not process_alive(child.pid) and proc_stat(child.pid) is None


def test_a_command_name_with_spaces_and_parentheses_is_read_past(tmp_path: Path) -> None:
    odd = tmp_path / "a b) (c"
    odd.symlink_to("/bin/sleep")
    child = subprocess.Popen([str(odd), "60"], start_new_session=True)
    comm = Path(f"/proc/{child.pid}/comm")
    try:
        assert _until(lambda: comm.read_text().strip() == "a b) (c")  # exec'd by now
        fields = proc_stat(child.pid)
        assert fields is not None and fields[0] in "RS" and fields[2] == str(child.pid)
    finally:
        child.kill()
        child.wait()
