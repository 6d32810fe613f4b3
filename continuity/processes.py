"""Process groups: signal one, find its members, tell whether it still runs.

A child started with ``start_new_session=True`` leads a process group of its own
(its PID is the group's id), so everything it starts can be stopped as one. This
module is the one place that talks to the kernel about groups; the callers choose
which failures of a signal they tolerate (`GONE`, `GONE_OR_DENIED`, `ANY_OS_ERROR`,
or none): a group that is already gone is usually not an error, but a fault injector
that must hit a live group wants to hear that it missed.

Membership is read from ``/proc`` (Linux): a process in state ``Z`` (a zombie) or
``X`` (dead) has stopped running even though its PID is still listed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Collection

__all__ = [
    "ANY_OS_ERROR",
    "GONE",
    "GONE_OR_DENIED",
    "NOT_RUNNING",
    "ZOMBIE",
    "Tolerated",
    "group_alive",
    "group_of",
    "group_pids",
    "kill_group",
    "proc_stat",
    "process_alive",
    "signal_group",
]

Tolerated = tuple[type[OSError], ...]  # the failures of a signal a caller ignores

GONE: Tolerated = (ProcessLookupError,)  # the group has no process left
GONE_OR_DENIED: Tolerated = (ProcessLookupError, PermissionError)  # ... or is not ours
ANY_OS_ERROR: Tolerated = (OSError,)  # any failure of the signal is ignored

NOT_RUNNING = frozenset({"Z", "X"})  # /proc states of a process that no longer runs
ZOMBIE = frozenset({"Z"})


def signal_group(pgid: int, signum: int, *, tolerate: Tolerated = GONE) -> bool:
    """Send `signum` to every process of group `pgid`: True when it was sent, False
    when it failed with one of `tolerate` (anything else is raised).

    Raises:
        ValueError: for a `pgid` below 1 (0 would signal the caller's own group).
    """
    if pgid < 1:
        raise ValueError(f"not a process group id: {pgid}")
    try:
        os.killpg(pgid, signum)
    except tolerate:
        return False
    return True


def kill_group(pgid: int, *, tolerate: Tolerated = GONE) -> bool:
    """SIGKILL group `pgid` (`signal_group`)."""
    return signal_group(pgid, signal.SIGKILL, tolerate=tolerate)


def group_of(pid: int) -> int | None:
    """The process group of process `pid`, or None when there is no such process."""
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, ...;
    field 22 of proc(5) is index 19), or None when there is no such process (or no
    ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            raw = handle.read()
    except OSError:
        return None
    # the command name is in parentheses and may hold anything: split after the last ")"
    return raw.rpartition(")")[2].split()


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs: it exists in ``/proc`` and is no zombie."""
    fields = proc_stat(pid)
    return fields is not None and len(fields) > 0 and fields[0] not in NOT_RUNNING


def group_pids(pgid: int, *, gone: Collection[str] = NOT_RUNNING) -> list[int]:
    """The PIDs of group `pgid`'s processes, ascending, from ``/proc``; a process whose
    state is in `gone` is left out, and so is one that exits while it is read.

    Raises:
        OSError: when ``/proc`` cannot be listed.
    """
    wanted = str(pgid)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = proc_stat(entry)  # None: gone meanwhile
        if fields and len(fields) >= 3 and fields[2] == wanted and fields[0] not in gone:
            pids.append(int(entry))
    return sorted(pids)


def group_alive(pgid: int, *, gone: Collection[str] = NOT_RUNNING) -> bool:
    """Whether a process of group `pgid` still runs (`group_pids`). Without ``/proc``,
    whether the kernel still knows the group (a zombie counts until it is reaped; a
    group this process may not signal counts as gone)."""
    try:
        return bool(group_pids(pgid, gone=gone))
    except OSError:
        pass
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True
