"""Holdout pricing: the expected and reservation scenarios and the proposed cap C.

A pure function over fixed-budget slots (`PricedSlot`: one role x conversation x probe,
its observed initial context and its inventory disposition) and one selected model's
catalog entry:

- **Expected** (a scenario, not a prediction): two lookups, half the byte budget
  returned (split evenly), 50 % of every call's input read from the cache, 300 output
  tokens a round; rounds as `continuity.plan.lookup_slots.slot_rounds` builds them on
  the slot's observed initial context (no floor: a scenario, not a bound). **Lookup
  overhead** is expected less the same slot answered in one round without a lookup.
- **Reservation** (worst case): ten rounds (`ReservationTerms.rounds`), no cache, the
  full catalog context window as input on every call (replayed history included, so
  nothing is subtracted for it) and the explicit per-call output limit as output.
- **C** = ceil-to-cents(1.25 x the sum of eligible reservations): a run-wide proposed
  catalog-equivalent cap, never a per-shard cap or a spending authorization. All money
  is exact (`decimal.Decimal`, rates read as written), so a sum on a cent boundary stays
  on it.

Inventory-infeasible slots are excluded from every sum and still counted in the planned
denominators. Numerical approval is **blocked** (``status`` ``blocked``, ``code``
``lookup_pricing_blocked``, every reason listed, every amount None, never zero) by a
missing catalog, no selected model, a model nothing prices, a missing rate (input,
output, cache read, at the base or in any tier), context window or output limit, no
explicit output limit or one above the catalog's, any slot of unknown feasibility, or no
eligible slot.

The holdout source and fixed-budget sizing supply the slots: `priced_slots` maps each
slot of a ``budget.json`` (`continuity.lookup.fixed_budget.FixedSlot`) to a `PricedSlot`
(its observed initial context; ``feasible`` is eligible, ``unknown`` unknown, every other
class inventory-infeasible), and `price_holdout` prices them with the loaded catalog, the
selected model and `ReservationTerms(byte_budget=..., rounds=10, output_limit=N)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Literal

import msgspec

from continuity.lookup.fixed_budget import FixedSlot
from continuity.messages import Usage
from continuity.plan.exact_price import (
    EXACT,
    ceil_to_cents,
    exact_sum,
    missing_terms,
    tiered,
)
from continuity.plan.lookup_slots import OUTPUT_TOKENS_PER_ROUND, returned_sizes, slot_rounds
from continuity.plan.pricing import Catalog, ModelPrice, model_price, rate_card
from continuity.providers.rates import price_usage

__all__ = [
    "BLOCKED_CODE",
    "CAP_FACTOR",
    "EXPECTED_CACHE_PERCENT",
    "EXPECTED_LOOKUPS",
    "PRICING_NOTE",
    "PRICING_SCHEMA",
    "Disposition",
    "HoldoutPricing",
    "PricedSlot",
    "ReservationTerms",
    "RolePricing",
    "fixed_budget_disposition",
    "price_holdout",
    "priced_slots",
]

PRICING_SCHEMA = "continuity-lookup-pricing-v1"
BLOCKED_CODE = "lookup_pricing_blocked"
CAP_FACTOR = Decimal("1.25")
EXPECTED_LOOKUPS = 2
EXPECTED_CACHE_PERCENT = 50
PRICING_NOTE = (
    "expected is a scenario (two lookups, half the byte budget, 50 % cache, 300 output "
    "tokens a round); C is a run-wide proposed catalog-equivalent cap, never a per-shard "
    "cap or a spending authorization"
)
_MICRO = Decimal("0.000001")
_RATIO = Decimal("0.0001")
_DISPLAY = Context(prec=60)  # per-trial amounts and C/expected: rounded for display only
Disposition = Literal["eligible", "inventory_infeasible", "unknown"]


class PricedSlot(msgspec.Struct, frozen=True, kw_only=True):
    """One fixed-budget slot: role x trace x probe, its observed initial context in
    tokens and its inventory disposition."""

    role: str
    trace: str
    probe: str
    initial_context_tokens: int
    disposition: Disposition


class ReservationTerms(msgspec.Struct, frozen=True, kw_only=True):
    """The fixed budget's byte budget and rounds, and the explicit per-call output limit
    (None: not given, which blocks)."""

    byte_budget: int
    rounds: int = 10
    output_limit: int | None = None


class RolePricing(msgspec.Struct, frozen=True, kw_only=True):
    """One role's slots and amounts (None when blocked). Per-trial amounts are per
    eligible slot, rounded half-even to the micro-dollar (display only; sums are exact)."""

    role: str
    planned: int
    eligible: int
    inventory_infeasible: int
    unknown: int
    expected_usd: Decimal | None
    expected_per_trial_usd: Decimal | None
    reservation_usd: Decimal | None
    reservation_per_trial_usd: Decimal | None
    lookup_overhead_usd: Decimal | None
    expected_tier_crossings: int
    reservation_tier_crossings: int


class HoldoutPricing(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = PRICING_SCHEMA
    model: str | None
    status: Literal["priced", "blocked"]
    code: str | None  # BLOCKED_CODE when blocked
    reasons: list[str]
    planned: int
    eligible: int
    inventory_infeasible: int
    unknown: int
    roles: list[RolePricing]
    expected_usd: Decimal | None
    reservation_usd: Decimal | None
    cap_usd: Decimal | None
    cap_over_expected: Decimal | None
    note: str = PRICING_NOTE


class _Amounts(msgspec.Struct, frozen=True):
    expected: Decimal
    baseline: Decimal  # the same slot answered in one round, no lookup
    reservation: Decimal
    expected_tiered: int
    reservation_tiered: int


def _blocking(
    slots: Sequence[PricedSlot],
    catalog: Catalog | None,
    model: str | None,
    price: ModelPrice | None,
    terms: ReservationTerms,
) -> list[str]:
    reasons: list[str] = []
    if catalog is None:
        reasons.append("no pricing catalog")
    if not model:
        reasons.append("no selected model")
    if catalog is not None and model:
        reasons += [f"{model}: no {term} in the catalog" for term in missing_terms(price)]
    if terms.output_limit is None:
        reasons.append("no explicit per-call output limit")
    elif price is not None and price.max_output and terms.output_limit > price.max_output:
        reasons.append(
            f"the output limit {terms.output_limit:,} exceeds the catalog's {price.max_output:,}"
        )
    unknown = sum(1 for s in slots if s.disposition == "unknown")
    if unknown:
        reasons.append(f"{unknown} slots have unknown feasibility")
    if not any(s.disposition == "eligible" for s in slots):
        reasons.append("no eligible slot")
    return reasons


def _cost(price: ModelPrice, tokens: int, cache_percent: int, output: int) -> Decimal:
    cached = tokens * cache_percent // 100
    cost = price_usage(
        rate_card(price), Usage(input=tokens - cached, cache_read=cached, output=output)
    )
    assert cost is not None  # every rate was checked before pricing (missing_terms)
    return cost


def _amounts(
    slot: PricedSlot, price: ModelPrice, terms: ReservationTerms, output_limit: int
) -> _Amounts:
    half = -(-terms.byte_budget // 2)
    rounds = slot_rounds(
        slot.initial_context_tokens, returned_sizes(half, EXPECTED_LOOKUPS), arm=""
    )
    (baseline,) = slot_rounds(slot.initial_context_tokens, [], arm="")
    window = price.context_window
    assert window  # checked before pricing
    reserve = _cost(price, window, 0, output_limit)
    return _Amounts(
        expected=exact_sum(
            _cost(price, t, EXPECTED_CACHE_PERCENT, OUTPUT_TOKENS_PER_ROUND) for t in rounds
        ),
        baseline=_cost(price, baseline, EXPECTED_CACHE_PERCENT, OUTPUT_TOKENS_PER_ROUND),
        reservation=EXACT.multiply(reserve, Decimal(terms.rounds)),
        expected_tiered=sum(1 for t in rounds if tiered(price, t)),
        reservation_tiered=terms.rounds if tiered(price, window) else 0,
    )


def _per_trial(total: Decimal, count: int) -> Decimal | None:
    if not count:
        return None
    return _DISPLAY.divide(total, Decimal(count)).quantize(
        _MICRO, rounding=ROUND_HALF_EVEN, context=_DISPLAY
    )


class _Counts(msgspec.Struct, frozen=True):
    planned: int
    eligible: int
    inventory_infeasible: int
    unknown: int


def _counts(slots: Sequence[PricedSlot]) -> _Counts:
    kinds = [s.disposition for s in slots]
    return _Counts(
        len(kinds),
        kinds.count("eligible"),
        kinds.count("inventory_infeasible"),
        kinds.count("unknown"),
    )


def _role(
    role: str, slots: Sequence[PricedSlot], amounts: Sequence[_Amounts] | None
) -> RolePricing:
    counts = _counts(slots)
    expected = reservation = overhead = None
    if amounts is not None:
        expected = exact_sum(a.expected for a in amounts)
        reservation = exact_sum(a.reservation for a in amounts)
        overhead = exact_sum(EXACT.subtract(a.expected, a.baseline) for a in amounts)
    return RolePricing(
        role=role,
        planned=counts.planned,
        eligible=counts.eligible,
        inventory_infeasible=counts.inventory_infeasible,
        unknown=counts.unknown,
        expected_usd=expected,
        expected_per_trial_usd=None if expected is None else _per_trial(expected, counts.eligible),
        reservation_usd=reservation,
        reservation_per_trial_usd=(
            None if reservation is None else _per_trial(reservation, counts.eligible)
        ),
        lookup_overhead_usd=overhead,
        expected_tier_crossings=sum(a.expected_tiered for a in amounts or ()),
        reservation_tier_crossings=sum(a.reservation_tiered for a in amounts or ()),
    )


def price_holdout(
    slots: Sequence[PricedSlot],
    catalog: Catalog | None,
    model: str | None,
    terms: ReservationTerms,
) -> HoldoutPricing:
    """Price `slots` at `model` (see the module doc); blocked with every reason when an
    input is missing. Roles are reported in the order they first appear."""
    price = model_price(catalog, model) if catalog is not None and model else None
    reasons = _blocking(slots, catalog, model, price, terms)
    by_role: dict[str, list[PricedSlot]] = {}
    for slot in slots:
        by_role.setdefault(slot.role, []).append(slot)
    totals = _counts(slots)
    amounts: dict[str, list[_Amounts]] | None = None
    expected = reservation = cap = ratio = None
    if not reasons and price is not None and terms.output_limit is not None:
        limit = terms.output_limit
        amounts = {
            role: [_amounts(s, price, terms, limit) for s in mine if s.disposition == "eligible"]
            for role, mine in by_role.items()
        }
        expected = exact_sum(a.expected for each in amounts.values() for a in each)
        reservation = exact_sum(a.reservation for each in amounts.values() for a in each)
        cap = ceil_to_cents(EXACT.multiply(CAP_FACTOR, reservation))
        ratio = (
            _DISPLAY.divide(cap, expected).quantize(_RATIO, context=_DISPLAY) if expected else None
        )
    return HoldoutPricing(
        model=model or None,
        status="blocked" if amounts is None else "priced",
        code=BLOCKED_CODE if amounts is None else None,
        reasons=reasons,
        planned=totals.planned,
        eligible=totals.eligible,
        inventory_infeasible=totals.inventory_infeasible,
        unknown=totals.unknown,
        roles=[
            _role(role, mine, None if amounts is None else amounts[role])
            for role, mine in by_role.items()
        ],
        expected_usd=expected,
        reservation_usd=reservation,
        cap_usd=cap,
        cap_over_expected=ratio,
    )


def fixed_budget_disposition(classification: str) -> Disposition:
    """A fixed-budget class as a pricing disposition: ``feasible`` is eligible,
    ``unknown`` stays unknown (it blocks), every other class is inventory-infeasible."""
    if classification == "feasible":
        return "eligible"
    if classification == "unknown":
        return "unknown"
    return "inventory_infeasible"


def priced_slots(slots: Sequence[FixedSlot]) -> list[PricedSlot]:
    """The slots of a fixed-budget sizing as priced slots, in their order: each with its
    observed initial context (first-request bytes / 3) and disposition."""
    return [
        PricedSlot(
            role=slot.role,
            trace=slot.trace_id,
            probe=slot.probe_id,
            initial_context_tokens=slot.initial_context_tokens,
            disposition=fixed_budget_disposition(slot.classification),
        )
        for slot in slots
    ]
