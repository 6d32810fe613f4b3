"""One unit: a repeat x trace x arm, run through its checkpoint and worker, graded, sealed.

`run_unit` is a chain of named steps: key -> reuse -> probe slots -> checkpoint ->
(the ledger arm: preparation) -> worker -> grading -> judge -> seal and store. A unit
forks the arm's checkpoint (holding
its lock for the whole unit) and runs the unit worker, which gives every probe a fresh
process on a fresh copy of the snapshot. A run's units, side by side, are
`continuity.runner.units.build.build_units`, which re-exports `run_unit`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from continuity.arms import Arm, replay_config_for
from continuity.digest import code_digest
from continuity.errors import ContinuityError
from continuity.preparation.receipts import PreparationReceipt
from continuity.probes.judge import Judge, ScriptedJudge
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.providers.endpoint import RealBinding
from continuity.runner.ledger_run import LedgerRun, ledger_run, prepare_for_unit, prepared_key
from continuity.runner.lookup_run import LookupRun
from continuity.runner.units.execution import OFFLINE, Execution
from continuity.runner.units.grading import decide, grade, judge_verdicts, unit_judge
from continuity.runner.units.record import (
    UNIT_CODE,
    RealRun,
    UnitRecord,
    UnitStatus,
    seal,
    unit_key,
)
from continuity.runner.units.selection import limited, probe_slots
from continuity.runner.units.store import (
    UnitFrame,
    failed_result,
    invalid_treatment_result,
    seal_unit,
    store_unit,
)
from continuity.runner.units.worker import real_binding_for, run_worker, worker_request
from continuity.sampling.receipts import ProcessReceipt
from continuity.store import Store
from continuity.traces.schema import Probe, Trace
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
    from continuity.harness.checkpoints import CheckpointResult
    from continuity.harness.keys import ReplayConfig
    from continuity.sampling.worker import ProbeOutcome, ProbeSpec
    from continuity.traces.suites import SuiteItem

__all__ = ["PlannedUnit", "planned_unit", "run_unit"]


def _replay_config(arm: Arm, lookup: LookupRun | None, ledger: LedgerRun | None) -> ReplayConfig:
    """The arm's checkpoint configuration (lookup mode: with the lookup reader models;
    the ledger arm: with its plan's reader and alternate, R and A)."""
    if lookup is not None:
        return replay_config_for(arm, "lookup-allowed-v1", lookup.models())
    if ledger is not None and ledger.models is not None:
        return replay_config_for(arm, models=ledger.models)
    return replay_config_for(arm)


def _key_binding(
    real: RealRun | None, lookup: LookupRun | None, judge: str | None
) -> dict[str, Any] | None:
    """What the unit key binds beyond its code and inputs: the real endpoints, the
    lookup policy, or (offline, with a plan judge) the scripted judge's name."""
    binding = real.binding() if real is not None else lookup.binding() if lookup else None
    if real is None and judge:  # offline: the scripted judge plays the plan's judge
        binding = {**(binding or {}), "judge": ScriptedJudge.name}
    return binding


def _terminal_stored(store: Store, key: str, dump_requests: Path | None) -> UnitRecord | None:
    """The stored unit of `key` when it is terminal (never replayed); None to build it.
    Dumping reader requests always rebuilds."""
    cached = store.load_output(key) if dump_requests is None else None
    if cached is None:
        return None
    stored = msgspec.json.decode(cached, type=UnitRecord)
    return stored if stored.eligible_terminal is not False else None


def _checkpoint(
    store: Store,
    frame: UnitFrame,
    config: ReplayConfig,
    mid_real: RealBinding | None,
    zygotes: ZygotePool | None,
    base_key: str,
) -> CheckpointResult | UnitRecord:
    """Build (or reuse) the arm's checkpoint; in real mode, a failed mid-trace summary
    (or a stop rule refusing admission) gives the unit's incomplete record instead:
    nothing is stored, every eligible probe is unstarted, and the next run retries it."""
    from continuity.harness.checkpoints import build_checkpoint

    try:
        checkpoint = build_checkpoint(
            store,
            frame.trace,
            trace_key=frame.item.key,
            trace_digest=frame.item.digest,
            config=config,
            real=mid_real,
            zygotes=zygotes,
        )
    except ContinuityError as error:
        if mid_real is None:
            raise
        failed = [
            failed_result(p, i, str(error))
            for i, p in enumerate(frame.probes)
            if p.probe_id not in frame.skipped
        ]
        return msgspec.structs.replace(seal_unit(frame, failed), eligible_terminal=False)
    assert checkpoint.key == base_key
    return checkpoint


@dataclasses.dataclass(frozen=True)
class _Treated:
    """A unit ready for its probes: its frame, the checkpoint they fork and, for the
    ledger arm, the preparation's receipt."""

    frame: UnitFrame
    checkpoint: CheckpointResult
    receipt: PreparationReceipt | None  # None: an arm that keeps no ledger


def _prepare(
    store: Store,
    frame: UnitFrame,
    base: CheckpointResult,
    ledger: LedgerRun,
    real: RealBinding | None,
    zygotes: ZygotePool | None,
) -> _Treated | tuple[UnitRecord, UnitStatus]:
    """The ledger arm's prepared checkpoint over `base`: the frame (with its committed
    generation), what the probes fork and the receipt; or, when there is nothing to
    fork, the finished unit: an invalid preparation's (every probe excluded, its upkeep
    kept) or, real mode, an unfinished one (a stage's dispatch was refused by a stop
    rule: nothing stored, the next run retries it, its paid calls from the call cache)."""
    prepared = prepare_for_unit(
        store, base, frame.trace, ledger, repeat=frame.repeat, real=real, zygotes=zygotes
    )
    receipt = prepared.receipt
    assert prepared.key == frame.checkpoint
    if prepared.status == "incomplete":
        failed = [
            failed_result(p, i, "upkeep_dispatch_rejected") for i, p in enumerate(frame.probes)
        ]
        unit = seal_unit(frame, failed, upkeep=receipt)
        return msgspec.structs.replace(unit, eligible_terminal=False), "incomplete"
    if prepared.checkpoint is None:
        invalid = [
            invalid_treatment_result(p, i, receipt.integrity) for i, p in enumerate(frame.probes)
        ]
        return _store(store, seal_unit(frame, invalid, upkeep=receipt)), "built"
    committed = receipt.final.id if receipt.final is not None else None
    return _Treated(dataclasses.replace(frame, committed=committed), prepared.checkpoint, receipt)


def _run_probes(
    store: Store,
    frame: UnitFrame,
    checkpoint: CheckpointResult,
    specs: list[ProbeSpec],
    *,
    timeout: float,
    dump_requests: Path | None,
    real_binding: RealBinding | None,
    lookup: LookupRun | None,
    zygotes: ZygotePool | None,
    models: tuple[str, str] | None = None,
) -> list[ProbeOutcome]:
    """Run the unit's probes in its worker, holding the checkpoint's lock (no other fork
    while the unit runs). `models` (the ledger arm) are the reader and alternate its
    probes bind."""
    from continuity.harness.checkpoints import checkpoint_lock
    from continuity.harness.template import remove_template

    request = worker_request(
        store,
        checkpoint,
        frame.arm.id,
        specs,
        dump_requests=dump_requests,
        real=real_binding,
        lookup=lookup,
        models=models,
    )
    with checkpoint_lock(store, checkpoint.lock_key):
        try:
            return run_worker(request, timeout, zygotes)
        finally:  # a worker killed mid-unit cannot remove its template itself
            remove_template(Path(checkpoint.root))


def _finish(
    store: Store,
    frame: UnitFrame,
    checkpoint: CheckpointResult,
    outcomes: list[ProbeOutcome],
    grader: Judge | None,
    real: RealRun | None,
    upkeep: PreparationReceipt | None = None,
) -> tuple[UnitRecord, UnitStatus]:
    """Grade and judge the outcomes, then seal the unit and store it (``built``), or, in
    real mode with an unfinished probe or judge call, return it ``incomplete``: neither
    stored nor materialised, so the next run retries it."""
    graded = grade(frame, outcomes)
    verdicts = judge_verdicts(grader, graded, real)
    record = msgspec.structs.replace(
        seal_unit(
            frame,
            decide(graded.results, verdicts),
            verdicts,
            list(getattr(grader, "receipts", [])),
            upkeep,
        ),
        mid_trace_calls=list(checkpoint.receipt.mid_trace_calls),
        eligible_terminal=real is None or not graded.incomplete,
        content_digest="",
    )
    if real is not None and graded.incomplete:
        return record, "incomplete"
    # Pids and times: kept beside the unit (its action entry's meta), never in it.
    processes: list[ProcessReceipt] = [o.process for o in outcomes if o.process is not None]
    # Which calls were replayed from the call cache differs between two builds of one key:
    # the probes' are in their ProcessReceipts; the judge's and the mid-trace summary's
    # (None: this build reused the checkpoint, so it made no mid-trace call) beside them.
    return _store(
        store,
        seal(record),
        processes=msgspec.to_builtins(processes),
        judge_replayed=list(getattr(grader, "replayed", [])),
        mid_trace_replayed=checkpoint.replayed_calls if checkpoint.status == "built" else None,
    ), "built"


def _store(store: Store, record: UnitRecord, **meta: Any) -> UnitRecord:
    """`store_unit`, with the digest of the unit code that built it beside the unit (its
    action entry's meta, never its key or bytes): `doit aggregate` refuses a run whose
    units were built by two unit codes (``run_builds_mixed``)."""
    return store_unit(store, record, unit_code=code_digest(UNIT_CODE), **meta)


def _worker_timeout(timeout: float, real: RealRun | None, probes: int) -> float:
    """How long a unit's worker may run: a real one waits on up to four calls a probe,
    each up to its request timeout, and is never cut short before them."""
    if real is None:
        return timeout
    return max(timeout, real.reader.timeout * (4 * probes + 2))


@dataclasses.dataclass(frozen=True)
class PlannedUnit:
    """What a unit's key is made of, worked out before anything runs (`planned_unit`)."""

    config: ReplayConfig
    probes: list[Probe]
    binding: dict[str, Any] | None
    ledger: LedgerRun | None
    real_binding: RealBinding | None
    mid_real: RealBinding | None
    base_key: str  # the checkpoint the unit forks (before the ledger arm's preparation)
    checkpoint: str  # the checkpoint its key binds
    key: str


def planned_unit(
    store: Store,
    trace: Trace,
    item: SuiteItem,
    arm: Arm,
    repeat: int,
    probe_limit: int | None,
    execution: Execution = OFFLINE,
) -> PlannedUnit:
    """A unit's key and what it is made of, computed from the plan alone (no replay, no
    call): what `run_unit` looks up first, and what a cluster's client checks before it
    sends a unit to a worker."""
    from continuity.harness.keys import checkpoint_key

    real, lookup, judge = execution.real, execution.lookup, execution.judge
    # Only the ledger arm keeps a ledger: the controls in the same run buy no upkeep.
    ledger = (execution.ledger or ledger_run()) if arm.ledger else None
    config = _replay_config(arm, lookup, ledger)
    probes = limited(trace, probe_limit)
    binding = _key_binding(real, lookup, judge)
    real_binding = real_binding_for(real, store, repeat)
    mid_real = real_binding if config.mid_trace_compaction else None
    base_key = checkpoint_key(item.key, config, mid_real)
    planned = prepared_key(base_key, ledger, repeat) if ledger else base_key
    ids = [p.probe_id for p in probes]
    key = unit_key(repeat, item.key, arm, planned, ids, binding, PROBE_PROTOCOL)
    return PlannedUnit(config, probes, binding, ledger, real_binding, mid_real, base_key,
                       planned, key)  # fmt: skip


def run_unit(
    store: Store,
    trace: Trace,
    item: SuiteItem,
    arm: Arm,
    *,
    repeat: int = 1,
    probe_limit: int | None = None,
    dump_requests: Path | None = None,
    timeout: float = 3600.0,
    execution: Execution = OFFLINE,
    zygotes: ZygotePool | None = None,
) -> tuple[UnitRecord, UnitStatus]:
    """Build (or reuse) one unit; return it and ``built`` or ``cached``.

    `execution` says how (`continuity.runner.units.execution`: offline by default).
    With `zygotes`, the replay and the unit worker are children forked from this
    thread's zygote (else from a zygote of the unit's own). With a judge (offline:
    `execution.judge`, played by the scripted judge; real: `execution.real.judge`) every
    unresolved answer and next action gets a verdict, deciding the unresolved ones
    (`continuity.runner.units.grading.decide`).

    In lookup mode, slots the policy classes as inventory-infeasible get an
    ``inventory_infeasible`` result with no usage, score or answer; only eligible probes
    run, and a unit with none needs no checkpoint.

    In real mode a unit whose probe or judge call failed (a provider error, or a stop
    rule refusing admission) is ``incomplete``: neither stored nor materialised, so the
    next run retries it (its finished calls from the call cache). A stored unit is
    terminal (`UnitRecord.eligible_terminal`) and never runs again, complete or not.

    In real mode an arm with a mid-trace compaction (d) forks a checkpoint of its own
    per repeat, whose mid-trace summary is a real summarizer call. The ledger arm forks
    the repeat's prepared checkpoint (`ledger`, or the offline default binding), whose
    key its unit key binds and whose receipt its record keeps."""
    real, lookup, judge = execution.real, execution.lookup, execution.judge
    keyed = planned_unit(store, trace, item, arm, repeat, probe_limit, execution)
    config, probes, binding, ledger = keyed.config, keyed.probes, keyed.binding, keyed.ledger
    real_binding, mid_real, base_key = keyed.real_binding, keyed.mid_real, keyed.base_key
    planned_checkpoint, key = keyed.checkpoint, keyed.key
    stored = _terminal_stored(store, key, dump_requests)
    if stored is not None:
        return stored, "cached"
    specs, skipped = probe_slots(trace, arm, probes, lookup)
    frame = UnitFrame(key, item, trace, arm, repeat, planned_checkpoint, probes, skipped, binding)
    if not specs:  # every slot inventory-infeasible: no checkpoint, no worker
        return _store(store, seal_unit(frame, [])), "built"
    checkpoint = _checkpoint(store, frame, config, mid_real, zygotes, base_key)
    if isinstance(checkpoint, UnitRecord):
        return checkpoint, "incomplete"
    treated = _Treated(frame, checkpoint, None)
    if ledger is not None:
        prepared = _prepare(store, frame, checkpoint, ledger, real_binding, zygotes)
        if isinstance(prepared, tuple):
            return prepared
        treated = prepared
    frame, checkpoint, upkeep = treated.frame, treated.checkpoint, treated.receipt
    outcomes = _run_probes(
        store,
        frame,
        checkpoint,
        specs,
        timeout=_worker_timeout(timeout, real, len(specs)),
        dump_requests=dump_requests,
        real_binding=real_binding,
        lookup=lookup,
        zygotes=zygotes,
        models=ledger.models if ledger is not None else None,
    )
    grader = unit_judge(store, real, judge, repeat)
    return _finish(store, frame, checkpoint, outcomes, grader, real, upkeep)
