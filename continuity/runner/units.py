"""Units: one record per repeat x trace x arm, holding every probe's answer and score.

A unit forks the arm's checkpoint (holding its lock for the whole unit) and runs the
unit worker, which gives every probe a fresh process on a fresh copy of the snapshot.
Each probe's sample is classified from its evidence; only ``valid`` samples are scored
and analysed for availability. Excluded samples stay in the unit with their class and
reasons: never scored, never dropped.

This module owns the two orchestrators, each a chain of named steps: `run_unit` (key
-> reuse -> probe slots -> checkpoint -> worker -> grading -> judge -> seal and store)
and `build_units` (selection -> ledger -> units by trace -> materialise -> coverage).
The steps live beside it: the record types and key in `continuity.runner.unit_record`,
selection in `continuity.runner.unit_selection`, the worker call in
`continuity.runner.unit_worker`, sealing and storing in `continuity.runner.unit_store`.
Their public names are re-exported here, where the rest of the package imports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from continuity.arms import Arm, replay_config_for
from continuity.errors import ContinuityError, RunIncomplete
from continuity.outputs import resolve_out_path
from continuity.probe.receipts import ProcessReceipt
from continuity.probes.judge import Judge, ScriptedJudge
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.progress import Tick
from continuity.providers.endpoint import RealBinding
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.runner.lookup_run import LookupRun, check_coverage, check_lookup_slots
from continuity.runner.parallel import checkpoint_group, run_grouped
from continuity.runner.samples import DEFAULT_JOBS
from continuity.runner.unit_grading import grade, judge_verdicts, score_result, unit_judge
from continuity.runner.unit_record import (
    UNIT_CODE,
    UNIT_SALT,
    UNIT_SCHEMA,
    ProbeResult,
    RealRun,
    UnitRecord,
    UnitStatus,
    content_digest,
    seal,
    unit_filename,
    unit_key,
)
from continuity.runner.unit_selection import UnitPlan, limited, plan_units, probe_slots
from continuity.runner.unit_store import (
    UnitFrame,
    failed_result,
    materialise,
    refuse_second_observations,
    replayed_calls,
    seal_unit,
    store_unit,
)
from continuity.runner.unit_worker import real_binding_for, run_worker, worker_request
from continuity.store import Store
from continuity.traces.schema import Trace
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
    from continuity.harness.checkpoints import CheckpointResult
    from continuity.harness.keys import ReplayConfig
    from continuity.probe.worker import ProbeOutcome, ProbeSpec
    from continuity.providers.cache import Ledger
    from continuity.traces.suites import SuiteItem

__all__ = [
    "UNIT_CODE",
    "UNIT_SALT",
    "UNIT_SCHEMA",
    "LookupRun",
    "ProbeResult",
    "RealRun",
    "UnitRecord",
    "build_units",
    "content_digest",
    "replayed_calls",
    "run_unit",
    "run_worker",
    "score_result",
    "seal",
    "store_unit",
    "unit_filename",
    "unit_key",
]


# -- run_unit: one unit, in named steps ------------------------------------------------


def _replay_config(arm: Arm, lookup: LookupRun | None) -> ReplayConfig:
    """The arm's checkpoint configuration (lookup mode: with the lookup reader models)."""
    if lookup is not None:
        return replay_config_for(arm, "lookup-allowed-v1", lookup.models())
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
    assert checkpoint.key == frame.checkpoint
    return checkpoint


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
) -> list[ProbeOutcome]:
    """Run the unit's probes in its worker, holding the checkpoint's lock (no other fork
    while the unit runs)."""
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
    )
    with checkpoint_lock(store, checkpoint.key):
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
) -> tuple[UnitRecord, UnitStatus]:
    """Grade and judge the outcomes, then seal the unit and store it (``built``), or, in
    real mode with an unfinished probe or judge call, return it ``incomplete``: neither
    stored nor materialised, so the next run retries it."""
    graded = grade(frame, outcomes)
    verdicts = judge_verdicts(grader, graded, real)
    record = msgspec.structs.replace(
        seal_unit(frame, graded.results, verdicts, list(getattr(grader, "receipts", []))),
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
    return store_unit(
        store,
        seal(record),
        processes=msgspec.to_builtins(processes),
        judge_replayed=list(getattr(grader, "replayed", [])),
        mid_trace_replayed=checkpoint.replayed_calls if checkpoint.status == "built" else None,
    ), "built"


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
    real: RealRun | None = None,
    lookup: LookupRun | None = None,
    judge: str | None = None,
    zygotes: ZygotePool | None = None,
) -> tuple[UnitRecord, UnitStatus]:
    """Build (or reuse) one unit; return it and ``built`` or ``cached``.

    With `zygotes`, the checkpoint replay and the unit worker are children forked from
    this thread's zygote; without, from a zygote of the unit's own (and the replay runs
    in this process).

    With a judge (offline: `judge`, the plan's judge model, played by the scripted judge;
    real: `real.judge`) every valid answer gets a verdict; without one, none does.

    In lookup mode, slots the policy classes as inventory-infeasible get an
    ``inventory_infeasible`` result with no usage, score or answer; only eligible probes
    run, and a unit with none needs no checkpoint.

    In real mode a unit whose probe or judge call failed (a provider error, or a stop
    rule refusing admission) is returned as ``incomplete``: it is neither stored nor
    materialised, so the next run retries it, and its finished calls come from the call
    cache. A stored unit is terminal (`UnitRecord.eligible_terminal`) and is never run
    again, complete or not.

    In real mode an arm with a mid-trace compaction (d) forks a checkpoint of its own
    per repeat, whose mid-trace summary is a real summarizer call."""
    from continuity.harness.keys import checkpoint_key

    config = _replay_config(arm, lookup)
    probes = limited(trace, probe_limit)
    binding = _key_binding(real, lookup, judge)
    real_binding = real_binding_for(real, store, repeat)
    mid_real = real_binding if config.mid_trace_compaction else None
    planned_checkpoint = checkpoint_key(item.key, config, mid_real)
    ids = [p.probe_id for p in probes]
    key = unit_key(repeat, item.key, arm, planned_checkpoint, ids, binding, PROBE_PROTOCOL)
    stored = _terminal_stored(store, key, dump_requests)
    if stored is not None:
        return stored, "cached"
    specs, skipped = probe_slots(trace, arm, probes, lookup)
    frame = UnitFrame(key, item, trace, arm, repeat, planned_checkpoint, probes, skipped, binding)
    if not specs:  # every slot inventory-infeasible: no checkpoint, no worker
        return store_unit(store, seal_unit(frame, [])), "built"
    checkpoint = _checkpoint(store, frame, config, mid_real, zygotes)
    if isinstance(checkpoint, UnitRecord):
        return checkpoint, "incomplete"
    outcomes = _run_probes(
        store,
        frame,
        checkpoint,
        specs,
        timeout=timeout,
        dump_requests=dump_requests,
        real_binding=real_binding,
        lookup=lookup,
        zygotes=zygotes,
    )
    return _finish(store, frame, checkpoint, outcomes, unit_judge(store, real, judge, repeat), real)


# -- build_units: a run's units, in named steps ------------------------------------------


def _open_ledger(
    real: RealRun | None,
    plans: Sequence[UnitPlan],
    probe_limit: int | None,
    max_observed_input_tokens: int | None,
) -> Ledger | None:
    """Real mode: this invocation's ledger, created with the selection's live-turn count
    and the observed-input cap; offline, none."""
    if real is None:
        return None
    from continuity.providers.cache import Ledger

    planned = sum(len(limited(trace, probe_limit)) for _, trace, _, _ in plans)
    return Ledger.create(
        Path(real.ledger),
        planned_live_turns=planned,
        max_observed_input_tokens=max_observed_input_tokens,
    )


def _keep(
    store: Store, suite: str, folder: Path, records: list[UnitRecord], lookup: LookupRun | None
) -> list[UnitRecord]:
    """Materialise the finished units under `folder` (lookup mode: refusing a second
    observation of a slot first, checking coverage after) and record the run's plan."""
    if lookup is not None:
        refuse_second_observations(records, folder)
    records = [materialise(store, folder, record) for record in records]
    store.record_plan(f"units --suite {suite}", actions=[r.key for r in records])
    if lookup is not None:
        check_coverage(records, folder)  # lookup_partial_coverage, after materialising
    return records


def _incomplete(
    missing: list[UnitRecord], planned: int, kept: int, state: dict[str, Any], run: Path
) -> RunIncomplete:
    """The error of a real run with unfinished units: ``run_stopped`` when a stop rule
    fired, else ``run_incomplete`` naming the first failure."""
    first = next(
        (p.reasons[0] for r in missing for p in r.probes if p.status == "failed" and p.reasons),
        "a judge call failed",
    )
    stopped = state.get("stopped")
    return RunIncomplete(
        f"{len(missing)} of {planned} units did not finish "
        f"({kept} kept in {run / 'units'}); "
        + (f"admission stopped: {stopped}; " if stopped else f"first error: {first}; ")
        + f"{state['admitted']} live turns admitted of {state['planned']} planned, "
        f"{state['observed_input']:,} input tokens observed over {state['calls']} calls. "
        "Run the same command again to resume: finished units and calls are reused.",
        code="run_stopped" if stopped else "run_incomplete",
        location=str(run),
    )


def _run_plans(
    store: Store,
    plans: Sequence[UnitPlan],
    *,
    probe_limit: int | None,
    real: RealRun | None,
    lookup: LookupRun | None,
    judge: str | None,
    jobs: int,
    progress: Tick | None,
) -> list[tuple[UnitRecord, UnitStatus]]:
    """Every planned unit, groups side by side in `jobs` runner threads (offline a group
    is a trace; real, the checkpoint a unit forks: `checkpoint_group`), each thread with
    its own zygote: every unit's worker and checkpoint replay is a fresh child of it.
    The zygotes start first, so their imports overlap this process's own."""

    def group(plan: UnitPlan) -> str:
        trace_id = plan[0].trace_id
        return trace_id if real is None else checkpoint_group(trace_id, plan[2], plan[3])

    threads = min(max(1, jobs), len({group(plan) for plan in plans}))
    with ZygotePool(ZYGOTE_PRELOAD, start=threads) as zygotes:
        return run_grouped(
            plans,
            group_of=group,
            work=lambda plan: run_unit(
                store,
                plan[1],
                plan[0],
                plan[2],
                repeat=plan[3],
                probe_limit=probe_limit,
                real=real,
                lookup=lookup,
                judge=judge,
                zygotes=zygotes,
            ),
            describe=lambda plan: f"r{plan[3]} {plan[0].trace_id} {plan[2].id}",
            jobs=jobs,
            progress=progress,
        )


def build_units(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    arms: str | None = None,
    repeats: int = 1,
    traces: str | None = None,
    probe_limit: int | None = None,
    run_dir: Path | None = None,
    progress: Tick | None = None,
    jobs: int = DEFAULT_JOBS,
    only_repeats: Sequence[int] | None = None,
    real: RealRun | None = None,
    max_observed_input_tokens: int | None = None,
    traces_root: Path | None = None,
    lookup: LookupRun | None = None,
    judge: str | None = None,
) -> tuple[list[UnitRecord], Path, int]:
    """Run every unit of the selection; materialise them under ``<run>/units/``.

    `traces` and `only_repeats` select part of the plan (they never change a unit's
    key). In real mode, `real.ledger` names this invocation's ledger, created here with
    the selection's live-turn count and the observed-input cap. Offline, `judge` (the
    plan's judge model) has the scripted judge grade every valid answer.

    Returns the records, the units directory and how many units were built.
    Raises:
        RunIncomplete: real mode only, after the finished units are written:
            ``run_stopped`` when a stop rule fired, else ``run_incomplete``.
    """
    run = run_dir or resolve_out_path() / "runs" / "offline"
    plans = plan_units(
        store,
        suite,
        seeds,
        out_dir=traces_root or run.parent.parent,
        arms=arms,
        repeats=repeats,
        traces=traces,
        only_repeats=only_repeats,
        lookup=lookup,
    )
    if lookup is not None:
        check_lookup_slots(lookup, plans, probe_limit, run)
    ledger = _open_ledger(real, plans, probe_limit, max_observed_input_tokens)
    try:
        done = _run_plans(
            store,
            plans,
            probe_limit=probe_limit,
            real=real,
            lookup=lookup,
            judge=judge,
            jobs=jobs,
            progress=progress,
        )
        state = ledger.state() if ledger is not None else None
    finally:
        if ledger is not None:
            ledger.close()
    finished = [record for record, status in done if status != "incomplete"]
    missing = [record for record, status in done if status == "incomplete"]
    built = sum(1 for _, status in done if status == "built")
    folder = run / "units"
    records = _keep(store, suite, folder, finished, lookup)
    if missing:
        assert state is not None
        raise _incomplete(missing, len(done), len(records), state, run)
    return records, folder, built
