"""The dry run and the workload-only estimate: what a plan will do and what it may cost.

Both read no credential and make no network call: they need only the plan, its traces
(generated in memory or read from ``fixtures/``), the pricing catalog and genai-prices'
bundled data (`continuity.plan.pricing`).

- `dry_run` prints the workload, the list-price upper bound (no prompt cache) and the
  expected value (forks reuse the cached prefix), and the confirmation digest a real run
  must quote, and the price source (catalog digest and genai-prices version). With a
  cost limit it refuses to confirm a plan whose upper bound exceeds it
  (or cannot be computed because a price is unknown).
- `estimate` prices the same workload under three profiles, never pooled: the plan's
  reader (main), a cheaper screening model and a fixed high-end sensitivity model, each
  with 0/50/90% cache sensitivities, plus the call-input histogram.

How both read in the terminal is `continuity.plan.estimate_format`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import msgspec

from continuity.digest import DIGEST_RE
from continuity.errors import UsageError
from continuity.outputs import write_output
from continuity.plan.models import DEFAULT_PROFILE, PROFILES
from continuity.plan.plan import Plan, plan_digest
from continuity.plan.pricing import Catalog, PriceSource, model_price
from continuity.plan.workload import (
    ASSUMPTIONS,
    LookupSizing,
    PlannedCall,
    Price,
    Workload,
    histogram,
    price_calls,
)
from continuity.store import Store

__all__ = [
    "CACHE_LEVELS",
    "DEFAULT_HIGH_END",
    "DEFAULT_OUTPUT_CAP",
    "DEFAULT_SCREENING",
    "DRY_RUN_KIND",
    "DryRun",
    "PriceView",
    "Profile",
    "check_cost_limit",
    "check_model_limits",
    "confirmed_dry_run",
    "context_window",
    "dry_run",
    "estimate",
    "output_cap",
    "planned_inputs",
    "record_dry_run",
]

DEFAULT_SCREENING = PROFILES[DEFAULT_PROFILE].screening
DEFAULT_HIGH_END = PROFILES[DEFAULT_PROFILE].high_end
DEFAULT_OUTPUT_CAP = 4096
CACHE_LEVELS = (0.0, 0.5, 0.9)


class PriceView(msgspec.Struct, frozen=True):
    usd: float | None  # None: at least one call is unpriced (never counted as zero)
    priced_calls: int
    unpriced_calls: int
    known_subtotal: float


class DryRun(msgspec.Struct, frozen=True, kw_only=True):
    plan: Plan
    digest: str
    units: int
    live_turns: int
    answer_calls: int
    compaction_calls: int
    judge_calls: int
    planned_input_tokens: int
    upper_bound: PriceView
    expected: PriceView
    tiered_calls: int
    histogram: dict[str, int]
    assumptions: dict[str, int]
    # lookup-allowed-v1: what runs (offline mechanics; nothing is priced or confirmed).
    lookup: LookupSizing | None = None
    # Planned calls whose input plus output exceeds their model's context window, or
    # whose output exceeds its output limit (catalog limits; unknown limits never count).
    over_limit_calls: int = 0
    # Where the prices came from (a real plan also binds it into its digest).
    prices: PriceSource | None = None
    # The ledger arm's extractions (each at its reservation), and every completion:
    # one per answer turn, summary, extraction and verdict.
    extraction_calls: int = 0
    completions: int = 0
    # Every planned call's input tokens per model, sorted (`planned_inputs`): `doit
    # units --real` checks them against the server's window before any request.
    planned_inputs: dict[str, list[int]] = {}


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    role: str  # main | screening | high-end
    model: str
    upper_bound: PriceView
    expected: PriceView
    cache: dict[str, PriceView]  # "0%" | "50%" | "90%"
    tiered_calls: int


def _view(price: Price, calls: int) -> PriceView:
    return PriceView(
        usd=round(price.known, 6) if price.complete else None,
        priced_calls=calls - price.unpriced_calls,
        unpriced_calls=price.unpriced_calls,
        known_subtotal=round(price.known, 6),
    )


def _tiered(catalog: Catalog, calls: Sequence[PlannedCall], model: str | None = None) -> int:
    """Calls whose input (cached included) strictly exceeds their model's first tier."""
    count = 0
    for call in calls:
        price = model_price(catalog, model or call.model)
        if (
            price is not None
            and price.tiers
            and call.input_tokens > price.tiers[0].above_input_tokens
        ):
            count += 1
    return count


def output_cap(plan: Plan) -> int:
    """The output cap every real request of `plan` sends (``--max-output-tokens``)."""
    return plan.max_output_tokens or DEFAULT_OUTPUT_CAP


def context_window(catalog: Catalog, plan: Plan, model: str) -> int | None:
    """The smallest context window known before any call: the plan's
    ``--context-window`` and the price data's (None: neither knows one)."""
    price = model_price(catalog, model)
    known = [w for w in (plan.context_window, price and price.context_window) if w]
    return min(known) if known else None


def _over_limit(catalog: Catalog, calls: Sequence[PlannedCall], plan: Plan) -> int:
    """Calls that cannot fit their model: input plus the output cap above the context
    window (servers reserve the whole cap), or the cap above the model's output limit
    (a limit nothing knows never counts)."""
    cap = output_cap(plan)
    count = 0
    for call in calls:
        window = context_window(catalog, plan, call.model)
        price = model_price(catalog, call.model)
        limit = price.max_output if price is not None else None
        if (window and call.input_tokens + cap > window) or (limit and cap > limit):
            count += 1
    return count


def planned_inputs(calls: Sequence[PlannedCall]) -> dict[str, list[int]]:
    """Every planned call's input tokens, sorted, per model (what `doit units --real`
    checks against the windows the server reports before it sends anything)."""
    by_model: dict[str, list[int]] = {}
    for call in calls:
        by_model.setdefault(call.model, []).append(call.input_tokens)
    return {model: sorted(inputs) for model, inputs in sorted(by_model.items())}


def dry_run(
    plan: Plan,
    load: Workload,
    catalog: Catalog,
    lookup: LookupSizing | None = None,
    *,
    prices: PriceSource | None = None,
) -> DryRun:
    """The plan's workload and list prices; for a lookup plan (`lookup`), its runnable
    slots and their round ceiling instead, at zero: lookup never calls a model.
    `prices` names the price source (default: a real plan's own, `Plan.pricing`)."""
    if lookup is not None:
        nothing = PriceView(usd=0.0, priced_calls=0, unpriced_calls=0, known_subtotal=0.0)
        return DryRun(
            plan=plan,
            digest=plan_digest(plan),
            units=load.units,
            live_turns=lookup.runnable,
            answer_calls=lookup.runnable * lookup.max_rounds,
            compaction_calls=0,
            judge_calls=0,
            planned_input_tokens=0,
            upper_bound=nothing,
            expected=nothing,
            tiered_calls=0,
            histogram={},
            assumptions={},
            lookup=lookup,
        )
    cap = output_cap(plan)
    calls = [
        msgspec.structs.replace(c, output_tokens=min(c.output_tokens, cap)) for c in load.calls
    ]
    return DryRun(
        plan=plan,
        digest=plan_digest(plan),
        units=load.units,
        live_turns=load.live_turns,
        answer_calls=load.answer_calls,
        compaction_calls=load.compaction_calls,
        judge_calls=load.judge_calls,
        extraction_calls=load.extraction_calls,
        completions=load.completions,
        planned_input_tokens=load.planned_input_tokens,
        upper_bound=_view(price_calls(catalog, calls, cache=False), len(calls)),
        expected=_view(price_calls(catalog, calls, cache=True), len(calls)),
        tiered_calls=_tiered(catalog, calls),
        over_limit_calls=_over_limit(catalog, calls, plan),
        planned_inputs=planned_inputs(calls),
        histogram=histogram(calls),
        assumptions=dict(ASSUMPTIONS),
        prices=plan.pricing or prices,
    )


def check_model_limits(result: DryRun) -> None:
    """Refuse to confirm a plan with calls that cannot fit their model.

    Raises:
        UsageError: ``model_limit_exceeded`` naming how many planned calls are over.
    """
    if result.over_limit_calls:
        window = result.plan.context_window
        raise UsageError(
            f"{result.over_limit_calls} planned calls exceed their model's context window "
            f"({f'--context-window {window:,}, ' if window else ''}price data) or output "
            f"limit, with the {output_cap(result.plan):,}-token output cap each call reserves; "
            "choose arms, suites, a smaller --max-output-tokens or a model that fits",
            code="model_limit_exceeded",
            location="--context-window" if window else "--reader",
        )


def check_cost_limit(result: DryRun | Profile, limit: float | None) -> None:
    """Refuse to confirm a plan whose upper bound exceeds `limit` USD.

    Raises:
        UsageError: ``cost_limit_exceeded`` when the upper bound is above the limit, or
            ``cost_unknown`` when a price is missing so the bound cannot be checked;
            ``cost_limit_invalid`` for a limit that is not finite or not above 0.
    """
    if limit is None:
        return
    if not math.isfinite(limit) or limit <= 0:  # nan would silently pass every bound
        raise UsageError(
            f"the cost limit must be a finite number of USD above 0, not {limit!r}",
            code="cost_limit_invalid",
            location="--cost-limit",
        )
    bound = result.upper_bound
    if bound.usd is None:
        raise UsageError(
            f"the upper bound cannot be checked against the {limit:.2f} USD limit: "
            f"{bound.unpriced_calls} planned calls have no catalog price "
            f"(known subtotal {bound.known_subtotal:.2f} USD)",
            code="cost_unknown",
            location="--cost-limit",
        )
    if bound.usd > limit:
        raise UsageError(
            f"upper bound {bound.usd:.2f} USD exceeds the {limit:.2f} USD limit; "
            "the plan is not confirmed",
            code="cost_limit_exceeded",
            location="--cost-limit",
        )


def estimate(
    plan: Plan,
    load: Workload,
    catalog: Catalog,
    *,
    screening: str = DEFAULT_SCREENING,
    high_end: str = DEFAULT_HIGH_END,
) -> list[Profile]:
    """The workload priced per profile (every call re-priced at that profile's model)."""
    profiles = []
    for role, model in (("main", plan.reader), ("screening", screening), ("high-end", high_end)):
        n = len(load.calls)
        profiles.append(
            Profile(
                role=role,
                model=model,
                upper_bound=_view(price_calls(catalog, load.calls, cache=False, model=model), n),
                expected=_view(price_calls(catalog, load.calls, cache=True, model=model), n),
                cache={
                    f"{int(level * 100)}%": _view(
                        price_calls(
                            catalog, load.calls, cache=True, model=model, cache_fraction=level
                        ),
                        n,
                    )
                    for level in CACHE_LEVELS
                },
                tiered_calls=_tiered(catalog, load.calls, model),
            )
        )
    return profiles


DRY_RUN_KIND = "dry-run"


def record_dry_run(store: Store, result: DryRun, out: Path, *, confirm: bool = True) -> Path:
    """Keep a dry run as ``<out>/plans/<digest>/dry-run.json`` for the user and, with
    `confirm`, in the store under its plan digest (the confirmation a real run checks)."""
    data = msgspec.json.encode(result)
    if confirm:
        blob = store.put_blob(data)
        store.record_action(
            result.digest,
            kind=DRY_RUN_KIND,
            output=blob,
            meta={"suite": result.plan.suite, "mode": result.plan.mode},
        )
    path = out / "plans" / result.digest[:16] / "dry-run.json"
    write_output(path, msgspec.json.format(data) + b"\n")
    write_output(
        path.with_name("plan.json"), msgspec.json.format(msgspec.json.encode(result.plan)) + b"\n"
    )
    return path


def confirmed_dry_run(store: Store, digest: str) -> DryRun | None:
    """The dry run recorded under `digest`, or None."""
    entry = store.get_action(digest) if DIGEST_RE.match(digest) else None
    if entry is None or entry.kind != DRY_RUN_KIND:
        return None
    return msgspec.json.decode(store.get_blob(entry.output.digest), type=DryRun)
