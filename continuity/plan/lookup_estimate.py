"""Lookup cost sensitivity: a lookup workload's slots priced for a real reader.

Offline, ``lookup-allowed-v1`` never calls a model, so its dry run prices nothing.
`doit estimate --probe-mode lookup-allowed-v1` asks what the same slots would cost a
real reader, under labelled assumptions: never predictions, invoices or authorization.
Everything here is arithmetic; the slots and their conservative sizing are
`continuity.plan.lookup_slots`, the I/O (traces, policy, registration, the JSON file)
and the text are `continuity.plan.lookup_report`.

Every sensitivity row (0/2/8 lookup calls x none/half/full returned bytes) is priced
at 0, 50 and 90 % of every call's input read from the cache (no cache writes), with
300 output tokens a round. Prices are exact (`continuity.plan.exact_price`): each call
at the highest tier its whole input, cached included, strictly exceeds. An unpriced
call is counted, and the row's total is then unknown, never zero.

**Profiles**, each priced alone and never pooled, in this order: ``main`` (the reader
binding's reader), ``screening`` (the binding's other model, or ``--screening-model``)
and ``high-end`` (`HIGH_END_MODEL`, or ``--high-end-model``). The main reader's
readiness (`continuity.plan.readiness`) is computed for the worst row.

**A holdout source** is estimated from its fixed-budget sizing (``budget.json``,
`continuity.lookup.fixed_budget`): its slots are sized by `fixed_slot_sizes` (each
slot's observed initial context; measured with its role's soul and this checkout's pack
guidance, so no S1 or Rpack allowance is added), and the expected and reservation
scenarios and the proposed cap C are priced at the main reader
(`continuity.plan.holdout_pricing`) into a `HoldoutEstimate` beside the profiles.

**A pilot registration** adds a `continuity.plan.pilot_estimate.PilotEstimate` (``pilot``,
left out of every other estimate's JSON): E, Rmax, C, C - Rmax, C / E, the full-upfront
comparison and the cap-gated readiness (`continuity.roles.pilot.estimate` builds it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Literal, Protocol

import msgspec
from msgspec import UNSET, UnsetType

from continuity.lookup.fixed_budget import FixedBudget, FixedSlot, FixedTerms, SourceBinding
from continuity.lookup.receipts import LookupBinding
from continuity.messages import Usage
from continuity.plan.estimate import DEFAULT_HIGH_END
from continuity.plan.exact_price import tiered
from continuity.plan.holdout_pricing import HoldoutPricing
from continuity.plan.lookup_slots import (
    LOOKUP_CALL_LEVELS,
    OUTPUT_TOKENS_PER_ROUND,
    Allowances,
    EstimateRole,
    LookupWorkload,
    Returned,
    SlotSize,
    call_levels,
    level_inputs,
    returned_sizes,
    slot_rounds,
)
from continuity.plan.pilot_estimate import PilotEstimate
from continuity.plan.pricing import ModelPrice, PriceSource, rate_card
from continuity.plan.readiness import ReaderReadiness, reader_readiness
from continuity.plan.workload import PlannedCall, histogram
from continuity.providers.rates import price_usage

__all__ = [
    "ASSUMPTION_LABELS",
    "CACHE_PERCENTS",
    "ESTIMATE_SCHEMA",
    "HIGH_END_MODEL",
    "OUTPUT_LIMIT_SOURCES",
    "CallBudget",
    "CallLevel",
    "Deadlines",
    "HoldoutEstimate",
    "LevelPrice",
    "LookupEstimate",
    "OutputLimitSource",
    "Profile",
    "ProfileEstimate",
    "RoleSizing",
    "call_level",
    "configured_deadlines",
    "estimate_lookup",
    "fixed_slot_sizes",
    "holdout_estimate",
    "price_inputs",
    "profile_estimate",
    "role_sizing",
]

ESTIMATE_SCHEMA = "continuity-lookup-estimate-v1"
HIGH_END_MODEL = DEFAULT_HIGH_END
CACHE_PERCENTS = (0, 50, 90)
Profile = Literal["main", "screening", "high-end"]
ASSUMPTION_LABELS = {
    "lookup_calls": "0, 2 or 8 per slot (assumption, not a prediction)",
    "returned_bytes": "none, half or full of the policy's byte budget (assumption)",
    "cache": "0, 50 or 90 % of every call's input read from the cache (assumption)",
    "output": f"{OUTPUT_TOKENS_PER_ROUND} output tokens a round (heuristic)",
    "repeated_input": "every returned byte is charged as one input token in every later "
    "round (conservative)",
    "initial": "max(observed first-request bytes / 3, source-shape estimate), native floor "
    "150,000, pack floor cold + 12,000, plus S1 and Rpack allowances (heuristic)",
}
OutputLimitSource = Literal["catalog_max", "enforced"]
OUTPUT_LIMIT_SOURCES: tuple[OutputLimitSource, ...] = ("catalog_max", "enforced")
_LIMIT_NOTES: dict[OutputLimitSource | None, str] = {
    "catalog_max": "the selected model's catalog maximum output: an offline modelling "
    "assumption, not a proved transport ceiling",
    "enforced": "accepted as given; it needs separate execution proof that the transport "
    "enforces it",
    None: "no explicit per-call output limit: numerical approval is blocked",
}


class CallBudget(Protocol):
    """The per-slot budget the sensitivity rows take (a policy's, or a fixed budget's)."""

    @property
    def calls(self) -> int: ...
    @property
    def bytes(self) -> int: ...


class CallLevel(msgspec.Struct, frozen=True, kw_only=True):
    """One sensitivity row's calls (the same for every model)."""

    lookup_calls: int
    returned: Returned
    returned_bytes: int
    rounds_per_slot: int
    calls: int
    input_tokens: int
    peak_input_tokens: int
    histogram: dict[str, int]


class LevelPrice(msgspec.Struct, frozen=True, kw_only=True):
    """One row x cache level, priced at one profile's model. `usd` is None when any call
    is unpriced; `known_subtotal` is what the priced calls cost."""

    lookup_calls: int
    returned: Returned
    cache_percent: int
    usd: Decimal | None
    known_subtotal: Decimal
    priced_calls: int
    unpriced_calls: int
    tiered_calls: int


class ProfileEstimate(msgspec.Struct, frozen=True, kw_only=True):
    profile: Profile
    model: str
    prices: list[LevelPrice]


class RoleSizing(msgspec.Struct, frozen=True, kw_only=True):
    """One role's slots: planned, priced, skipped by class, unknown; its first-request
    range (floors and allowances applied) and its allowances in tokens."""

    role: str
    arm: str
    planned: int
    priced: int
    skipped: dict[str, int]
    unknown: int
    first_request_min: int
    first_request_max: int
    soul_allowance: int
    guidance_allowance: int


class Deadlines(msgspec.Struct, frozen=True, kw_only=True):
    """The configured lookup deadlines (configuration, not measured latency)."""

    probe_seconds: float
    cleanup_seconds: float
    turn_seconds: float
    watchdog_seconds: float


class HoldoutEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """A holdout source's pricing from its fixed-budget sizing: the source and selection
    it binds, the sizing's raw sha256 and budget, its slots by class, the per-call
    output limit and its source (with what that source means), and the expected and
    reservation scenarios with the proposed cap C at the main reader."""

    holdout: SourceBinding
    budget_sha256: str
    budget: FixedTerms
    measured_commit: str
    classes: dict[str, int]
    output_limit: int | None
    output_limit_source: OutputLimitSource | None
    output_limit_note: str
    pricing: HoldoutPricing


class LookupEstimate(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = ESTIMATE_SCHEMA
    workload: LookupWorkload
    policy_sha256: str
    call_budget: int
    byte_budget: int
    slots: int
    roles: list[RoleSizing]
    levels: list[CallLevel]
    profiles: list[ProfileEstimate]
    readiness: ReaderReadiness
    deadlines: Deadlines
    assumptions: dict[str, str]
    prices: PriceSource  # the catalog and genai-prices version the prices come from
    holdout: HoldoutEstimate | None = None  # a holdout source's fixed-budget pricing
    # A pilot registration's cap-gated estimate; left out of every other estimate, which
    # keeps its bytes (and so its file name).
    pilot: PilotEstimate | UnsetType = UNSET


def configured_deadlines(watchdog_seconds: float) -> Deadlines:
    """The probe, cleanup and turn deadlines every lookup binding carries by default
    (`LookupBinding`), and the runner's child watchdog (given: it lives above this
    layer)."""
    defaults = {f.name: f.default for f in msgspec.structs.fields(LookupBinding)}
    return Deadlines(
        probe_seconds=float(defaults["probe_deadline"]),
        cleanup_seconds=float(defaults["cleanup_seconds"]),
        turn_seconds=float(defaults["turn_safety_seconds"]),
        watchdog_seconds=watchdog_seconds,
    )


def price_inputs(
    price: ModelPrice | None, inputs: Mapping[int, int], cache_percent: int
) -> tuple[Decimal | None, Decimal, int, int, int]:
    """(total or None, known subtotal, priced, unpriced, tiered) of calls by input size,
    each reading `cache_percent` of its input from the cache and writing 300 tokens."""
    known = Decimal(0)
    priced = unpriced = above = 0
    card = rate_card(price) if price is not None else None
    for tokens, count in sorted(inputs.items()):
        cached = tokens * cache_percent // 100
        usage = Usage(input=tokens - cached, cache_read=cached, output=OUTPUT_TOKENS_PER_ROUND)
        cost = price_usage(card, usage) if card is not None else None
        if cost is None:
            unpriced += count
        else:
            known += cost * count
            priced += count
        if tiered(price, tokens):
            above += count
    return (known if unpriced == 0 else None), known, priced, unpriced, above


def profile_estimate(
    profile: Profile,
    model: str,
    price: ModelPrice | None,
    inputs: Mapping[tuple[int, Returned], Mapping[int, int]],
) -> ProfileEstimate:
    """Every sensitivity row x cache level priced at `model` alone."""
    prices = []
    for (calls, returned), sizes in inputs.items():
        for percent in CACHE_PERCENTS:
            usd, known, priced, unpriced, above = price_inputs(price, sizes, percent)
            prices.append(
                LevelPrice(
                    lookup_calls=calls,
                    returned=returned,
                    cache_percent=percent,
                    usd=usd,
                    known_subtotal=known,
                    priced_calls=priced,
                    unpriced_calls=unpriced,
                    tiered_calls=above,
                )
            )
    return ProfileEstimate(profile=profile, model=model, prices=prices)


def call_level(
    calls: int, returned: Returned, returned_bytes: int, sizes: Counter[int]
) -> CallLevel:
    """One row's calls: count, input tokens, peak and histogram."""
    return CallLevel(
        lookup_calls=calls,
        returned=returned,
        returned_bytes=returned_bytes,
        rounds_per_slot=calls + 1,
        calls=sizes.total(),
        input_tokens=sum(tokens * count for tokens, count in sizes.items()),
        peak_input_tokens=max(sizes, default=0),
        histogram=histogram(
            PlannedCall("answer", "", tokens, 0, 0, OUTPUT_TOKENS_PER_ROUND)
            for tokens, count in sizes.items()
            for _ in range(count)
        ),
    )


def role_sizing(
    role: EstimateRole, slots: Sequence[SlotSize], allowances: Allowances
) -> RoleSizing:
    """What `role`'s slots are: counts by disposition and the first-request range."""
    mine = [s for s in slots if s.role == role.name]
    firsts = [
        slot_rounds(s.bound, [], arm=s.arm, cold=s.cold, allowance=s.allowance)[0]
        for s in mine
        if s.priced
    ]
    skipped = Counter(s.disposition for s in mine if not s.priced)
    soul, guidance = allowances.tokens(role)
    return RoleSizing(
        role=role.name,
        arm=role.arm,
        planned=len(mine),
        priced=len(firsts),
        skipped=dict(sorted(skipped.items())),
        unknown=sum(1 for s in mine if s.disposition == "unknown"),
        first_request_min=min(firsts, default=0),
        first_request_max=max(firsts, default=0),
        soul_allowance=soul,
        guidance_allowance=guidance,
    )


def estimate_lookup(
    work: LookupWorkload,
    slots: Sequence[SlotSize],
    policy: CallBudget,
    *,
    policy_sha256: str,
    allowances: Allowances,
    models: Sequence[tuple[Profile, str, ModelPrice | None]],
    deadlines: Deadlines,
    prices: PriceSource,
) -> LookupEstimate:
    """The whole estimate: every sensitivity row's calls, each profile's prices (in the
    order of `models`, main first: its price also feeds the readiness diagnostic), the
    main reader's readiness for the worst row (8 calls, the full byte budget)."""
    rows = call_levels(policy.bytes)
    inputs = {(calls, level): level_inputs(slots, calls, size) for calls, level, size in rows}
    worst = returned_sizes(policy.bytes, max(LOOKUP_CALL_LEVELS))
    slot_totals = [
        sum(slot_rounds(s.bound, worst, arm=s.arm, cold=s.cold, allowance=s.allowance))
        for s in slots
        if s.priced
    ]
    _, main_model, main_price = models[0]
    readiness = reader_readiness(
        main_model,
        main_price,
        turns_per_slot=policy.calls + 2,  # the probe turn's ceiling: call budget + 2
        output_tokens_per_turn=OUTPUT_TOKENS_PER_ROUND,
        peak_input_tokens=max(inputs[(max(LOOKUP_CALL_LEVELS), "full")], default=0),
        input_tokens_per_slot=max(slot_totals, default=0),
    )
    return LookupEstimate(
        workload=work,
        policy_sha256=policy_sha256,
        call_budget=policy.calls,
        byte_budget=policy.bytes,
        slots=len(slots),
        roles=[role_sizing(role, slots, allowances) for role in work.roles],
        levels=[call_level(c, level, size, inputs[(c, level)]) for c, level, size in rows],
        profiles=[profile_estimate(p, m, price, inputs) for p, m, price in models],
        readiness=readiness,
        deadlines=deadlines,
        assumptions=dict(ASSUMPTION_LABELS),
        prices=prices,
    )


def fixed_slot_sizes(slots: Sequence[FixedSlot]) -> list[SlotSize]:
    """A fixed-budget sizing's slots as the sensitivity rows size them: the observed
    initial context as the bound (the floors still apply), the pack arm's cold
    estimate, no allowance (each role was measured with its own soul and the pack's
    guidance), the class as the disposition (``feasible`` and ``unknown`` are priced)."""
    return [
        SlotSize(
            role=slot.role,
            arm=slot.arm,
            suite=slot.suite,
            trace=slot.trace_id,
            probe=slot.probe_id,
            disposition=slot.classification,
            bound=slot.initial_context_tokens,
            cold=slot.cold_tokens,
            allowance=0,
        )
        for slot in slots
    ]


def holdout_estimate(
    budget: FixedBudget,
    budget_sha256: str,
    pricing: HoldoutPricing,
    output_limit: int | None,
    output_limit_source: OutputLimitSource | None,
) -> HoldoutEstimate:
    """The holdout part of an estimate (pure)."""
    classes = Counter(slot.classification for slot in budget.slots)
    return HoldoutEstimate(
        holdout=budget.holdout,
        budget_sha256=budget_sha256,
        budget=budget.budget,
        measured_commit=budget.code.commit,
        classes=dict(sorted(classes.items())),
        output_limit=output_limit,
        output_limit_source=output_limit_source,
        output_limit_note=_LIMIT_NOTES[output_limit_source if output_limit else None],
        pricing=pricing,
    )
