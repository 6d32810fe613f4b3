"""One preflight slot, start to end, in a private root that is removed afterwards.

`run_slot` makes a private root (``tempfile.mkdtemp``: mode 0700, outside the checkout
and the user's store), runs the slot's preparation child there (`launch_preparation`:
the slot's code, its own store, an environment of PATH and a HOME inside the root, no
credential, its own process group), waits until that group is gone, verifies the
snapshot the child stored, checks the prepared workspace against the tree limits, and
dry-restores the snapshot over it in a child under a watchdog. The root is removed in a
``finally``: after a failure and after an interrupt too (`continuity.interrupts` raises
`Interrupted` in the main thread, which unwinds through it).

Time: the preparation's watchdog is the whole run deadline, the dry restore's is what
the preparation left of it (`PhaseTime`). Probes are not part of it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from continuity.errors import ContinuityError, UsageError
from continuity.runner.preflight_child import (
    PreparationFailed,
    PreparationReply,
    PreparationRequest,
    Prepared,
    TraceInput,
)
from continuity.runner.preflight_tree import (
    PreflightSnapshot,
    RestoreDone,
    RestoreJob,
    TreeLimits,
    TreeScan,
    clear_tree,
    scan_tree,
)
from continuity.store import Store
from continuity.zygote import call_in_child

__all__ = [
    "CHILD_MODULE",
    "FAILURE_CLASSES",
    "PRIVATE_PREFIX",
    "PhaseTime",
    "PreflightSlot",
    "SlotCode",
    "SlotFailure",
    "SlotReport",
    "checkout_code",
    "private_root",
    "run_slot",
]

CHILD_MODULE = "continuity.runner.preflight_child"
PRIVATE_PREFIX = "continuity-preflight-"
# Why a slot is not eligible, besides a rejected entry (`preflight_tree.REJECTED_CLASSES`).
FAILURE_CLASSES = (
    "build_changed",
    "preparation_unavailable",
    "preparation_failed",
    "preparation_watchdog",
    "snapshot_unverified",
    "restore_failed",
    "restore_mismatch",
    "restore_watchdog",
)
_RESTORE_TARGET = "continuity.runner.preflight_tree:restore_job"
_GROUP_GRACE = 5.0  # seconds a finished child's group may take to go


class SlotCode(msgspec.Struct, frozen=True, kw_only=True):
    """The code a slot's preparation runs: a label (``r0``, ``rpack``, ``checkout``),
    the interpreter command that runs `CHILD_MODULE` with ``-m``, extra environment,
    and, when it cannot run it, why (`missing`)."""

    label: str
    command: list[str]
    env: dict[str, str] = msgspec.field(default_factory=dict)
    missing: str | None = None


def checkout_code() -> SlotCode:
    """This checkout's code: this interpreter, importing the package it runs from."""
    package_root = Path(__file__).resolve().parents[2]
    return SlotCode(
        label="checkout", command=[sys.executable, "-B"], env={"PYTHONPATH": str(package_root)}
    )


class PreflightSlot(msgspec.Struct, frozen=True, kw_only=True):
    """One scheduled slot: a role (or, without one, a bare lookup arm), its arm, soul
    and reader binding, a suite and one trace of it, and the code that prepares it.

    Attributes:
        trace: the trace itself (a frozen holdout trace), or None when the preparing
            code builds `trace_id` from `suite` itself (a registered workload).
    """

    role: str | None
    arm: str
    soul: str
    reader_binding: str
    suite: str
    trace_id: str
    trace: TraceInput | None = None
    code: SlotCode

    @property
    def name(self) -> str:
        return f"{self.role or self.arm} {self.suite} {self.trace_id}"


class PhaseTime(msgspec.Struct, frozen=True, kw_only=True):
    """One phase's wall time against its watchdog (what the run deadline left it)."""

    seconds: float
    watchdog_seconds: float
    within: bool


class SlotFailure(msgspec.Struct, frozen=True, kw_only=True):
    """Why a slot's preparation or dry restore failed: one of `FAILURE_CLASSES`."""

    kind: str
    message: str


class SlotReport(msgspec.Struct, frozen=True, kw_only=True):
    """One slot of the preflight report.

    ``eligible`` is prepared, within the tree limits, restored and within the run
    deadline. ``rejected`` counts entries per rejected class (``rejected_first`` names
    the first of each, a path below the workspace). ``checkpoint``, ``tree`` and
    ``snapshot`` (the `PreflightSnapshot` record's digest) are None when the
    preparation stopped before it stored them.
    """

    role: str | None
    arm: str
    soul: str
    reader_binding: str
    code: str
    suite: str
    trace_id: str
    eligible: bool
    prepared: bool
    within_limits: bool
    restored: bool
    within_deadline: bool
    files: int = 0
    total_bytes: int = 0
    largest_file_bytes: int = 0
    rejected: dict[str, int] = msgspec.field(default_factory=dict)
    rejected_first: dict[str, str] = msgspec.field(default_factory=dict)
    failure: SlotFailure | None = None
    checkpoint: str | None = None
    tree: str | None = None
    snapshot: str | None = None
    read_only_dirs_removed: int = 0
    preparation: PhaseTime | None = None
    dry_restore: PhaseTime | None = None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def private_root(forbidden: Sequence[Path]) -> Path:
    """A new private directory (mode 0700) under the system's temporary directory.

    Raises:
        UsageError: ``lookup_preflight_root_invalid`` (nothing is created) when that
            directory resolves inside one of `forbidden` (the checkout, the user's
            store): set ``TMPDIR`` elsewhere.
    """
    base = Path(os.path.realpath(tempfile.gettempdir()))
    for root in forbidden:
        resolved = Path(os.path.realpath(root))
        if _inside(base, resolved):
            raise UsageError(
                f"the temporary directory {base} lies inside {resolved}; preflight's private "
                "roots must be outside the checkout and the store (set TMPDIR elsewhere)",
                code="lookup_preflight_root_invalid",
                location=str(base),
            )
    return Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX, dir=base))


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` is still running (zombies aside)."""
    try:
        entries = [e for e in Path("/proc").iterdir() if e.name.isdigit()]
    except OSError:  # no /proc: ask the kernel (a zombie counts, until it is reaped)
        try:
            os.killpg(pgid, 0)
        except OSError:
            return False
        return True
    for entry in entries:
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        # After "(comm)": state, ppid, pgrp, ...
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _contain(child: subprocess.Popen[bytes]) -> None:
    """Kill the child's process group if it still runs, reap the child and wait until
    nothing of its group runs (the zygote and replay it started die with it)."""
    if child.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + _GROUP_GRACE
    while _group_alive(child.pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            deadline = time.monotonic() + _GROUP_GRACE
        time.sleep(0.02)


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1][:300] if lines else "no output"


def launch_preparation(
    slot: PreflightSlot, root: Path, watchdog: float
) -> PreparationReply | SlotFailure:
    """Run the slot's preparation child in `root`; its reply, or the failure that
    stopped it (``preparation_watchdog``, ``preparation_failed``). Returns only once
    the child's process group is gone."""
    request = PreparationRequest(
        root=str(root),
        arm=slot.arm,
        reader_binding=slot.reader_binding,
        soul=slot.soul,
        suite=slot.suite,
        trace_id=slot.trace_id,
        trace=slot.trace,
        timeout=watchdog,
    )
    (root / "home").mkdir(mode=0o700)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(root / "home"),
        "CONTINUITY_STORE": str(root / "store"),
        "CONTINUITY_OUT": str(root / "out"),
        "PYTHONDONTWRITEBYTECODE": "1",
        **slot.code.env,
    }
    command = [*slot.code.command, "-m", CHILD_MODULE, "--parent-pid", str(os.getpid())]
    # Its own session: the watchdog and the containment stop its whole process group.
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root,
        env=env,
        start_new_session=True,
    ) as child:
        try:
            out, err = child.communicate(msgspec.json.encode(request), timeout=watchdog)
        except subprocess.TimeoutExpired:
            return SlotFailure(
                kind="preparation_watchdog",
                message=f"the preparation ran past its {watchdog:g} s watchdog and was killed",
            )
        finally:
            _contain(child)
    try:
        return msgspec.json.decode(out, type=PreparationReply)
    except msgspec.MsgspecError:
        return SlotFailure(
            kind="preparation_failed",
            message=f"the preparation child exited {child.returncode} without a reply: "
            + _last_line(err),
        )


def _verify_snapshot(store: Store, prepared: Prepared) -> SlotFailure | None:
    """The checkpoint the child stored: a checkpoint entry naming its tree and
    workspace, every object of the tree present and verified (blake3)."""
    entry = store.get_action(prepared.checkpoint)  # verifies the whole output tree
    if entry is None:
        problem = "no verified checkpoint entry"
    elif entry.kind != "checkpoint" or entry.output.digest != prepared.tree:
        problem = f"the entry names {entry.kind} {entry.output.digest[:16]}"
    elif str(entry.meta.get("root")) != prepared.root:
        problem = "the entry names another workspace"
    else:
        return None
    return SlotFailure(
        kind="snapshot_unverified", message=f"checkpoint {prepared.checkpoint[:16]}: {problem}"
    )


def _restore(
    store: Store, prepared: Prepared, watchdog: float
) -> tuple[str, RestoreDone | SlotFailure]:
    """Record the snapshot (its tree and modes) and dry-restore it over the workspace in
    a child killed after `watchdog` seconds; the record's digest and the outcome."""
    record = PreflightSnapshot(
        checkpoint=prepared.checkpoint, tree=prepared.tree, modes=prepared.modes
    )
    digest = store.put_blob(msgspec.json.encode(record)).digest
    job = RestoreJob(store_root=str(store.root), snapshot=digest, root=prepared.root)
    if watchdog <= 0:
        return digest, SlotFailure(
            kind="restore_watchdog", message="the preparation left no run time to restore in"
        )
    started = time.monotonic()
    try:
        reply = call_in_child(
            (), _RESTORE_TARGET, msgspec.json.encode(job), watchdog, "dry restore"
        )
    except ContinuityError as exc:
        # The zygote kills a call that runs past its timeout (a child_failed like any
        # other death): the clock tells them apart.
        late = time.monotonic() - started >= watchdog
        return digest, SlotFailure(
            kind="restore_watchdog" if late else "restore_failed", message=str(exc)
        )
    done = msgspec.json.decode(reply, type=RestoreDone)
    if done.mismatches:
        return digest, SlotFailure(
            kind="restore_mismatch",
            message="the restored tree differs from the snapshot: "
            + ", ".join(done.mismatches[:5]),
        )
    return digest, done


def _phase(seconds: float, watchdog: float) -> PhaseTime:
    return PhaseTime(
        seconds=round(seconds, 3), watchdog_seconds=round(watchdog, 3), within=seconds <= watchdog
    )


def _blank(slot: PreflightSlot) -> SlotReport:
    return SlotReport(
        role=slot.role, arm=slot.arm, soul=slot.soul, reader_binding=slot.reader_binding,
        code=slot.code.label, suite=slot.suite, trace_id=slot.trace_id, eligible=False,
        prepared=False, within_limits=False, restored=False, within_deadline=False,
    )  # fmt: skip


def _failed(report: SlotReport, failure: SlotFailure) -> SlotReport:
    return msgspec.structs.replace(report, failure=failure, eligible=False)


def _attempt(
    slot: PreflightSlot,
    root: Path,
    *,
    limits: TreeLimits,
    deadline: float,
    check_code: Callable[[str], None] | None,
) -> SlotReport:
    """The slot's phases in `root`: code check, preparation, snapshot verification,
    tree limits, dry restore."""
    report = _blank(slot)
    try:
        if check_code is not None:
            check_code(slot.code.label)
    except ContinuityError as exc:
        return _failed(report, SlotFailure(kind="build_changed", message=str(exc)))
    if slot.code.missing is not None:
        return _failed(
            report, SlotFailure(kind="preparation_unavailable", message=slot.code.missing)
        )
    started = time.monotonic()
    reply = launch_preparation(slot, root, deadline)
    seconds = time.monotonic() - started
    report = msgspec.structs.replace(report, preparation=_phase(seconds, deadline))
    if isinstance(reply, PreparationFailed):
        reply = SlotFailure(
            kind="preparation_failed",
            message=f"{reply.code}: {reply.message} (at {reply.location})",
        )
    if isinstance(reply, SlotFailure):
        return _failed(report, reply)
    store = Store(root / "store")
    report = msgspec.structs.replace(report, checkpoint=reply.checkpoint, tree=reply.tree)
    unverified = _verify_snapshot(store, reply)
    if unverified is not None:
        return _failed(report, unverified)
    scan: TreeScan = scan_tree(Path(reply.root), limits)
    report = msgspec.structs.replace(
        report, prepared=True, within_limits=scan.within_limits, files=scan.files,
        total_bytes=scan.total_bytes, largest_file_bytes=scan.largest_file_bytes,
        rejected=scan.rejected, rejected_first=scan.first,
    )  # fmt: skip
    remaining = deadline - seconds
    started = time.monotonic()
    digest, restored = _restore(store, reply, remaining)
    report = msgspec.structs.replace(
        report, snapshot=digest, dry_restore=_phase(time.monotonic() - started, remaining)
    )
    if isinstance(restored, SlotFailure):
        return _failed(report, restored)
    within = report.preparation is not None and report.preparation.within
    within = within and report.dry_restore is not None and report.dry_restore.within
    return msgspec.structs.replace(
        report,
        restored=True,
        read_only_dirs_removed=restored.read_only_dirs_removed,
        within_deadline=within,
        eligible=report.within_limits and within,
    )


def run_slot(
    slot: PreflightSlot,
    *,
    limits: TreeLimits,
    deadline: float,
    forbidden: Sequence[Path],
    check_code: Callable[[str], None] | None = None,
) -> SlotReport:
    """Prepare, check and dry-restore one slot in a private root of its own, removed
    afterwards whatever happened (an interrupt included).

    Raises:
        UsageError: ``lookup_preflight_root_invalid`` (`private_root`).
    """
    root = private_root(forbidden)
    try:
        return _attempt(slot, root, limits=limits, deadline=deadline, check_code=check_code)
    finally:
        clear_tree(root)
