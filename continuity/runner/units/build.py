"""Units: one record per repeat x trace x arm, holding every probe's answer and score.

A unit forks the arm's checkpoint (holding its lock for the whole unit) and runs the
unit worker, which gives every probe a fresh process on a fresh copy of the snapshot.
Each probe's sample is classified from its evidence; only ``valid`` samples are scored
and analysed for availability. Excluded samples stay in the unit with their class and
reasons: never scored, never dropped.

This module owns the run's orchestrator, a chain of named steps: `build_units`
(selection -> ledger -> units by trace -> materialise -> coverage). One unit is
`run_unit` in `continuity.runner.units.run` (key -> reuse -> probe slots -> checkpoint
-> worker -> grading -> judge -> seal and store). The steps live beside them: the
record types and key in `continuity.runner.units.record`, selection in
`continuity.runner.units.selection`, the worker call in `continuity.runner.units.worker`,
sealing and storing in `continuity.runner.units.store`. Their public names are
re-exported here, where the rest of the package imports them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from continuity.errors import RunIncomplete
from continuity.outputs import resolve_out_path
from continuity.progress import Tick
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.runner.cluster import Cluster, run_on_cluster
from continuity.runner.lookup_run import LookupRun, check_coverage, check_lookup_slots
from continuity.runner.parallel import checkpoint_group, run_grouped
from continuity.runner.samples import DEFAULT_JOBS
from continuity.runner.units.execution import OFFLINE, Execution
from continuity.runner.units.grading import decide, judged, score_result
from continuity.runner.units.record import (
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
from continuity.runner.units.run import run_unit
from continuity.runner.units.selection import UnitPlan, limited, plan_units
from continuity.runner.units.store import (
    context_refs,
    materialise,
    refuse_second_observations,
    replayed_calls,
    store_unit,
)
from continuity.runner.units.worker import run_worker
from continuity.store import Store
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
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
    "decide",
    "judged",
    "replayed_calls",
    "run_unit",
    "run_worker",
    "score_result",
    "seal",
    "store_unit",
    "unit_filename",
    "unit_key",
]


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
    from continuity.providers.shared_ledger import create_ledger

    planned = sum(len(limited(plan.trace, probe_limit)) for plan in plans)
    return create_ledger(  # a cluster run's is in its shared store
        real.ledger,
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
    store.record_plan(
        f"units --suite {suite}", actions=[r.key for r in records], objects=context_refs(records)
    )
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
    execution: Execution,
    jobs: int,
    progress: Tick | None,
    zygotes: ZygotePool | None,
    cluster: Cluster | None = None,
) -> list[tuple[UnitRecord, UnitStatus]]:
    """Every planned unit, groups side by side in `jobs` runner threads (offline a group
    is a trace; real, the checkpoint a unit forks: `checkpoint_group`), each thread with
    its own zygote: every unit's worker and checkpoint replay is a fresh child of it.
    The zygotes are `zygotes` (a caller's, started once for several stages), else this
    call's, started first, so their imports overlap this process's own."""

    def group(plan: UnitPlan) -> str:
        trace_id = plan.item.trace_id
        if execution.real is None:
            return trace_id
        return checkpoint_group(trace_id, plan.arm, plan.repeat)

    if cluster is not None:  # each group a Dask task (continuity.runner.cluster)
        return run_on_cluster(
            store,
            plans,
            group_of=group,
            probe_limit=probe_limit,
            execution=execution,
            cluster=cluster,
            progress=progress,
        )
    threads = min(max(1, jobs), len({group(plan) for plan in plans}))
    with contextlib.ExitStack() as stack:
        pool = zygotes or stack.enter_context(ZygotePool(ZYGOTE_PRELOAD, start=threads))
        return run_grouped(
            plans,
            group_of=group,
            work=lambda plan: run_unit(
                store,
                plan.trace,
                plan.item,
                plan.arm,
                repeat=plan.repeat,
                probe_limit=probe_limit,
                execution=execution,
                zygotes=pool,
            ),
            describe=lambda plan: f"r{plan.repeat} {plan.item.trace_id} {plan.arm.id}",
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
    execution: Execution = OFFLINE,
    max_observed_input_tokens: int | None = None,
    traces_root: Path | None = None,
    items: Sequence[SuiteItem] | None = None,
    zygotes: ZygotePool | None = None,
    cluster: Cluster | None = None,
) -> tuple[list[UnitRecord], Path, int]:
    """Run every unit of the selection; materialise them under ``<run>/units/``.
    `items` (an external holdout's selected traces) stands for the suite's traces.
    `zygotes`: a pool the caller keeps across several stages (else one of this call's).
    `cluster`: run the units as Dask tasks there (`continuity.runner.cluster`; None:
    in this process's threads).

    `traces` and `only_repeats` select part of the plan (they never change a unit's
    key). `execution` says how the units run (`continuity.runner.units.execution`). In
    real mode, `execution.real.ledger` names this invocation's ledger, created here with
    the selection's live-turn count and the observed-input cap. Offline,
    `execution.judge` (the plan's judge model) has the scripted judge grade every valid
    answer.

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
        probe_mode=execution.probe_mode,
        items=items,
    )
    lookup = execution.lookup
    if lookup is not None:
        check_lookup_slots(lookup, plans, probe_limit, run)
    admission = _open_ledger(execution.real, plans, probe_limit, max_observed_input_tokens)
    try:
        done = _run_plans(
            store,
            plans,
            probe_limit=probe_limit,
            execution=execution,
            jobs=jobs,
            progress=progress,
            zygotes=zygotes,
            cluster=cluster,
        )
        state = admission.state() if admission is not None else None
    finally:
        if admission is not None:
            admission.close()
    finished = [record for record, status in done if status != "incomplete"]
    missing = [record for record, status in done if status == "incomplete"]
    built = sum(1 for _, status in done if status == "built")
    folder = run / "units"
    records = _keep(store, suite, folder, finished, lookup)
    if missing:
        assert state is not None
        raise _incomplete(missing, len(done), len(records), state, run)
    return records, folder, built
