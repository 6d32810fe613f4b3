"""An outside agent's units against a real reader: ``doit units --agent agent.toml --real``.

The replay is scripted as offline (the proxy plays the trace's assistant turns); only
the probe is forwarded, to the plan's reader (the switch arm's, after the switch, to the
model ``--switch-model`` names; the store arm's reader may look records up first),
through the guarded real mode (`continuity.runner.real.open_real_run`: every guard
first, the confirmed plan digest, the credentials file, the cost cap) and the call cache
(`continuity.agents.readers.RealReader`). The invocation's ledger plans one live turn
per sample and admits it on the sample's first forwarded call; the observed-input cap
stops admission as for the reference arms. A unit's key binds the reader's endpoint
(`RealRun.binding`; the switch arm's also the model it switches to), so real and offline
units never mix, and a rerun reuses every finished unit and every call already made.

A failed reader call (a provider error, a stop rule, the cost cap) stops the run after
the finished units are written: ``run_stopped`` when a stop rule fired, else
``run_incomplete``; the failed sample's unit is never sealed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from continuity.agents.manifest import Manifest
from continuity.errors import ContinuityError, RunIncomplete
from continuity.plan.plan import Plan
from continuity.progress import Tick
from continuity.providers.costcap import CapTotals
from continuity.providers.shared_ledger import create_ledger
from continuity.runner.agent_units import (
    AgentBuild,
    AgentUnitPlan,
    build_agent_units,
    real_reader,
)
from continuity.runner.real import close_real_run, open_real_run, write_plan
from continuity.runner.real_request import RealRequest
from continuity.store import Store
from continuity.traces.schema import Trace

__all__ = ["run_real_agent"]


def run_real_agent(
    plan: Plan,
    store: Store,
    manifest: Manifest,
    traces: Sequence[tuple[str, Trace]],
    request: RealRequest,
    *,
    progress: Tick | None = None,
) -> tuple[AgentBuild, CapTotals | None]:
    """Guard, then run the confirmed agent plan's selected units (module doc).

    Raises:
        RealModeError: a guard refused (see `continuity.plan.guards`).
        RunIncomplete: ``run_stopped`` or ``run_incomplete`` (module doc).
    """
    out, real, account = open_real_run(plan, store, request)
    write_plan(plan, out)
    unit_plan = AgentUnitPlan.of(plan, manifest, request.only_repeats, real.binding())
    samples = sum(len(t.probes[: plan.probe_limit]) for _, t in traces)
    samples *= len(unit_plan.arms) * len(unit_plan.repeats)
    ledger = create_ledger(
        real.ledger,
        planned_live_turns=samples,
        max_observed_input_tokens=request.max_observed_input_tokens,
    )
    try:
        protected = [Path(request.credentials)] if request.credentials else []
        if request.cluster is not None:  # each trace's units a Dask task
            from continuity.runner.agent_cluster import build_agent_units_on_cluster

            cluster = request.cluster
            build = build_agent_units_on_cluster(store, unit_plan, traces, out, cluster=cluster,
                                                 real=real, progress=progress,
                                                 protected=protected)  # fmt: skip
        else:
            build = build_agent_units(
                store,
                unit_plan,
                traces,
                out,
                readers=lambda repeat: real_reader(real, store, repeat),
                progress=progress,
                protected=protected,
            )
        state = ledger.state()
    finally:
        ledger.close()
        spend = close_real_run(store, plan, out, account)
    if build.error is not None:
        raise _incomplete(build, build.error, state, out)
    return build, spend


def _incomplete(
    build: AgentBuild, error: ContinuityError, state: dict[str, Any], out: Path
) -> RunIncomplete:
    """The error of a run whose reader call failed (`error`): ``run_stopped`` when a
    stop rule fired, else ``run_incomplete`` naming that error."""
    stopped = state.get("stopped")
    return RunIncomplete(
        f"{build.planned - len(build.records)} of {build.planned} units did not finish "
        f"({len(build.records)} kept in {build.folder}); "
        + (
            f"admission stopped: {stopped}; "
            if stopped
            else f"first error: {error.code}: {error.message}; "
        )
        + f"{state['admitted']} live turns admitted of {state['planned']} planned. Run the "
        "same command again to resume: finished units and calls are reused.",
        code="run_stopped" if stopped else "run_incomplete",
        location=str(out),
    )
