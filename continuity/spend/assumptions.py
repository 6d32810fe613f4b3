"""assumed-v1: the registered assumptions a cap-gated lookup pilot reserves money by.

`ASSUMED_V1` is a deeply frozen, versioned constant (frozen structs of numbers, texts
and tuples; nothing in it can be rebound or mutated). These are *assumptions*, not
evidence of what a backend enforces: each settlement checks their observable
consequences (`continuity.spend.usage`), and an overrun falsifies them, but a stop
cannot undo spend that already happened.

=====================================  ==================================================
assumption                             registered value / check
=====================================  ==================================================
literal input tokens <= UTF-8 bytes    the whole serialized payload is counted in U; the
                                       reported input must be <= U
framing H                              4,096 per request + 256 per input item + 1,024
                                       per reasoning item + 1,024 per tool + 256 per
                                       schema property (recursive) + 4,096 if the
                                       payload has instructions
output includes reasoning              reported reasoning <= output; never added twice
restored reasoning <= prior output     U adds the run's settled raw output; an unknown
                                       predecessor blocks the next admission
catalog maximum output                 128,000; a reported output above it falsifies
                                       the bound
maximum tier multiplier                2x (default 1x, flex 0.5x, priority 2x); an
                                       unknown tier stops, an absent one is priced at 2x
reservation Rmax                       2 x (272,000 x 2.5 + 128,000 x 10) / 10^6 = $3.92
=====================================  ==================================================

The rates (per million tokens: input 2, output 10, cache read 0.1, cache write 2.5)
are the Sol catalog entry's, and the input tier above I = 272,000 is excluded by the
envelope itself (the threshold is strict). A reasoning item is also an input item: it
is charged its 256 and its 1,024 (H over-counts on purpose).

`check_assumptions` refuses a registry that differs from this one in any value
(``lookup_assumptions_changed``) and a stated maximum that is not the one the registry
computes (``lookup_rmax_altered``).

**catalog-bounded-v1** (`catalog_bounded`) is the registry of a reader on a vendor API
that enforces the output cap it is sent (``openai:<model>`` on OpenAI's Responses API:
`VENDOR_PROVIDERS`). It keeps every assumption above but four, which come from the
reader's catalog entry and the registration: the model, the rates, the envelope I (the
catalog's context window: the vendor refuses a longer request before generating) and
O, the per-request output cap the guard sends as ``max_output_tokens``. Rmax is the
same formula over them. `check_assumptions` checks a catalog-bounded registry against
the one those four values build; that they are the catalog's (O at most its maximum
output, no input tier inside the envelope) is
`continuity.spend.descriptor.check_catalog`'s check of the pilot's catalog binding.
"""

from __future__ import annotations

from decimal import Decimal

import msgspec

from continuity.digest import value_digest
from continuity.errors import SpendError
from continuity.spend.money import EXACT, MILLION, usd_text

__all__ = [
    "ASSUMED_V1",
    "ASSUMPTIONS_VERSION",
    "CATALOG_BOUNDED_VERSION",
    "VENDOR_PROVIDERS",
    "Assumptions",
    "Framing",
    "Rates",
    "assumptions_digest",
    "catalog_bounded",
    "check_assumptions",
    "reservation",
    "tier_multiplier",
]

ASSUMPTIONS_VERSION = "assumed-v1"
CATALOG_BOUNDED_VERSION = "catalog-bounded-v1"
# providers whose vendor API enforces the output cap a guarded request sends
VENDOR_PROVIDERS = frozenset({"openai"})


class Rates(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """USD per million tokens, as decimal text (exact when read)."""

    input: str
    output: str
    cache_read: str
    cache_write: str


class Framing(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The framing allowance H, in tokens."""

    per_request: int
    per_input_item: int
    per_reasoning_item: int
    per_tool: int
    per_schema_property: int
    instructions: int


class Assumptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    version: str
    model: str
    input_envelope: int  # I
    max_output: int  # O, the catalog's maximum output
    max_requests: int  # per probe run
    input_tokens_at_most_utf8_bytes: bool
    output_includes_reasoning: bool
    restored_reasoning_at_most_prior_output: bool
    framing: Framing
    rates: Rates
    tier_threshold_strict: bool
    tiers: tuple[tuple[str, str], ...]  # (service tier, multiplier)
    absent_tier_multiplier: str
    max_tier_multiplier: str
    rmax: str  # USD


ASSUMED_V1 = Assumptions(
    version=ASSUMPTIONS_VERSION,
    model="openai-codex:gpt-6.1-sol",
    input_envelope=272_000,
    max_output=128_000,
    max_requests=10,
    input_tokens_at_most_utf8_bytes=True,
    output_includes_reasoning=True,
    restored_reasoning_at_most_prior_output=True,
    framing=Framing(
        per_request=4096,
        per_input_item=256,
        per_reasoning_item=1024,
        per_tool=1024,
        per_schema_property=256,
        instructions=4096,
    ),
    rates=Rates(input="2", output="10", cache_read="0.1", cache_write="2.5"),
    tier_threshold_strict=True,
    tiers=(("default", "1"), ("flex", "0.5"), ("priority", "2")),
    absent_tier_multiplier="2",
    max_tier_multiplier="2",
    rmax="3.92",
)


def assumptions_digest(assumptions: Assumptions) -> str:
    """The blake3 digest of the whole registry: formula inputs, values and rates."""
    return value_digest(("continuity-lookup-assumptions", msgspec.to_builtins(assumptions)))


def reservation(assumptions: Assumptions) -> Decimal:
    """Rmax = max tier x (I x the highest input-class rate + O x the output rate) / 10^6,
    exactly. The input class includes cache writes (2.5 > 2), not just uncached input."""
    rates = assumptions.rates
    input_class = max(Decimal(rates.input), Decimal(rates.cache_read), Decimal(rates.cache_write))
    tokens = EXACT.add(
        EXACT.multiply(Decimal(assumptions.input_envelope), input_class),
        EXACT.multiply(Decimal(assumptions.max_output), Decimal(rates.output)),
    )
    return EXACT.divide(EXACT.multiply(Decimal(assumptions.max_tier_multiplier), tokens), MILLION)


def tier_multiplier(assumptions: Assumptions, tier: object) -> Decimal | None:
    """The price multiplier of a raw service tier: the registered one, the absent-tier
    one for a missing or null tier, None for any other value (unknown: it stops)."""
    if tier is None:
        return Decimal(assumptions.absent_tier_multiplier)
    for name, multiplier in assumptions.tiers:
        if tier == name:
            return Decimal(multiplier)
    return None


def catalog_bounded(
    model: str, *, rates: Rates, context_window: int, output_cap: int
) -> Assumptions:
    """The catalog-bounded-v1 registry of `model` (see the module doc)."""
    base = msgspec.structs.replace(
        ASSUMED_V1,
        version=CATALOG_BOUNDED_VERSION,
        model=model,
        input_envelope=context_window,
        max_output=output_cap,
        rates=rates,
        rmax="0",
    )
    return msgspec.structs.replace(base, rmax=usd_text(reservation(base)))


def _reference(assumptions: Assumptions, location: str) -> Assumptions:
    """The registry `assumptions` must equal: assumed-v1, or the catalog-bounded one its
    own model, rates and limits build (for a vendor provider, positive limits)."""
    if assumptions.version != CATALOG_BOUNDED_VERSION:
        return ASSUMED_V1
    provider = assumptions.model.partition(":")[0]
    if provider not in VENDOR_PROVIDERS:
        raise SpendError(
            f"{CATALOG_BOUNDED_VERSION} is for a vendor API that enforces the output cap, "
            f"not {assumptions.model}",
            code="lookup_assumptions_changed",
            location=f"{location}.model",
        )
    if assumptions.input_envelope <= 0 or assumptions.max_output <= 0:
        raise SpendError(
            "the envelope and the output cap are positive token counts",
            code="lookup_assumptions_changed",
            location=f"{location}.max_output",
        )
    return catalog_bounded(
        assumptions.model,
        rates=assumptions.rates,
        context_window=assumptions.input_envelope,
        output_cap=assumptions.max_output,
    )


def check_assumptions(assumptions: Assumptions, *, location: str = "assumptions") -> str:
    """The registry's digest, after checking it is assumed-v1 exactly, or catalog-bounded-v1
    built from its own model, rates and limits.

    Raises:
        SpendError: ``lookup_assumptions_changed`` when any registered value differs
            from the reference registry's; ``lookup_rmax_altered`` when its stated Rmax
            is not the one its own values compute.
    """
    reference = _reference(assumptions, location)
    changed = [
        field
        for field in Assumptions.__struct_fields__
        if field != "rmax" and getattr(assumptions, field) != getattr(reference, field)
    ]
    if changed:
        raise SpendError(
            f"the registry differs from {reference.version} in {', '.join(changed)}",
            code="lookup_assumptions_changed",
            location=f"{location}.{changed[0]}",
        )
    computed = reservation(assumptions)
    if assumptions.rmax != reference.rmax or Decimal(assumptions.rmax) != computed:
        raise SpendError(
            f"the registry states Rmax ${assumptions.rmax} but its values compute ${computed}",
            code="lookup_rmax_altered",
            location=f"{location}.rmax",
        )
    return assumptions_digest(assumptions)
