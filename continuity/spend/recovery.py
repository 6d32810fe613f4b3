"""Crash recovery: before a controller takes its writer lease, it observes the process
groups its crashed predecessors recorded, and refuses while any of them lives.

An output root serves one run (`continuity.spend.lease.acquire_lease` creates the lease
exclusively, `continuity.spend.consumption.consume` needs an unused root), so a
predecessor never shares the new controller's root. The durable index of predecessors
is the domain's burn registry (`continuity.spend.consumption.registry_root`): every
consumed run left a ``claim.json`` binding its output root (device and inode) and its
controller's PID and start identity. `recover(domain, output_root)`:

1. **finds the predecessors**: every registry entry with a sound claim whose controller
   no longer runs with its start identity. An entry without a sound claim launched
   nothing (children start only after consumption); a live controller contains its own
   groups; an entry reconciled at an earlier start is final. All three are skipped;
2. **reads what each recorded**, in its output root while it is still the claim's
   inode: ``launched`` (each child's PID, start identity and group, journaled before the
   child is told anything: `journal_launch`), ``prepared`` and ``members`` in
   ``controller-journal.jsonl``, and the ``members`` snapshots of
   ``containment-journal.jsonl``: preparation and probe groups alike;
3. **observes each recorded group** (`observe_group`), from ``/proc``:

   - ``alive``: a recorded member runs with its recorded start identity: the same
     process, whichever group it is in now;
   - ``reused``: no recorded member runs, and the group's id is now the PID of another
     process. The kernel does not reuse a PID while a group still has it as its id, so
     the recorded group ended: gone;
   - ``unproven``: no recorded member runs, yet the group still has live processes
     (descendants that outlived every recorded member; its id cannot have been reused
     while they live). As in containment, a live group with no re-proven member is
     unreconciled;
   - ``gone``: nothing of it runs. A group recorded only in another boot is gone;

4. **records what it found** in the entry's ``recovery.jsonl`` (private, append-only,
   synced): the observer's PID and start identity, counts, each group's state, the PID,
   start identity and group of every member still alive, a fixed code; no path and no
   content. A record without a code is final (``reconciled``).

Recovery never launches, readmits or signals anything, not even a member it re-proves:
ending a crashed predecessor's process is the operator's decision, and the next start
observes again. `acquire_recovered` runs it before `acquire_lease` and refuses with
``lookup_recovery_unreconciled`` while an ``alive`` or ``unproven`` group remains;
``lookup_recovery_failed`` when the registry cannot be read or the record cannot be
written (what was found is then not on disk). A predecessor whose output root is gone
or was recreated has nothing left to observe (``records``: ``missing``, or ``unsound``
for a journal that is a link, an alias or not private): nothing proves its groups
ended, so it is unreconciled too and refuses with ``lookup_recovery_unobservable``,
unless its controller started in an earlier boot (then nothing of it survives). A
journal line that does not parse is counted and skipped. These
``/proc`` observations are not atomic kernel capabilities.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import msgspec

from continuity.errors import SpendError
from continuity.processes import group_pids
from continuity.spend.consumption import CLAIM_FILE, Claim, registry_root
from continuity.spend.containment import Containment, Member
from continuity.spend.lease import Lease, acquire_lease, process_start
from continuity.spend.private import read_private, sync_directory
from continuity.spend.schedule import Journal

__all__ = [
    "RECOVERY_FILE",
    "GroupState",
    "Observation",
    "Recovery",
    "acquire_recovered",
    "journal_launch",
    "observe_group",
    "recover",
]

RECOVERY_FILE = "recovery.jsonl"
_UNRECONCILED = "lookup_recovery_unreconciled"
_UNOBSERVABLE = "lookup_recovery_unobservable"
_JOURNALS = ("controller-journal.jsonl", "containment-journal.jsonl")
_LIMIT = 1 << 24


def journal_launch(
    journal: Journal,
    containment: Containment,
    process: subprocess.Popen[bytes],
    *,
    slot: str,
    role: str,
    wait: float,
) -> str | None:
    """Journal a just-started child (its own session, waiting for its stdin) before it
    is told anything: ``launched`` with its slot, role, PID, start identity and group.
    Returns the start identity (None: it has already exited).

    Raises:
        SpendError: ``lookup_journal_failed``, once the unjournaled child was ended (its
            stdin closed unwritten, so it exits; its group contained).
    """
    start = process_start(process.pid)
    try:
        journal.add(
            "launched", slot=slot, role=role, pid=process.pid, start=start or "", pgid=process.pid
        )
    except SpendError:
        if process.stdin is not None:
            process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait)
        containment.contain(process.pid, slot=f"{slot}:{role}")
        raise
    return start


@dataclass(frozen=True)
class GroupState:
    """One recorded group as observed: ``gone``, ``reused``, ``alive`` or ``unproven``
    (module doc, step 3), and the recorded members still running."""

    pgid: int
    state: str
    alive: tuple[Member, ...] = ()


def _boot() -> str:
    return (process_start(os.getpid()) or "").rpartition(":")[0]


def observe_group(pgid: int, members: Collection[Member]) -> GroupState:
    """Observe recorded group `pgid` and its recorded `members`; never signals."""
    alive = tuple(sorted((m for m in members if process_start(m.pid) == m.start), key=str))
    if alive:
        return GroupState(pgid, "alive", alive)
    boot = _boot()
    starts = [m.start.rpartition(":")[0] for m in members if m.start]  # "": exited first
    if starts and boot not in starts:
        return GroupState(pgid, "gone")  # recorded in another boot: nothing survives one
    leader = any(m.pid == pgid and m.start for m in members)  # its recorded leader
    if leader and process_start(pgid) is not None:
        # the id names another process than the recorded leader: the group ended first
        return GroupState(pgid, "reused")
    try:
        live = bool(group_pids(pgid))
    except OSError:
        live = True  # no /proc: nothing is proven gone
    return GroupState(pgid, "unproven" if live else "gone")


@dataclass(frozen=True)
class Observation:
    """What one predecessor recorded and how it was found: ``records`` is ``read``,
    ``missing`` or ``unsound``; ``unsound`` also counts lines that did not parse."""

    records: str
    groups: tuple[GroupState, ...] = ()
    members: int = 0
    unsound: int = 0
    another_boot: bool = False  # the predecessor ran before this boot: all of it ended

    @property
    def code(self) -> str | None:
        """``lookup_recovery_unreconciled`` while a group is alive or unproven;
        ``lookup_recovery_unobservable`` when the records cannot be read in this boot
        (nothing proves its groups ended)."""
        if any(g.state in ("alive", "unproven") for g in self.groups):
            return _UNRECONCILED
        if self.records != "read" and not self.another_boot:
            return _UNOBSERVABLE
        return None

    def record(self, observer: tuple[int, str]) -> dict[str, Any]:
        """The content-free line `recover` appends to the entry's ``recovery.jsonl``."""
        states = [g.state for g in self.groups]
        return {
            "event": "recovery",
            "observer_pid": observer[0],
            "observer_start": observer[1],
            "records": self.records,
            "groups": len(self.groups),
            "members": self.members,
            "unsound": self.unsound,
            **{state: states.count(state) for state in ("gone", "reused")},
            "alive": [asdict(m) for g in self.groups for m in g.alive],
            "unproven": [g.pgid for g in self.groups if g.state == "unproven"],
            "another_boot": self.another_boot,
            "code": self.code,
            "reconciled": self.code is None,
        }


@dataclass(frozen=True)
class Recovery:
    """One start's recovery: an observation per predecessor, and the entries skipped
    (their controller still runs; reconciled at an earlier start; no sound claim)."""

    observations: tuple[Observation, ...]
    live: int = 0
    reconciled: int = 0
    unclaimed: int = 0

    @property
    def code(self) -> str | None:
        """``lookup_recovery_unreconciled`` when any predecessor is."""
        return next((o.code for o in self.observations if o.code), None)

    def summary(self) -> dict[str, int]:
        """Counts only, for the new run's journal (`PilotConfig.recovery`)."""
        groups = [g.state for o in self.observations for g in o.groups]
        return {
            "observed": len(self.observations),
            "live_controllers": self.live,
            "reconciled_before": self.reconciled,
            "unclaimed": self.unclaimed,
            "groups_gone": groups.count("gone"),
            "groups_reused": groups.count("reused"),
        }


def _members(event: dict[str, Any]) -> list[Member]:
    """The members one journal event records (ValueError, TypeError, KeyError when it
    is not sound)."""
    kind = event["event"]
    if kind in ("launched", "prepared"):  # a preparation child leads its own group
        rows = [{"pgid": event["pid"], **event}]
    elif kind == "members":
        rows = list(event["members"])
    else:
        return []
    found = []
    for row in rows:
        pid, start, pgid = row["pid"], row["start"], row["pgid"]
        if not (isinstance(pid, int) and isinstance(start, str) and isinstance(pgid, int)):
            raise TypeError("not a member")
        found.append(Member(pid, start, pgid))
    return found


def _read(root: Path, claim: Claim) -> Observation:
    """Step 2 and 3 of the module doc for one predecessor."""
    boot = claim.controller_start.rpartition(":")[0]
    another_boot = bool(boot) and boot != _boot()
    try:
        info = os.lstat(root)
    except OSError:
        return Observation("missing", another_boot=another_boot)
    if not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) != (
        claim.root_device,
        claim.root_inode,
    ):  # recreated: nothing in it is the predecessor's
        return Observation("missing", another_boot=another_boot)
    groups: dict[int, set[Member]] = {}
    unsound = 0
    for name in _JOURNALS:
        if not os.path.lexists(root / name):
            continue  # not made yet when the controller crashed
        data = read_private(root / name, limit=_LIMIT)
        if data is None:
            return Observation("unsound", another_boot=another_boot)
        for line in data.splitlines():
            try:
                event = json.loads(line)
                members = _members(event) if isinstance(event, dict) else []
            except (ValueError, TypeError, KeyError):
                unsound += 1
                continue
            for member in members:
                groups.setdefault(member.pgid, set()).add(member)
    return Observation(
        "read",
        tuple(observe_group(pgid, groups[pgid]) for pgid in sorted(groups)),
        members=sum(len(m) for m in groups.values()),
        unsound=unsound,
    )


def _entries(registry: Path) -> Iterator[tuple[Path, Claim | None]]:
    """The registry's entries (private directories of this user) and their claims."""
    try:
        names = sorted(os.listdir(registry))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SpendError(
            f"the consumption registry cannot be read ({exc.strerror})",
            code="lookup_recovery_failed",
            location="registry",
            outcome="refused_pre_send",
        ) from None
    for name in names:
        entry = registry / name
        try:
            info = os.lstat(entry)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        data = read_private(entry / CLAIM_FILE)
        try:
            claim = msgspec.json.decode(data, type=Claim) if data is not None else None
        except msgspec.DecodeError:
            claim = None
        yield entry, claim


def _reconciled(entry: Path) -> bool:
    data = read_private(entry / RECOVERY_FILE, limit=_LIMIT)
    for line in (data or b"").splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict) and event.get("reconciled") is True:
                return True
    return False


def _append(entry: Path, record: dict[str, Any]) -> None:
    line = json.dumps(record, sort_keys=True).encode() + b"\n"
    try:
        fd = os.open(
            entry / RECOVERY_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600
        )
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        sync_directory(entry)
    except OSError as exc:
        raise SpendError(
            f"the recovery record cannot be written ({exc.strerror})",
            code="lookup_recovery_failed",
            location="registry",
            outcome="refused_pre_send",
        ) from None


def recover(domain: str, output_root: Path) -> Recovery:
    """Observe and record every crashed predecessor in `domain`'s registry (the faux
    one beside `output_root`); the module doc's steps. Never signals.

    Raises:
        SpendError: ``lookup_recovery_failed``; a consumption code for an unknown
            domain.
    """
    observer = (os.getpid(), process_start(os.getpid()) or "")
    found: list[Observation] = []
    live = reconciled = unclaimed = 0
    for entry, claim in _entries(registry_root(domain, output_root)):
        if claim is None:
            unclaimed += 1
        elif process_start(claim.controller_pid) == claim.controller_start:
            live += 1
        elif _reconciled(entry):
            reconciled += 1
        else:
            observation = _read(Path(claim.output_root), claim)
            _append(entry, observation.record(observer))
            found.append(observation)
    return Recovery(tuple(found), live=live, reconciled=reconciled, unclaimed=unclaimed)


def acquire_recovered(domain: str, output_root: Path) -> tuple[Lease, Recovery]:
    """Recover (`recover`), then take `output_root`'s writer lease (`acquire_lease`).

    Raises:
        SpendError: ``lookup_recovery_unreconciled`` (nothing taken, nothing
            signalled), ``lookup_recovery_unobservable``, ``lookup_recovery_failed``,
            and the lease's codes.
    """
    recovery = recover(domain, output_root)
    if recovery.code == _UNRECONCILED:
        groups = [g for o in recovery.observations for g in o.groups if o.code]
        live = sum(g.state in ("alive", "unproven") for g in groups)
        raise SpendError(
            f"{live} process group(s) a crashed controller recorded still run: "
            "end them, then start again (recovery never signals them)",
            code=_UNRECONCILED,
            location="recovery",
            outcome="refused_pre_send",
        )
    if recovery.code == _UNOBSERVABLE:
        raise SpendError(
            "a crashed controller's records cannot be read (its output root is gone, "
            "recreated or unsound), so nothing proves its processes ended: restore its "
            "output root, or start again after a reboot",
            code=_UNOBSERVABLE,
            location="recovery",
            outcome="refused_pre_send",
        )
    return acquire_lease(output_root), recovery
