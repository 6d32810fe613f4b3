"""A prepared ledger checkpoint: a replayed checkpoint kept by three upkeep stages.

`prepare_checkpoint` restores the base checkpoint (the replay on reader R) at its own
absolute path, under its lock, and runs three stages, each in a fresh child process
(`continuity.preparation.stage`), answering A -> R -> A while the extractor stays the
plan's (R unless ``--extraction-model`` names another). After every stage it takes a
journal snapshot and checks the stage against the previous one
(`continuity.preparation.integrity`). Allowlisted degradations continue; the first
integrity problem stops the preparation (no further paid stage runs on a treatment
that is already invalid). A stage whose child died, hung (killed at its timeout) or
lost its acknowledgement is read back from the journal: a row left ``dispatched``
keeps its whole conservative reservation.

The result is stored under a key of the base checkpoint, the repeat (three
extractions per trace and repeat, never per probe), the ledger binding and the
preparation code: a valid preparation as a snapshot tree of the workspace (probes fork
it at the base's path, under the base's lock), an invalid one as its receipt alone
(its samples are excluded; its upkeep still counts). Either way the receipt is in the
action entry, so a rerun never pays for a preparation twice.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from continuity.digest import KeySpec, code_digest
from continuity.errors import ContinuityError, LedgerError
from continuity.harness.checkpoints import CheckpointResult, checkpoint_lock, clear_workspace
from continuity.harness.keys import HARNESS_CODE
from continuity.harness.workspace import Workspace
from continuity.memory.ledger import empty_generation
from continuity.memory.ledger_journal import JournalSnapshot
from continuity.memory.ledger_store import LedgerStore
from continuity.memory.upkeep_receipts import UpkeepReceipt, generation_ref, reason_class
from continuity.messages import Usage
from continuity.preparation.integrity import degradations, preparation_problems, stage_problems
from continuity.preparation.receipts import (
    STAGES,
    LedgerBinding,
    PreparationReceipt,
    StageProcess,
    StageReceipt,
    StageReply,
    StageRequest,
)
from continuity.preparation.stage import empty_receipt
from continuity.providers.endpoint import RealBinding
from continuity.store import ObjectRef, Store

if TYPE_CHECKING:
    from continuity.zygote import ZygotePool

__all__ = [
    "PREPARATION_CODE",
    "PREPARATION_KIND",
    "PREPARATION_SALT",
    "STAGE_TARGET",
    "Between",
    "Prepared",
    "preparation_key",
    "prepare_checkpoint",
    "stored_preparation",
]

PREPARATION_SALT = "ledger-preparation-v1"
PREPARATION_KIND = "ledger-checkpoint"
PREPARATION_CODE = (*HARNESS_CODE, "continuity.arms", "continuity.preparation")
STAGE_TARGET = "continuity.preparation.stage:serve_stage"
_PRELOAD = ("continuity.preparation.stage",)
# A test seam: called after each stage's snapshot, with the stage number and the root.
Between = Callable[[int, Path], None]


class Prepared(msgspec.Struct, frozen=True):
    """A prepared checkpoint: what units fork (`checkpoint`, None when the preparation
    was invalid and kept no workspace) and its receipt."""

    key: str
    checkpoint: CheckpointResult | None
    receipt: PreparationReceipt
    status: str  # built | cached | incomplete (real mode: a stop rule refused a stage)


def preparation_key(
    base_key: str,
    binding: LedgerBinding,
    repeat: int,
    real: dict[str, Any] | None = None,
) -> str:
    """The prepared checkpoint's key; `real` (real mode) is the extractor endpoint's
    binding (never its credentials path)."""
    params: dict[str, Any] = {"binding": msgspec.to_builtins(binding), "repeat": repeat}
    if real is not None:
        params["real"] = real
    return KeySpec(
        kind=PREPARATION_KIND,
        salt=PREPARATION_SALT,
        code=code_digest(PREPARATION_CODE),
        params=params,
        inputs={"checkpoint": base_key},
    ).key()


def stored_preparation(store: Store, key: str, base: CheckpointResult) -> Prepared | None:
    """The stored preparation of `key`, if any (never rebuilt: it may have been paid)."""
    entry = store.get_action(key)
    if entry is None or entry.kind != PREPARATION_KIND:
        return None
    receipt = msgspec.convert(entry.meta["preparation"], PreparationReceipt)
    checkpoint = (
        _forkable(base, key, entry.output, "cached", []) if entry.meta.get("valid") else None
    )
    return Prepared(key, checkpoint, receipt, "cached")


def _snapshot(root: Path) -> JournalSnapshot:
    """The journal as it is now (before the first stage there is no store: the empty
    journal over generation 0).

    Raises:
        LedgerError: ``ledger_store_corrupt`` when the store fails its checks.
    """
    path = Workspace(root).ledger_path
    if not path.exists():
        genesis = empty_generation()
        return JournalSnapshot(
            operations=(), offered=(), head=genesis.id, head_number=0, entry_ids=()
        )
    with LedgerStore.reading(path) as store:
        return store.snapshot()


def _from_journal(
    request: StageRequest, after: JournalSnapshot, before: JournalSnapshot
) -> UpkeepReceipt:
    """What the journal says of a stage whose child reported nothing: its new row, if
    it made one (a ``dispatched`` row is uncertain: it keeps its reservation)."""
    old = before.by_id()
    rows = [op for op in after.operations if op.op_id not in old and op.stage == request.stage]
    if not rows:
        return UpkeepReceipt(
            stage=request.stage,
            tag=request.tag,
            outcome="child_failed",
            outcome_class="unknown",
            enforcement=request.enforcement,
        )
    row = rows[-1]
    outcome = "uncertain" if row.state == "dispatched" else (row.outcome or "child_failed")
    return UpkeepReceipt(
        stage=request.stage,
        tag=request.tag,
        op_id=row.op_id,
        kind=row.kind,
        state=row.state,
        outcome=outcome,
        outcome_class=reason_class(outcome),
        enforcement=request.enforcement,
        input_reservation=row.input_reservation,
        output_reservation=row.output_reservation,
        usage=row.usage,
    )


def _call(request: StageRequest, zygotes: ZygotePool | None, timeout: float) -> StageReply | str:
    """Run one stage in a fresh child forked from this thread's zygote (or from a
    zygote of its own); its reply, or its failure as a string."""
    from continuity.zygote import call_in_child

    payload = msgspec.json.encode(request)
    what = f"preparation stage {request.tag}"
    try:
        if zygotes is not None:
            out = zygotes.call(STAGE_TARGET, payload, timeout, what)
        else:
            out = call_in_child(_PRELOAD, STAGE_TARGET, payload, timeout, what)
    except ContinuityError as exc:
        return str(exc)
    try:
        return msgspec.json.decode(out, type=StageReply)
    except msgspec.MsgspecError as exc:
        return f"child_failed: the stage's reply does not decode: {exc}"


class _Run:
    """The stages of one preparation as they run: requests, receipts, processes and
    every problem found so far. `observe` (real mode) charges the invocation's
    admission with a lost acknowledgement's conservative input."""

    def __init__(self, parent_pid: int, observe: Callable[[Usage], None] | None) -> None:
        self.parent_pid = parent_pid
        self.observe = observe
        self.stages: list[StageReceipt] = []
        self.processes: list[StageProcess] = []
        self.problems: list[str] = []
        self.replayed: list[str] = []


def _run_stage(
    run: _Run,
    request: StageRequest,
    root: Path,
    before: JournalSnapshot,
    previous_model: str,
    zygotes: ZygotePool | None,
    timeout: float,
) -> JournalSnapshot | None:
    """One stage: its child, the journal after it, its checks. Returns the snapshot
    the next stage starts from (None when the journal could not be read)."""
    started = time.monotonic()
    reply = _call(request, zygotes, timeout)
    try:
        after = _snapshot(root)
    except LedgerError as exc:
        run.problems.append(f"{request.tag}:{exc.code}")
        after = None
    if isinstance(reply, str):
        upkeep = _from_journal(request, after or before, before)
        receipt = empty_receipt(request, reply, upkeep)
        if upkeep.state == "dispatched" and run.observe is not None:
            # The child died with its call in flight: its whole input reservation is
            # charged, as the child would have charged it had it seen the failure.
            run.observe(Usage(input=upkeep.input_reservation))
    else:
        receipt = reply.receipt
        run.processes.append(
            StageProcess(
                stage=request.stage,
                parent_pid=run.parent_pid,
                child_pid=reply.pid,
                elapsed_seconds=round(time.monotonic() - started, 3),
            )
        )
        run.replayed += reply.replayed
    run.stages.append(receipt)
    if after is not None:
        run.problems += stage_problems(
            before=before, after=after, receipt=receipt, previous_model=previous_model
        )
    return after


def _stages(
    run: _Run,
    root: Path,
    requests: Sequence[StageRequest],
    first_model: str,
    zygotes: ZygotePool | None,
    timeout: float,
    between: Between | None,
) -> None:
    """Every stage in order, each checked against the snapshot the last one left; the
    first integrity problem stops the rest."""
    try:
        previous = _snapshot(root)
    except LedgerError as exc:
        run.problems.append(f"p1:{exc.code}")
        return
    model = first_model
    for request in requests:
        try:
            now = _snapshot(root)
        except LedgerError as exc:
            run.problems.append(f"{request.tag}:{exc.code}")
            return
        if now != previous:
            run.problems.append(f"{request.tag}:journal_changed_between_stages")
            return
        after = _run_stage(run, request, root, previous, model, zygotes, timeout)
        if run.problems or after is None:
            return
        if between is not None:
            between(request.stage, root)
        previous, model = after, request.answering_model


def prepare_checkpoint(
    store: Store,
    base: CheckpointResult,
    *,
    arm: str,
    binding: LedgerBinding,
    repeat: int,
    enforcement: str,
    real: RealBinding | None = None,
    real_params: dict[str, Any] | None = None,
    context_window: int | None = None,
    captures: Sequence[Path] | None = None,
    zygotes: ZygotePool | None = None,
    timeout: float = 900.0,
    between: Between | None = None,
    observe: Callable[[Usage], None] | None = None,
    dump_requests: Path | None = None,
) -> Prepared:
    """Prepare (or reuse) the ledger checkpoint over `base`; see the module doc.

    `real` is the extractor's endpoint binding in real mode (`real_params`: what of it
    the key binds); `captures` the three capture files (``--capture-upkeep-output``);
    `timeout` each stage child's limit (it is killed past it: its acknowledgement is
    lost; `observe`, real mode, charges its conservative input to the invocation's
    admission). `dump_requests` (offline diagnostics) receives every extraction
    request. `between` is a test seam, called after each stage.
    """
    key = preparation_key(base.key, binding, repeat, real_params)
    stored = stored_preparation(store, key, base)
    if stored is not None:
        return stored
    root = Path(base.root)
    history = base.receipt.config
    first_model = f"{history.history_provider}:{history.history_model}"
    requests = [
        StageRequest(
            workspace=str(root),
            arm=arm,
            stage=stage,
            tag=f"p{stage}",
            answering_model=binding.sequence[stage - 1],
            extractor=binding.extractor,
            require_request_cap=binding.require_request_cap,
            enforcement=enforcement,
            context_window=context_window,
            fault=binding.faults.get(stage),
            real=real,
            capture=str(captures[stage - 1]) if captures else None,
            script=binding.script,
            dump_requests=str(dump_requests) if dump_requests is not None else None,
            parent_pid=os.getpid(),
        )
        for stage in range(1, STAGES + 1)
    ]
    run = _Run(os.getpid(), observe)
    with checkpoint_lock(store, base.lock_key):
        clear_workspace(root)
        store.restore_tree(base.tree.digest, root)
        try:
            _stages(run, root, requests, first_model, zygotes, timeout, between)
            if not run.problems:
                run.problems += preparation_problems(run.stages, run.processes, run.parent_pid)
            receipt = _receipt(base, repeat, binding, run, root)
            if real is not None and _refused(receipt):
                # Real mode: a stop rule refused a stage's dispatch. Nothing is stored,
                # so the next run retries it (the paid calls come from the call cache)
                # and writes its captures again: this attempt's are removed.
                for path in captures or ():
                    path.unlink(missing_ok=True)
                return Prepared(key, None, receipt, "incomplete")
            tree = store.put_dir(root) if receipt.valid else None
        finally:
            clear_workspace(root)
        _record(store, key, base, receipt, tree, run)
    checkpoint = _forkable(base, key, tree, "built", run.replayed) if tree else None
    return Prepared(key, checkpoint, receipt, "built")


def _forkable(
    base: CheckpointResult, key: str, tree: ObjectRef, status: str, replayed: list[str]
) -> CheckpointResult:
    """What probes fork: the prepared tree at the base's path, under the base's lock."""
    return msgspec.structs.replace(
        base, key=key, tree=tree, status=status, replayed_calls=replayed, lock=base.lock_key
    )


def _record(
    store: Store,
    key: str,
    base: CheckpointResult,
    receipt: PreparationReceipt,
    tree: ObjectRef | None,
    run: _Run,
) -> None:
    """Store the preparation: its tree (valid) or its receipt alone (invalid), the
    receipt in the entry either way."""
    store.record_action(
        key,
        kind=PREPARATION_KIND,
        output=tree or store.put_blob(msgspec.json.encode(receipt)),
        inputs={"checkpoint": base.key},
        meta={
            "trace_id": base.trace_id,
            "root": base.root,
            "lock": base.lock_key,
            "valid": receipt.valid,
            "receipt": msgspec.to_builtins(base.receipt),
            "preparation": msgspec.to_builtins(receipt),
            # Beside the receipt, never in it: these differ between two builds.
            "processes": msgspec.to_builtins(run.processes),
            "replayed_calls": run.replayed,
        },
    )


def _refused(receipt: PreparationReceipt) -> bool:
    return any(s.upkeep.outcome == "upkeep_dispatch_rejected" for s in receipt.stages)


def _receipt(
    base: CheckpointResult, repeat: int, binding: LedgerBinding, run: _Run, root: Path
) -> PreparationReceipt:
    final = None
    try:
        path = Workspace(root).ledger_path
        if path.exists():
            with LedgerStore.reading(path) as ledger:
                final = generation_ref(ledger.head())
        else:
            final = generation_ref(empty_generation())
    except LedgerError as exc:
        run.problems.append(exc.code)
    return PreparationReceipt(
        trace_id=base.trace_id,
        repeat=repeat,
        sequence=binding.sequence,
        extractor=binding.extractor,
        stages=run.stages,
        final=final,
        integrity=list(dict.fromkeys(run.problems)),
        degradations=degradations(run.stages),
    )
