"""What the fault cases share: the workload commands, process identities, waiting for a
confirmed loss, the run's unit files and stored units, and the attempt's `FaultRun`."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from continuity.errors import ContinuityError
from continuity.processes import signal_group
from continuity.qualify.cases import Knobs
from continuity.qualify.receipts import (
    AFTER,
    BEFORE,
    FINAL,
    FaultAfter,
    FaultBefore,
    FaultFinal,
    InFlight,
    Loss,
    ProcessId,
    identity,
    write_receipt,
)
from continuity.spend.containment import group_members

__all__ = ["FaultRun", "write_after"]

_REPO = Path(__file__).resolve().parents[3]
_RUNNER_ARMS = "native,cold-rebuild,continuity-store,continuity-pack-cold"
_RUNNER_UNITS = 16  # four original traces x four arms
_TRACE = "brightline-return"


def _infrastructure(message: str, code: str) -> ContinuityError:
    """The fault could not be set up at all: an infrastructure failure, never a verdict."""
    return ContinuityError(message, code=code, location="qualify")


@dataclass
class FaultRun:
    """What a case leaves for grading: the affected files and the phase timings."""

    affected: dict[str, Path] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    expected_code: str | None = None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wait_for(ready: Callable[[], bool], timeout: float) -> bool:
    """Poll `ready` every 50 ms until it holds (True) or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(0.05)
    return False


def _confirm_group_gone(pgid: int, timeout: float = 30.0) -> bool:
    """Process group `pgid` has no live member left (the confirmed loss)."""
    return _wait_for(lambda: not group_members(pgid), timeout)


def _doit(*args: str) -> list[str]:
    return [sys.executable, "-m", "doit", "-f", str(_REPO / "dodo.py"), *args]


def _units_command() -> list[str]:
    return _doit(  # an argv table: a flag and its value a line
        "units",
        "--suite", "original",
        "--arms", _RUNNER_ARMS,
        "--run", "qualify",
        "--jobs", "1",
    )  # fmt: skip


def _stored_units(work: Path) -> dict[str, str]:
    """Every unit the run's store holds: its key -> its output's digest."""
    from continuity.store import Store

    if not (work / "store" / "actions").is_dir():
        return {}
    store = Store(work / "store")
    found = {}
    for path in store.iter_actions():
        entry = store.get_action(path.stem, verify_output=False)
        if entry is not None and entry.kind == "unit":
            found[path.stem] = entry.output.digest
    return found


def _units(work: Path, run: str = "qualify") -> dict[str, Path]:
    folder = work / "out" / "runs" / run / "units"
    return {p.name: p for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def _git(*args: str, cwd: Path = _REPO) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=qualify", "-c", "user.email=qualify@localhost", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        failed = done.stderr.strip()[:200]
        raise _infrastructure(f"git {args[0]} failed: {failed}", "qualify_workload_failed")
    return done.stdout.strip()


def _start(
    command: list[str], env: dict[str, str], cwd: Path = _REPO
) -> tuple[subprocess.Popen[str], ProcessId]:
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group: the fault takes all of it
    )
    found = identity(process.pid)
    if found is None:
        raise _infrastructure("the workload exited at once", "qualify_workload_failed")
    return process, found


def _aim(work: Path, knobs: Knobs, case_id: str, target: ProcessId) -> None:
    """``fault-before.json``: the fault is aimed at `target`, a live process."""
    aimed = FaultBefore(
        case=case_id,
        signal=knobs.signal,
        interval_s=knobs.interval_s,
        seed=knobs.seed,
        target=target,
    )
    write_receipt(work, BEFORE, aimed)


def _kill_group(
    work: Path,
    knobs: Knobs,
    case_id: str,
    run: FaultRun,
    aimed: tuple[int, ProcessId],
    started: float,
    what: str,
) -> float:
    """Aim the fault at `aimed` (a process-group leader and its identity), send the
    knobs' signal to its whole group and confirm the loss (no member left); the
    monotonic time of the confirmation, where the hold starts.

    Raises:
        ContinuityError: ``qualify_loss_unconfirmed`` when the group outlives the signal.
    """
    pgid, target = aimed
    _aim(work, knobs, case_id, target)
    signal_group(pgid, signal.Signals[knobs.signal], tolerate=())
    run.timings["until_fault"] = time.monotonic() - started
    if not _confirm_group_gone(pgid):
        raise _infrastructure(f"the {what}'s group outlived the signal", "qualify_loss_unconfirmed")
    return time.monotonic()


def write_after(
    work: Path,
    knobs: Knobs,
    target: ProcessId,
    loss: Loss,
    hold: float,
    recovery: str,
    restarted: ProcessId,
    in_flight: InFlight | None = None,
) -> None:
    """``fault-after.json``: what was killed and lost, the hold held (seconds from the
    confirmed loss), the recovery taken and what it restarted."""
    after = FaultAfter(
        killed=target,
        signal=knobs.signal,
        loss=loss,
        hold_s=round(hold, 3),
        recovery=recovery,
        restarted=restarted,
        in_flight=in_flight,
    )
    write_receipt(work, AFTER, after)


def _unexercised(work: Path, completed: bool) -> None:
    """``fault-final.json`` of a workload that ended before its fault could be aimed."""
    write_receipt(
        work, FINAL, FaultFinal(completed=completed, code=None, affected={}, deliveries=[])
    )
