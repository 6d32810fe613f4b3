"""Containing a probe child's process group before another slot may start: stops,
done-ack and containment.

A slot's child runs as the leader of its own process group. To contain the group:

1. **Snapshot and persist membership first.** Every live member of the group (a
   content-free process snapshot: PID, start identity, group) is written to the
   containment journal and synced *before the first signal*, so a leader that exits on
   SIGTERM cannot strand a descendant that ignores it.
2. **Re-prove before every signal.** A recorded member is signalled only while it is
   alive with the same start identity and still in the group; a PID that now names
   another process is never signalled.
3. **SIGTERM, a grace, then SIGKILL.** Members that survive the grace are recorded as a
   durable ``lookup_worker_lost`` stop before they are killed.
4. **Reconcile.** A group that still has a live process afterwards (one that could not
   be re-proven, or that appeared after the snapshot) is *unreconciled*: nothing
   unproven is signalled, and ``lookup_containment_unreconciled`` is an absorbing stop
   that takes precedence over every other cause.

When the journal cannot be written, the members stay proven in memory and every signal
still needs its fresh proof; a failed write is recorded (``journal_failed``), never
treated as durable. `Containment.contain` never waits without bound.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from continuity.processes import group_of, group_pids
from continuity.spend.lease import process_start

__all__ = ["Contained", "Containment", "Member", "group_members"]

_POLL_S = 0.02


@dataclass(frozen=True)
class Member:
    """One process of a contained group, as proven when it was recorded."""

    pid: int
    start: str
    pgid: int


def group_members(pgid: int) -> list[Member]:
    """The live members of process group `pgid` (zombies excluded), from /proc."""
    members = []
    for pid in group_pids(pgid):
        start = process_start(pid)
        if start is not None:
            members.append(Member(pid, start, pgid))
    return members


def _proven(member: Member) -> bool:
    return process_start(member.pid) == member.start and group_of(member.pid) == member.pgid


@dataclass
class Contained:
    """What containment did: the members recorded, the signals sent (pid, signal), the
    survivors of SIGTERM, and the stop code it ends with (None: contained cleanly)."""

    members: list[Member] = field(default_factory=list)
    signals: list[tuple[int, int]] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    code: str | None = None
    journal_failed: bool = False


class Containment:
    """Contain process groups, journaling membership to `journal` (JSON lines)."""

    def __init__(self, journal: Path, *, grace: float = 0.25, kill_wait: float = 5.0) -> None:
        self.journal = journal
        self.grace = grace
        self.kill_wait = kill_wait

    def _persist(self, record: dict[str, object]) -> bool:
        try:
            fd = os.open(
                self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600
            )
            try:
                os.write(fd, json.dumps(record, sort_keys=True).encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            return False
        return True

    def _signal(self, member: Member, signum: int, done: Contained) -> None:
        if not _proven(member):  # re-proven before every signal
            return
        try:
            os.kill(member.pid, signum)
        except ProcessLookupError:
            return
        done.signals.append((member.pid, signum))

    def _wait(self, members: list[Member], seconds: float) -> list[Member]:
        deadline = time.monotonic() + seconds
        alive = [m for m in members if _proven(m)]
        while alive and time.monotonic() < deadline:
            time.sleep(_POLL_S)
            alive = [m for m in alive if _proven(m)]
        return alive

    def contain(self, pgid: int, *, slot: str) -> Contained:
        """Contain group `pgid` (the module docstring's steps)."""
        done = Contained(members=group_members(pgid))
        if not self._persist(
            {"slot": slot, "members": [asdict(m) for m in done.members], "event": "members"}
        ):
            done.journal_failed = True  # kept in memory; every signal is still proven
        for member in done.members:
            self._signal(member, signal.SIGTERM, done)
        survivors = self._wait(done.members, self.grace)
        if survivors:
            done.survivors = [m.pid for m in survivors]
            done.code = "lookup_worker_lost"
            if not self._persist(
                {"slot": slot, "event": "lookup_worker_lost", "survivors": done.survivors}
            ):
                done.journal_failed = True
            for member in survivors:
                self._signal(member, signal.SIGKILL, done)
            self._wait(survivors, self.kill_wait)
        if group_members(pgid):  # a live process no proven signal could end
            done.code = "lookup_containment_unreconciled"  # absorbing: takes precedence
            self._persist({"slot": slot, "event": "lookup_containment_unreconciled"})
        return done
