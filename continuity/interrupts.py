"""Ctrl-C and SIGTERM for doit commands: one line, a conventional exit status, no traceback.

`install` (called when ``dodo.py`` is imported) handles SIGINT and SIGTERM in the main
thread. The first signal:

- sends SIGTERM to every descendant process (unit workers and the probe children they
  fork, checkpoint children; read from ``/proc``), again every 0.2 s while the command
  unwinds, so none outlives the command or keeps working for it; worker threads see
  `interrupted()` and start nothing new;
- mutes stderr, so what the unwinding prints (a cleanup error, a server's log of a
  request cut short) never reaches the user;
- raises `Interrupted`, a `KeyboardInterrupt`: in the main thread's code, or from a
  callback of the running event loop (never inside whichever task happened to run).

The interrupt unwinds the task, so ``finally`` blocks and context managers release locks
and close ledgers. doit never catches a `KeyboardInterrupt` (its actions catch
`Exception` only), and `continuity.graph.task_action` turns any error raised after an
interrupt back into it, so it reaches the top of ``python -m doit``. There the
`sys.excepthook` installed here writes `INTERRUPT_MESSAGE` on the real stderr and exits
130 (SIGINT) or 143 (SIGTERM). A second signal, or unwinding that takes longer than
`UNWIND_SECONDS`, exits at once with the same line and status.

Nothing half-written is left visible: the store writes a temp file and renames it, and
so does every materialised output (`continuity.outputs.write_output`). A folder that a
child process fills in place (a checkpoint's workspace while it is replayed) is held
with `scratch`: the exit waits, briefly, for the stopped children to be gone and then
removes every folder still held, since the worker thread that would have removed it
never gets to unwind. Finished units, checkpoints and calls are already in the store,
so the same command resumes.

A signal the parent ignores (a background job of a non-interactive shell ignores
SIGINT) stays ignored. uvicorn serving in-process leaves the handlers alone while they
are installed (`handles_signals`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, TracebackType
from typing import NoReturn

from continuity.errors import Interrupted

__all__ = [
    "EXIT_STATUS",
    "INTERRUPT_MESSAGE",
    "UNWIND_SECONDS",
    "descendants",
    "handles_signals",
    "install",
    "interrupted",
    "raise_if_interrupted",
    "scratch",
    "scratch_folders",
]

INTERRUPT_MESSAGE = "interrupted; run the same command again to resume"
# The shell's convention: 128 + the signal number.
EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}

# How long the unwinding may take before the process leaves anyway.
UNWIND_SECONDS = 10.0
# How long the exit waits for stopped children before it SIGKILLs them, and then for
# the killed ones to be gone, before it removes the scratch folders they wrote in.
_CHILDREN_SECONDS = 1.0

_received = threading.Event()
_signal: list[int] = []  # the first signal received
_stderr: list[int] = []  # the real stderr, once the unwinding's own output is muted
_exiting = threading.Lock()
_Hook = Callable[[type[BaseException], BaseException, TracebackType | None], object]
_previous_hook: list[_Hook] = []
_announce = [True]  # whether this process prints INTERRUPT_MESSAGE (`install`)
_scratch: dict[Path, int] = {}  # folder -> how many `scratch` blocks hold it
_scratch_lock = threading.Lock()


def interrupted() -> bool:
    """True once SIGINT or SIGTERM arrived: long loops in worker threads stop starting
    new work (the main thread is already unwinding)."""
    return _received.is_set()


def raise_if_interrupted() -> None:
    """Raise `Interrupted` again once a signal arrived. For a task's outermost handler:
    cleanup cut short by the interrupt can raise an error of its own (a tool server that
    went away), which must not turn the interrupt into a task failure."""
    if _signal:
        raise Interrupted(_signal[0])


@contextlib.contextmanager
def scratch(folder: Path) -> Iterator[Path]:
    """Hold `folder` as work in progress for the block: an interrupt that ends the
    process meanwhile removes it, once the children are stopped (see above). The block
    still cleans up its own failures; this covers the exit that never lets it."""
    folder = Path(folder).absolute()
    with _scratch_lock:
        _scratch[folder] = _scratch.get(folder, 0) + 1
    try:
        yield folder
    finally:
        with _scratch_lock:
            if _scratch[folder] == 1:
                del _scratch[folder]
            else:
                _scratch[folder] -= 1


def scratch_folders() -> list[Path]:
    """The folders `scratch` holds now, sorted."""
    with _scratch_lock:
        return sorted(_scratch)


def install(*, announce: bool = True) -> None:
    """Handle SIGINT and SIGTERM as described above. Idempotent; does nothing outside
    the main thread (where Python cannot set signal handlers). ``announce=False`` is for
    a child process whose parent reports the interrupt (the offline contract's
    outside-agent pass): it stops and exits the same way, without the line."""
    if threading.current_thread() is not threading.main_thread():
        return
    _announce[:] = [announce]
    for signum in EXIT_STATUS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)
    if sys.excepthook is not _excepthook:
        _previous_hook[:] = [sys.excepthook]
        sys.excepthook = _excepthook
        atexit.register(_at_exit)


def handles_signals() -> bool:
    """True when `install` owns SIGINT or SIGTERM in this process: code that would set
    its own handlers (uvicorn serving in-process) leaves them alone."""
    return _on_signal in (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of `pid` (default: this process), read from ``/proc``;
    empty where there is no ``/proc``."""
    parents: dict[int, list[int]] = {}
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat.rpartition(")")[2].split()
        # A zombie (Z) or dead (X) process is not live: its children were reparented.
        if len(fields) >= 2 and fields[1].isdigit() and fields[0] not in ("Z", "X"):
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    frontier = [os.getpid() if pid is None else pid]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found.extend(children)
        frontier.extend(children)
    return found


def _stop_descendants(signum: int = signal.SIGTERM) -> None:
    for child in descendants():
        with contextlib.suppress(OSError):  # already gone
            os.kill(child, signum)


def _wait_for_descendants(seconds: float) -> bool:
    """True once no live descendant is left, False after `seconds` with some left."""
    deadline = time.monotonic() + seconds
    while descendants():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _remove_scratch() -> None:
    """Remove the folders `scratch` holds, once no child can write in them any more."""
    folders = scratch_folders()
    if not folders:
        return
    if not _wait_for_descendants(_CHILDREN_SECONDS):
        _stop_descendants(signal.SIGKILL)
        _wait_for_descendants(_CHILDREN_SECONDS)
    for folder in folders:
        # Twice: a killed child may finish the system call that created a file while
        # the first pass runs.
        for _ in range(2):
            shutil.rmtree(folder, ignore_errors=True)


def _mute_stderr() -> None:
    """Send what the unwinding writes to stderr (cleanup errors, a server's log of a
    request cut short) to /dev/null; keep the real stderr for the one line."""
    with contextlib.suppress(Exception):  # stderr may be closed or broken mid-unwind
        sys.stderr.flush()
    try:
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    os.dup2(devnull, 2)
    os.close(devnull)
    _stderr.append(saved)


def _watch(signum: int) -> None:
    """While the main thread unwinds, stop any child a worker thread started after the
    first sweep; leave when the unwinding takes longer than `UNWIND_SECONDS`."""
    deadline = time.monotonic() + UNWIND_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.2)
        _stop_descendants()
    _exit(signum)


def _raise(signum: int) -> NoReturn:
    raise Interrupted(signum)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _received.is_set():  # a second signal: stop now
        _exit(_signal[0])
    _signal.append(signum)
    _received.set()
    _mute_stderr()
    _stop_descendants()
    threading.Thread(target=_watch, args=(signum,), daemon=True).start()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _raise(signum)
    # Inside an event loop the interrupt leaves the loop from a callback of its own, not
    # from whichever task happened to run (an ASGI handler would log and swallow it);
    # the loop's shutdown then cancels every task.
    loop.call_soon_threadsafe(_raise, signum)


def _excepthook(
    kind: type[BaseException], value: BaseException, traceback: TracebackType | None
) -> None:
    if isinstance(value, Interrupted):
        _exit(value.signum)
    if _signal:  # whatever the unwinding raised instead (an exception group, say)
        _exit(_signal[0])
    if issubclass(kind, KeyboardInterrupt):
        _exit(signal.SIGINT)
    for hook in _previous_hook:
        hook(kind, value, traceback)


def _at_exit() -> None:
    if _signal:  # an interrupt that something swallowed on the way out
        _exit(_signal[0])


def _exit(signum: int) -> NoReturn:
    """Print the one line and leave without running interpreter shutdown, which would
    join worker threads that may still be waiting on a child being stopped."""
    if not _exiting.acquire(blocking=False):  # another thread is printing and leaving
        threading.Event().wait()
    _stop_descendants()
    _remove_scratch()
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(Exception):  # nothing a flush raises may stop the exit
            sys.stdout.flush()
    if _announce[0]:
        with contextlib.suppress(OSError):
            os.write(_stderr[0] if _stderr else 2, (INTERRUPT_MESSAGE + "\n").encode())
    os._exit(EXIT_STATUS.get(signal.Signals(signum), 128 + signum))
