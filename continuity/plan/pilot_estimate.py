"""A pilot registration's offline estimate: E, Rmax, C, C - Rmax, C / E and the
full-upfront comparison, all exact (`decimal.Decimal`, never float).

Pure arithmetic over a fixed-budget sizing's slots (`PricedSlot`) and a validated pilot
descriptor (`continuity.spend.descriptor`); the reading and verifying is
`continuity.roles.pilot.registration`.

- **E** is a *scenario, not measured usage*, summed over the eligible slots: two
  lookups returning half the sizing's byte budget between them (split evenly), so three
  rounds; round k's input is the slot's observed initial context, every byte returned
  before it as one token, and `INPUT_ALLOWANCE_PER_ROUND` (900) input allowance tokens
  for each round so far (the allowance stays in the history, as the expected
  scenario's 300 a round does); half of each round's input read from the cache; up to
  300 output tokens a round; the default service tier (1x); the registered rates.
- **Rmax** is the registry's (assumed-v1: $3.92), **C** the descriptor's cap; the report
  gives C - Rmax (what remains after the first hold) and C / E (None when E is zero;
  a ratio, rounded half-even to four places for reading; the amounts stay exact).
- **The full-upfront comparison**: ceil-to-cents(1.25 x 10 maximum reservations
  per eligible slot), i.e. 1.25 x 10 x Rmax x eligible. It is *not the admission gate*:
  a cap-gated pilot admits a request only while T + Rmax <= C
  (`continuity.spend.account`).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Literal

import msgspec

from continuity.plan.holdout_pricing import PricedSlot
from continuity.plan.lookup_slots import OUTPUT_TOKENS_PER_ROUND, returned_sizes
from continuity.plan.readiness import CapGatedReadiness
from continuity.spend.assumptions import Assumptions, reservation, tier_multiplier
from continuity.spend.descriptor import CatalogBinding, PilotDescriptor
from continuity.spend.money import EXACT, MILLION, ceil_to_cents, exact_sum, usd_text

__all__ = [
    "FULL_UPFRONT_FACTOR",
    "FULL_UPFRONT_NOTE",
    "FULL_UPFRONT_RESERVATIONS",
    "INPUT_ALLOWANCE_PER_ROUND",
    "PILOT_ESTIMATE_SCHEMA",
    "SCENARIO_CACHE_PERCENT",
    "SCENARIO_LOOKUPS",
    "SCENARIO_NOTE",
    "SCENARIO_TIER",
    "FullUpfront",
    "PilotEstimate",
    "PilotScenario",
    "expected_slot",
    "pilot_estimate",
    "pilot_lines",
]

PILOT_ESTIMATE_SCHEMA = "continuity-lookup-pilot-estimate-v1"
SCENARIO_LOOKUPS = 2
SCENARIO_CACHE_PERCENT = 50
SCENARIO_TIER = "default"
INPUT_ALLOWANCE_PER_ROUND = 900
FULL_UPFRONT_RESERVATIONS = 10
FULL_UPFRONT_FACTOR = Decimal("1.25")
SCENARIO_NOTE = "E is a scenario, not measured usage, and not a prediction or an invoice"
FULL_UPFRONT_NOTE = (
    "a comparison only, not the admission gate: the pilot admits a request only while T + Rmax <= C"
)
_RATIO = Decimal("0.0001")
_DISPLAY = Context(prec=60)  # C / E: rounded once, half-even, for reading


class PilotScenario(msgspec.Struct, frozen=True, kw_only=True):
    """The terms of E, as labels and numbers (nothing here was measured)."""

    lookups: int
    rounds: int
    returned_bytes: int
    cache_percent: int
    output_tokens_per_round: int
    input_allowance_per_round: int
    tier: str
    tier_multiplier: str
    note: str = SCENARIO_NOTE


class FullUpfront(msgspec.Struct, frozen=True, kw_only=True):
    reservations_per_slot: int
    factor: Decimal
    eligible: int
    reservations_usd: Decimal  # 10 x Rmax x eligible
    comparison_usd: Decimal  # ceil-to-cents(1.25 x that)
    note: str = FULL_UPFRONT_NOTE


class PilotEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """What `doit estimate` reports for a pilot registration (module doc)."""

    schema: str = PILOT_ESTIMATE_SCHEMA
    mode: Literal["cap-gated-v1"] = "cap-gated-v1"
    registration_sha256: str  # the pilot registration file's
    wrapped_sha256: str  # the external registration it wraps
    descriptor_digest: str
    assumptions_version: str
    assumptions_digest: str
    catalog_digest: str
    schedule_seed: int
    schedule_digest: str
    transport_key_policy: str
    concurrency: int
    planned: int
    eligible: int
    scenario: PilotScenario
    expected_usd: Decimal  # E
    rmax_usd: Decimal
    cap_usd: Decimal  # C
    cap_minus_rmax_usd: Decimal
    cap_over_expected: Decimal | None  # None when E is zero
    rounds_above_envelope: int  # scenario rounds whose input exceeds I
    full_upfront: FullUpfront
    readiness: CapGatedReadiness


def expected_slot(
    initial_tokens: int, byte_budget: int, rates: CatalogBinding, multiplier: Decimal
) -> tuple[Decimal, list[int]]:
    """One slot's E and its rounds' inputs (module doc), exactly."""
    responses = returned_sizes(-(-byte_budget // 2), SCENARIO_LOOKUPS)
    inputs: list[int] = []
    returned = 0
    for index in range(SCENARIO_LOOKUPS + 1):
        inputs.append(initial_tokens + returned + INPUT_ALLOWANCE_PER_ROUND * (index + 1))
        if index < len(responses):
            returned += responses[index]
    costs = []
    for tokens in inputs:
        cached = tokens * SCENARIO_CACHE_PERCENT // 100
        per_million = exact_sum(
            [
                EXACT.multiply(Decimal(tokens - cached), Decimal(rates.input)),
                EXACT.multiply(Decimal(cached), Decimal(rates.cache_read)),
                EXACT.multiply(Decimal(OUTPUT_TOKENS_PER_ROUND), Decimal(rates.output)),
            ]
        )
        costs.append(EXACT.divide(EXACT.multiply(per_million, multiplier), MILLION))
    return exact_sum(costs), inputs


def _ratio(cap: Decimal, expected: Decimal) -> Decimal | None:
    """C / E to four places, half-even (None when E is zero: no scenario cost)."""
    if not expected:
        return None
    return _DISPLAY.divide(cap, expected).quantize(
        _RATIO, rounding=ROUND_HALF_EVEN, context=_DISPLAY
    )


def _full_upfront(rmax: Decimal, eligible: int) -> FullUpfront:
    reservations = EXACT.multiply(
        EXACT.multiply(Decimal(FULL_UPFRONT_RESERVATIONS), rmax), Decimal(eligible)
    )
    return FullUpfront(
        reservations_per_slot=FULL_UPFRONT_RESERVATIONS,
        factor=FULL_UPFRONT_FACTOR,
        eligible=eligible,
        reservations_usd=reservations,
        comparison_usd=ceil_to_cents(EXACT.multiply(FULL_UPFRONT_FACTOR, reservations)),
    )


def _scenario(byte_budget: int, registry: Assumptions) -> tuple[PilotScenario, Decimal]:
    multiplier = tier_multiplier(registry, SCENARIO_TIER)
    assert multiplier is not None  # assumed-v1 registers the default tier
    scenario = PilotScenario(
        lookups=SCENARIO_LOOKUPS,
        rounds=SCENARIO_LOOKUPS + 1,
        returned_bytes=-(-byte_budget // 2),
        cache_percent=SCENARIO_CACHE_PERCENT,
        output_tokens_per_round=OUTPUT_TOKENS_PER_ROUND,
        input_allowance_per_round=INPUT_ALLOWANCE_PER_ROUND,
        tier=SCENARIO_TIER,
        tier_multiplier=usd_text(multiplier),
    )
    return scenario, multiplier


def pilot_estimate(
    slots: Sequence[PricedSlot],
    byte_budget: int,
    descriptor: PilotDescriptor,
    cap: Decimal,
    readiness: CapGatedReadiness,
    files: tuple[str, str, str],
) -> PilotEstimate:
    """The pilot section of an estimate: `slots` of a sizing with `byte_budget` bytes a
    slot, under a validated `descriptor` whose cap is `cap`; `files` is the pilot file's
    raw sha256, the wrapped registration's and the descriptor's digest."""
    registry = descriptor.assumptions
    scenario, multiplier = _scenario(byte_budget, registry)
    eligible = [s for s in slots if s.disposition == "eligible"]
    priced = [
        expected_slot(s.initial_context_tokens, byte_budget, descriptor.catalog, multiplier)
        for s in eligible
    ]
    expected = exact_sum(amount for amount, _ in priced)
    rmax = reservation(registry)
    ratio = _ratio(cap, expected)
    return PilotEstimate(
        registration_sha256=files[0],
        wrapped_sha256=files[1],
        descriptor_digest=files[2],
        assumptions_version=registry.version,
        assumptions_digest=descriptor.assumptions_digest,
        catalog_digest=descriptor.catalog.digest,
        schedule_seed=descriptor.schedule.seed,
        schedule_digest=descriptor.schedule.digest,
        transport_key_policy=descriptor.transport_key_policy,
        concurrency=descriptor.concurrency,
        planned=len(slots),
        eligible=len(eligible),
        scenario=scenario,
        expected_usd=expected,
        rmax_usd=rmax,
        cap_usd=cap,
        cap_minus_rmax_usd=EXACT.subtract(cap, rmax),
        cap_over_expected=ratio,
        rounds_above_envelope=sum(
            1 for _, inputs in priced for t in inputs if t > registry.input_envelope
        ),
        full_upfront=_full_upfront(rmax, len(eligible)),
        readiness=readiness,
    )


def _usd(amount: Decimal) -> str:
    return f"${usd_text(amount)}"


def pilot_lines(pilot: PilotEstimate) -> list[str]:
    """The pilot section of the estimate's text (exact amounts, as the JSON has them)."""
    s, full, ready = pilot.scenario, pilot.full_upfront, pilot.readiness
    ratio = "null (E is zero)" if pilot.cap_over_expected is None else f"{pilot.cap_over_expected}"
    lines = [
        f"pilot registration ({pilot.mode}, concurrency {pilot.concurrency}): sha256 "
        f"{pilot.registration_sha256}, wrapping the external registration sha256 "
        f"{pilot.wrapped_sha256}; it enables no paid route",
        f"  {pilot.assumptions_version} digest {pilot.assumptions_digest[:16]}, catalog "
        f"binding {pilot.catalog_digest[:16]}, schedule seed {pilot.schedule_seed} digest "
        f"{pilot.schedule_digest[:16]}, transport keys {pilot.transport_key_policy}",
        f"  E scenario (a scenario, not measured usage): {s.lookups} lookups returning "
        f"{s.returned_bytes:,} bytes (half the budget), {s.rounds} rounds of up to "
        f"{s.output_tokens_per_round} output tokens plus {s.input_allowance_per_round} input "
        f"allowance tokens a round, {s.cache_percent} % of input cached, {s.tier} tier "
        f"({s.tier_multiplier}x); summed over {pilot.eligible:,} eligible of "
        f"{pilot.planned:,} slots",
        f"  E = {_usd(pilot.expected_usd)}; Rmax = {_usd(pilot.rmax_usd)}; C = "
        f"{_usd(pilot.cap_usd)}; C - Rmax = {_usd(pilot.cap_minus_rmax_usd)}; C / E = {ratio}",
        f"  full-upfront comparison, not the admission gate: ceil-to-cents({full.factor} x "
        f"{full.reservations_per_slot} x Rmax x {full.eligible:,} eligible slots) = "
        f"{_usd(full.comparison_usd)}",
    ]
    if pilot.rounds_above_envelope:
        lines.append(
            f"  {pilot.rounds_above_envelope:,} scenario rounds exceed the input envelope "
            "(they would not be admitted; priced at the registered rates anyway)"
        )
    rows = [
        f"    {name}: {c.status}: {c.detail}"
        for name, c in (
            ("pricing", ready.pricing),
            ("assumptions", ready.assumptions),
            ("output cap", ready.output_cap),
            ("input envelope", ready.input_envelope),
        )
    ]
    if ready.attestation is not None:
        rows.append(f"    attestation: {ready.attestation.status}: {ready.attestation.detail}")
    return [
        *lines,
        f"  cap-gated readiness of {ready.reader}: {ready.status}, blockers "
        f"{', '.join(ready.blockers) or 'none'} ({ready.note})",
        *rows,
    ]
