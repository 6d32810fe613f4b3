"""How a dry run and an estimate read in the terminal (`continuity.plan.estimate`
computes them): the workload lines, the list prices and their source, the window and
output cap of a real plan, a lookup plan's slots, and the confirmation digest last."""

from __future__ import annotations

from collections.abc import Sequence

from continuity.plan.estimate import DryRun, PriceView, Profile, output_cap
from continuity.plan.plan import Plan
from continuity.plan.pricing import Catalog, describe_source, model_price
from continuity.plan.workload import LookupSizing

__all__ = ["format_dry_run", "format_estimate"]


def _usd(view: PriceView) -> str:
    if view.usd is not None:
        return f"{view.usd:,.2f} USD"
    return (
        f"unknown ({view.unpriced_calls} calls unpriced; known subtotal "
        f"{view.known_subtotal:,.2f} USD)"
    )


def _workload_lines(result: DryRun) -> list[str]:
    return [
        f"  units                {result.units:>12,}",
        f"  live turns           {result.live_turns:>12,}",
        f"  answer calls         {result.answer_calls:>12,}",
        f"  compaction calls     {result.compaction_calls:>12,}",
        f"  judge calls          {result.judge_calls:>12,}",
        *_ledger_lines(result),
        f"  planned input tokens {result.planned_input_tokens:>12,}",
        f"  calls above a tier   {result.tiered_calls:>12,}",
        f"  calls over a limit   {result.over_limit_calls:>12,}"
        + (
            "  (input + output cap above the model's context window, or the cap above its "
            "output limit: blockers)"
            if result.over_limit_calls
            else ""
        ),
    ]


def _ledger_lines(result: DryRun) -> list[str]:
    """The ledger arm's extractions and reservations (none without the arm)."""
    ledger = result.plan.ledger
    if ledger is None:
        return []
    reserved = " + ".join(f"{r.input_tokens // 1000}k {r.kind}" for r in ledger.reservations)
    return [
        f"  extraction calls     {result.extraction_calls:>12,}  (ledger arm: 3 per trace "
        f"and repeat on {ledger.extraction_model}; each reserves {reserved} input and "
        f"{ledger.reservations[0].output_tokens:,} output tokens"
        + ("; strict request cap" if ledger.require_request_cap else "")
        + ")",
        f"  completions          {result.completions:>12,}  (one per answer turn, summary, "
        "extraction and verdict)",
        "  preparations answer  " + " -> ".join(ledger.sequence),
    ]


def _lookup_lines(result: DryRun, sizing: LookupSizing) -> list[str]:
    plan = result.plan
    infeasible = {
        k: v for k, v in sizing.slots.items() if k not in ("feasible", "unannotated", "unknown")
    }

    def row(label: str, value: int, why: str = "") -> str:
        return f"  {label:<24}{value:>10,}" + (f"  ({why})" if why else "")

    return [
        f"dry run: {plan.mode} plan, suite {plan.suite}, arms {','.join(plan.arms)}, "
        f"repeats {plan.repeats}, probe limit {plan.probe_limit or 'none'}, "
        f"probe mode {plan.probe_mode}",
        f"  reader binding {sizing.binding}: {sizing.reader} (scripted; never called)",
        "lookup workload (no network call, no credential read):",
        row("units", result.units),
        row("planned slots", sum(sizing.slots.values())),
        row(
            "  runnable",
            sizing.runnable,
            f"feasible {sizing.slots.get('feasible', 0)}, "
            f"no annotated source {sizing.slots.get('unannotated', 0)}",
        ),
        row(
            "  inventory-infeasible",
            sum(infeasible.values()),
            ", ".join(f"{k} {v}" for k, v in infeasible.items()),
        ),
        row("  unknown feasibility", sizing.slots.get("unknown", 0), "any blocks the run"),
        row(
            "reader rounds, ceiling",
            result.answer_calls,
            f"{sizing.max_rounds} per slot: call budget {sizing.call_budget} + 2",
        ),
        f"  metered budget per slot: {sizing.call_budget} calls, {sizing.byte_budget:,} bytes",
        "  deadlines per slot: 600 s probe, 60 s cleanup, 690 s turn safety, 720 s watchdog",
        "list price: none; lookup-allowed-v1 is offline preparation: no model is called and "
        "nothing is billed, so there is nothing to confirm",
        f"plan digest: {result.digest}",
    ]


def _source_lines(result: DryRun, catalog: Catalog | None) -> list[str]:
    if result.prices is None:
        return []
    bound = "bound into the digest" if result.plan.pricing else "offline: not bound"
    return [f"  {describe_source(result.prices, catalog)}; {bound}"]


def _window_lines(result: DryRun, catalog: Catalog | None) -> list[str]:
    """A real plan's output cap and the reader's context window, and where it comes from."""
    plan = result.plan
    if plan.mode != "real":
        return []
    price = model_price(catalog, plan.reader) if catalog is not None else None
    sources = [
        f"{plan.context_window:,} (--context-window)" if plan.context_window else "",
        f"{price.context_window:,} (price data)" if price and price.context_window else "",
    ]
    known = "; ".join(s for s in sources if s) or "unknown"
    return [
        f"  output cap {output_cap(plan):,} tokens a call; context window {known}; "
        "doit units --real also asks the server for its window before any request"
    ]


def _agent_lines(plan: Plan) -> list[str]:
    """An outside agent's plan: who it is, and what its estimate assumes."""
    a = plan.agent
    if a is None:
        return []
    return [
        f"  agent {a.adapter} {a.version} (manifest {a.manifest[:16]}, files "
        f"{a.sources[:16]}, env {a.env[:16]}): replay scripted, only the probe is sent; "
        "each call estimated as the whole conversation, nothing cached",
        *(
            [f"  switch arm: the agent switches to {plan.switch_model}"]
            if plan.switch_model
            else []
        ),
    ]


def format_dry_run(result: DryRun, catalog: Catalog | None = None) -> str:
    """The dry run as the user reads it; the last line is the confirmation digest.
    `catalog` (the one priced with) adds its date to the price-source line."""
    plan = result.plan
    if result.lookup is not None:
        return "\n".join(_lookup_lines(result, result.lookup))
    lines = [
        f"dry run: {plan.mode} plan, suite {plan.suite}, arms {','.join(plan.arms)}, "
        f"repeats {plan.repeats}, probe limit {plan.probe_limit or 'none'}",
        f"  reader {plan.reader} ({plan.reader_effort}); judge {plan.judge or 'none'}; "
        f"endpoint {plan.endpoint.kind} {plan.endpoint.base_url}".rstrip(),
        *_window_lines(result, catalog),
        *_agent_lines(plan),
        "workload (no network call, no credential read):",
        *_workload_lines(result),
        "list-price estimate (catalog, then genai-prices; heuristics, not an invoice):",
        f"  upper bound, no prompt cache:       {_usd(result.upper_bound)}",
        f"  expected, forks reuse their prefix: {_usd(result.expected)}",
        *_source_lines(result, catalog),
        "call inputs: " + ", ".join(f"{k}: {v}" for k, v in result.histogram.items()),
        f"confirmation digest: {result.digest}",
    ]
    return "\n".join(lines)


def format_estimate(result: DryRun, profiles: Sequence[Profile]) -> str:
    lines = [
        f"estimate: suite {result.plan.suite}, arms {','.join(result.plan.arms)}, "
        f"repeats {result.plan.repeats}, probe limit {result.plan.probe_limit or 'none'} "
        "(workload-only arithmetic; no checkout, build, credential or network)",
        *_workload_lines(result),
        "profiles (each priced alone, never pooled):",
    ]
    for profile in profiles:
        cache = "; ".join(f"cache {k}: {_usd(v)}" for k, v in profile.cache.items())
        lines += [
            f"  {profile.role:<9} {profile.model}",
            f"    upper bound {_usd(profile.upper_bound)}; expected {_usd(profile.expected)}; "
            f"calls above a tier {profile.tiered_calls}",
            f"    {cache}",
        ]
    lines += _source_lines(result, None)
    lines.append("call inputs: " + ", ".join(f"{k}: {v}" for k, v in result.histogram.items()))
    lines.append("assumptions: " + ", ".join(f"{k}={v}" for k, v in result.assumptions.items()))
    return "\n".join(lines)
