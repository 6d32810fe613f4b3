"""The offline contract's outside-agent pass (CAP/0 v0).

The toy reference adapter (``examples/agents/toy``, beside the package in a checkout)
is planned and run as any user's agent is (`continuity.runner.agent_units`): over the
four original traces, arms ``native``, ``restart`` and ``new_session``, one probe each,
offline (a reader that declines, no credentials), into the run
``<out>/runs/offline-contract-agent``, then aggregated. Every sample must be
``valid``: its replay clean, its boundary ``verified`` from observations and its copy
proven (every sample of a trace has the trace's first replay signature); and the
report must open with the black-box banner. Anything else is
``agent_contract_failed``, naming the samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from msgspec import UNSET

from continuity.agents.identity import ARMS, SANDBOXED, UNSANDBOXED, identity
from continuity.agents.manifest import load_manifest
from continuity.agents.sandbox import sandbox_problem
from continuity.errors import ContinuityError
from continuity.plan.plan import build_plan
from continuity.plan.pricing import default_catalog_path
from continuity.progress import progress
from continuity.report.freshness import aggregate_stamped
from continuity.runner.agent_units import AgentUnitPlan, build_agent_units
from continuity.runner.manifest import utc_stamp, write_run_manifest
from continuity.store import Store
from continuity.traces.schema import Trace

__all__ = ["TOY_MANIFEST", "check_outside_agent"]

TOY_MANIFEST = Path(__file__).resolve().parents[1] / "examples" / "agents" / "toy" / "agent.toml"


# What the report's banner must say a black box cannot show (and that it is one).
_BANNER_SAYS = (
    "External agent.",
    "memory the agent never sent to a model",
    "the contents of provider-side compaction",
)


def check_outside_agent(store: Store, traces: Sequence[tuple[str, Trace]], run_dir: Path) -> str:
    """Run the pass (module doc) over `traces` (their keys and traces); the contract's
    sentence for it.

    Raises:
        ContinuityError: ``agent_contract_failed``.
    """
    if not TOY_MANIFEST.is_file():
        return "skipped: no examples/agents/toy beside the package (not a checkout)"
    started = utc_stamp()
    manifest = load_manifest(TOY_MANIFEST)
    # Sandboxed where bubblewrap works; elsewhere (a fresh machine without it) the pass
    # says so in its sentence and its report's banner says UNSANDBOXED: never silent.
    unsandboxed = sandbox_problem()
    agent = identity(manifest, sandboxed=unsandboxed is None)
    plan = build_plan(arms=",".join(ARMS), probe_limit=1, agent=agent)
    unit_plan = AgentUnitPlan.of(plan, manifest)
    # Its own progress line: a dozen samples, each a re-replay through the adapter.
    with progress("outside agent original") as tick:
        records = build_agent_units(store, unit_plan, traces, run_dir, progress=tick).records
    write_run_manifest(run_dir, plan, started=started)
    results, paths, _ = aggregate_stamped(store, run_dir, default_catalog_path())
    samples = [(r, p) for r in records for p in r.probes]
    bad = [
        f"{r.trace_id}/{r.arm}/{p.probe_id} {p.status}" for r, p in samples if p.status != "valid"
    ]
    report = paths["report"].read_text(encoding="utf-8")
    isolation = UNSANDBOXED.split(":")[0] if unsandboxed else SANDBOXED.split(":")[0]
    said = all(s in report for s in (*_BANNER_SAYS, isolation))
    if bad or not samples or results.agent is UNSET or not said:
        raise ContinuityError(
            f"{len(bad)} of {len(samples)} outside-agent samples not valid: {', '.join(bad[:6])}",
            code="agent_contract_failed",
            location=str(paths["report"]),
        )
    signatures = len({p.agent.signature for _, p in samples if p.agent is not UNSET})
    return (
        f"the toy outside agent over CAP/0: {len(samples)} samples ({len(traces)} originals x "
        f"{', '.join(ARMS)}), each a fresh re-replay through the model proxy and the fixture "
        f"MCP server: every boundary verified by traffic, every copy proven ({signatures} "
        f"replay signatures, one per trace); "
        + (
            "each adapter sandboxed (bubblewrap)"
            if unsandboxed is None
            else f"UNSANDBOXED, since this machine cannot sandbox ({unsandboxed})"
        )
        + f"; its report {paths['report']} opens with the black-box banner"
    )
