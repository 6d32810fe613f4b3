"""One preflight slot, start to end, in a private root that is removed afterwards.

`run_slot` makes a private root (`continuity.runner.preflight.launch.private_root`:
mode 0700, outside the checkout and the user's store), runs the slot's preparation
child there and waits until its process group is gone (`launch_preparation`), verifies
the snapshot the child stored, checks the prepared workspace against the tree limits,
and dry-restores the snapshot over it in a child under a watchdog. The root is removed
in a ``finally``: after a failure and after an interrupt too (`continuity.interrupts`
raises `Interrupted` in the main thread, which unwinds through it).

Time: the preparation's watchdog is the whole run deadline, the dry restore's is what
the preparation left of it (`PhaseTime`). Probes are not part of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from continuity.errors import ContinuityError
from continuity.runner.preflight.child import PreparationFailed, Prepared
from continuity.runner.preflight.launch import launch_preparation, private_root
from continuity.runner.preflight.records import (
    PhaseTime,
    PreflightSlot,
    SlotFailure,
    SlotReport,
)
from continuity.runner.preflight.tree import (
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

__all__ = ["run_slot"]

_RESTORE_TARGET = "continuity.runner.preflight.tree:restore_job"


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
        role=slot.role,
        arm=slot.arm,
        soul=slot.soul,
        reader_binding=slot.reader_binding,
        code=slot.code.label,
        suite=slot.suite,
        trace_id=slot.trace_id,
        eligible=False,
        prepared=False,
        within_limits=False,
        restored=False,
        within_deadline=False,
    )


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
    report = msgspec.structs.replace(
        report, trace_key=reply.trace_key, checkpoint=reply.checkpoint, tree=reply.tree
    )
    unverified = _verify_snapshot(store, reply)
    if unverified is not None:
        return _failed(report, unverified)
    try:
        scan: TreeScan = scan_tree(Path(reply.root), limits)
    except OSError as exc:
        failure = f"cannot scan the prepared workspace: {exc.strerror or exc}"
        return _failed(report, SlotFailure(kind="preparation_failed", message=failure))
    report = msgspec.structs.replace(
        report,
        prepared=True,
        within_limits=scan.within_limits,
        files=scan.files,
        total_bytes=scan.total_bytes,
        largest_file_bytes=scan.largest_file_bytes,
        rejected=scan.rejected,
        rejected_first=scan.first,
    )
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
