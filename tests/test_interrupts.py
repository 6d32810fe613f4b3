"""Ctrl-C and SIGTERM during real doit commands: one line, 130 or 143, no traceback,
no process left behind, nothing half-written, and the same command resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue

import pytest

from continuity.interrupts import (
    EXIT_STATUS,
    INTERRUPT_MESSAGE,
    descendants,
    scratch,
    scratch_folders,
)

ROOT = Path(__file__).resolve().parents[1]
UNITS = [
    "units",
    "--suite",
    "original",
    "--trace",
    "brightline-return",
    "--arms",
    "native,cold-rebuild",
    "--probe-limit",
    "1",
]


def _doit(args: list[str], tmp_path: Path) -> list[str]:
    store, out = tmp_path / "store", tmp_path / "out"
    return [sys.executable, "-m", "doit", *args, "--store", str(store), "--out", str(out)]


def _group_members(group: int) -> list[str]:
    """Live (not zombie) processes in process group `group`, as their stat lines."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(stat)
    return members


def _interrupt(
    command: list[str], *, ready: str, signum: int, whole_group: bool
) -> tuple[int, str, str]:
    """Run `command` in its own session, wait for a stdout line containing `ready`,
    deliver `signum` (to the whole process group, as a terminal's Ctrl-C does, or to
    the doit process alone, as `kill` does), and return (status, stdout, stderr)."""
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines: Queue[str | None] = Queue()
    errors: list[str] = []

    def pump_stdout() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_stderr() -> None:
        assert proc.stderr is not None
        errors.append(proc.stderr.read())

    readers = [threading.Thread(target=pump_stdout), threading.Thread(target=pump_stderr)]
    for reader in readers:
        reader.start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except Empty:
                pytest.fail(f"no {ready!r} line within 240 s: {''.join(seen)}")
            if line is None:
                pytest.fail(f"finished before {ready!r}: {''.join(seen)}")
            seen.append(line)
            if ready in line:
                break
        if whole_group:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        status = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for reader in readers:
            reader.join(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    while (line := lines.get()) is not None:
        seen.append(line)
    # Nothing the command started outlives it (the zombies init has not reaped yet
    # are dead already).
    deadline = time.monotonic() + 5
    while _group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _group_members(proc.pid) == []
    return status, "".join(seen), "".join(errors)


def _assert_one_line(status: int, stdout: str, stderr: str, signum: int) -> None:
    assert status == EXIT_STATUS[signal.Signals(signum)], (stdout, stderr)
    assert stderr.splitlines()[-1] == INTERRUPT_MESSAGE
    assert stderr.count(INTERRUPT_MESSAGE) == 1
    assert "Traceback" not in stdout + stderr
    assert "TaskFailed" not in stdout + stderr


def _assert_nothing_half_written(folder: Path) -> None:
    for path in folder.rglob("*"):
        assert not path.name.endswith(".tmp") and not path.name.startswith("."), path
        if path.suffix == ".json":
            data = path.read_bytes()
            assert data, f"{path} is empty"
            json.loads(data)


@pytest.mark.parametrize(
    ("signum", "whole_group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["ctrl-c", "sigterm"],
)
def test_doit_units_interrupted_then_resumed(
    tmp_path: Path, signum: int, whole_group: bool
) -> None:
    # Interrupted after the first unit, in the middle of the second. The two units overlap
    # and may end a fraction of a second apart: on a loaded machine the signal can land
    # after the command has finished. That attempt interrupted nothing, so it is made
    # again, in a fresh folder, up to three times.
    for attempt in range(3):
        tmp_path = tmp_path / f"attempt-{attempt}"
        command = _doit(UNITS, tmp_path)
        status, stdout, stderr = _interrupt(
            command, ready="[1/2]", signum=signum, whole_group=whole_group
        )
        if not (status == 0 and "[2/2]" in stdout):
            break
    else:
        pytest.fail("in three attempts the signal never landed before the command finished")
    _assert_one_line(status, stdout, stderr, signum)
    assert "[2/2]" not in stdout
    _assert_nothing_half_written(tmp_path / "out")

    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "r1 brightline-return native cached" in again.stdout  # finished: skipped
    assert "r1 brightline-return cold-rebuild built" in again.stdout
    units = sorted(p.name for p in (tmp_path / "out" / "runs" / "offline" / "units").iterdir())
    assert units == [
        "r1-brightline-return-cold-rebuild.json",
        "r1-brightline-return-native.json",
    ]
    _assert_nothing_half_written(tmp_path / "out")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_doit_offline_contract_interrupted_with_servers_running(
    tmp_path: Path, signum: int
) -> None:
    # The contract replays checkpoints with in-process MCP servers (uvicorn) within
    # seconds of starting, whose own signal handling must not take over or print anything.
    status, stdout, stderr = _interrupt(
        _doit(["offline_contract"], tmp_path),
        ready="checkpoints original [1/",
        signum=signum,
        whole_group=signum == signal.SIGINT,
    )
    _assert_one_line(status, stdout, stderr, signum)
    _assert_nothing_half_written(tmp_path / "out")


def test_descendants_finds_grandchildren() -> None:
    # A shell whose child sleeps: both are descendants of this process.
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while not descendants(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        grandchildren = descendants(proc.pid)
        assert len(grandchildren) == 1
        assert {proc.pid, *grandchildren} <= set(descendants())
    finally:
        for pid in descendants(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
    assert descendants(2**22 + 1) == []  # no such process: nothing


_SCRATCH_SCRIPT = """
import subprocess, sys, threading, time
from pathlib import Path
from continuity.interrupts import install, scratch
install()
folder = Path(sys.argv[1])
folder.mkdir()
writer = [sys.executable, "-c", (
    "import sys, pathlib\\n"
    "target = pathlib.Path(sys.argv[1]) / 'state.json'\\n"
    "while True:\\n"
    "    target.write_text('{}')\\n"
), str(folder)]

def fill() -> None:
    # Holds the folder, and never unwinds: the exit must remove it.
    with scratch(folder):
        subprocess.Popen(writer)
        threading.Event().wait()

threading.Thread(target=fill, daemon=True).start()
while not (folder / "state.json").exists():
    time.sleep(0.01)
print("ready", flush=True)
threading.Event().wait()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_removes_the_scratch_a_stuck_thread_holds(tmp_path: Path, signum: int) -> None:
    # The main thread leaves at once; the worker thread that holds the folder, and the
    # child still writing in it, never unwind: the exit stops the child, then removes it.
    folder = tmp_path / "workspace"
    status, _, stderr = _interrupt(
        [sys.executable, "-c", _SCRATCH_SCRIPT, str(folder)],
        ready="ready",
        signum=signum,
        whole_group=False,
    )
    assert status == EXIT_STATUS[signal.Signals(signum)], stderr
    assert stderr.splitlines()[-1] == INTERRUPT_MESSAGE
    assert not folder.exists()


def test_scratch_counts_nested_holds(tmp_path: Path) -> None:
    with scratch(tmp_path / "a"):
        with scratch(tmp_path / "a"), scratch(tmp_path / "b"):
            assert scratch_folders() == [tmp_path / "a", tmp_path / "b"]
        assert scratch_folders() == [tmp_path / "a"]
    assert scratch_folders() == []


def test_descendants_skips_a_zombie() -> None:
    # A child that exited and was not waited for is a zombie: it writes nothing more.
    proc = subprocess.Popen(["true"])
    stat = Path(f"/proc/{proc.pid}/stat")
    deadline = time.monotonic() + 10
    while stat.read_text().rpartition(")")[2].split()[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert proc.pid not in descendants()
    finally:
        proc.wait()
