"""``doit units --agent agent.toml``: an outside agent's units (CAP/0), offline
(`continuity.runner.agent_units`) or with ``--real`` (`continuity.runner.agent_real`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from continuity.commands.selection import Selection

if TYPE_CHECKING:
    from continuity.agents.manifest import Manifest
    from continuity.commands.units_request import UnitsRequest
    from continuity.plan.plan import Plan
    from continuity.runner.units.record import UnitRecord
    from continuity.traces.schema import Trace

__all__ = ["agent_units"]


def agent_units(
    request: UnitsRequest,
    repeats: list[int] | None,
    summary: Callable[[Sequence[UnitRecord], Path | str, int], str],
) -> str:
    """``--agent agent.toml``: an outside agent's units (CAP/0), offline into
    ``<out>/runs/<run>/units/`` (default run ``agent-<name>``), real (``--real``) into
    ``--out``; `doit aggregate` reports them."""
    from continuity.commands.units_request import cluster_of
    from continuity.plan.guards import refuse_under_ci
    from continuity.progress import progress
    from continuity.runner.agent_units import AgentUnitPlan, build_agent_units
    from continuity.runner.manifest import utc_stamp, write_run_manifest

    started = utc_stamp()
    if request.real:
        refuse_under_ci()  # before the options are even read
    plan, manifest, traces, chosen = _agent_selection(request)
    if request.real:
        return _real_agent_units(request, chosen, plan, manifest, traces, summary)
    run = request.run if request.run != "offline" else f"agent-{manifest.name}"
    run_dir = chosen.out / "runs" / run
    unit_plan = AgentUnitPlan.of(plan, manifest, repeats)
    cluster = cluster_of(request)
    with progress(f"agent units {manifest.name}") as tick:
        if cluster is not None:  # each trace's units a Dask task
            from continuity.runner.agent_cluster import build_agent_units_on_cluster

            build = build_agent_units_on_cluster(
                chosen.store, unit_plan, traces, run_dir, cluster=cluster, progress=tick
            )
        else:
            build = build_agent_units(chosen.store, unit_plan, traces, run_dir, progress=tick)
    write_run_manifest(run_dir, plan, started=started)
    return (
        summary(build.records, build.folder, build.built)
        + f"; aggregate with doit aggregate --run {run}"
    )


def _agent_selection(
    request: UnitsRequest,
) -> tuple[Plan, Manifest, list[tuple[str, Trace]], Selection]:
    """The agent plan (`plan_from_request`), its manifest, the selected traces and the
    store and output directory they were read from (chosen after the plan is accepted)."""
    from continuity.errors import UsageError
    from continuity.plan.agent_plan import agent_for_request
    from continuity.plan.from_request import plan_from_request
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    plan = plan_from_request(request, trace=request.trace)
    loaded = agent_for_request(request)
    assert loaded is not None
    selection = Selection(request)  # after the plan: a refused plan creates no directory
    store = selection.store
    suite = build_suite(store, plan.suite, plan.seeds, out_dir=selection.out / "traces")
    wanted = set(request.trace.split(",")) - {""}
    items = [i for i in suite.items if not wanted or i.trace_id in wanted]
    if not items:
        raise UsageError(
            "no trace of the suite is selected", code="trace_unknown", location="--trace"
        )
    traces = [(i.key, load_trace(store.get_blob(i.digest), source=i.trace_id)) for i in items]
    return plan, loaded[0], traces, selection


def _real_agent_units(
    request: UnitsRequest,
    chosen: Selection,
    plan: Plan,
    manifest: Manifest,
    traces: list[tuple[str, Trace]],
    summary: Callable[[Sequence[UnitRecord], Path | str, int], str],
) -> str:
    from continuity.commands.units_request import real_request
    from continuity.progress import progress
    from continuity.runner.agent_real import run_real_agent
    from continuity.runner.units.store import calls_made

    store = chosen.store
    with progress(f"agent units {manifest.name} (real: {plan.endpoint.kind})") as tick:
        build, spend = run_real_agent(
            plan,
            store,
            manifest,
            traces,
            real_request(request),
            progress=tick,
        )
    calls = [c for r in build.records for p in r.probes if p.agent for c in p.agent.calls]
    fresh = calls_made(store, build.records, (c.key for c in calls))
    return (
        summary(build.records, build.folder, build.built)
        + f"; {len(calls)} reader calls ({fresh} made, {len(calls) - fresh} from the call "
        + f"cache); aggregate with doit aggregate --run-dir {build.folder.parent}"
        + (f"\n{spend.line()}" if spend is not None else "")
    )
