"""List rates and the one price of a call: exact rate cards, the tier rule, the worst rates.

A `RateCard` holds a model's list rates per million tokens as decimal text (exact when
read), a base tier and tiers that apply to a call whose whole input, cached included,
strictly exceeds their threshold (the highest such tier wins). `price_usage` prices one
call exactly, and is the only place a call is priced: the cost cap, the plan's catalog
prices (`continuity.plan.pricing.rate_card`) and settlement
(`continuity.spend.usage.catalog_cost`) all call it. `estimate_price` is its float view
for dry-run estimates. `RateCard.worst_rates` gives the highest input-side and output
rates a hold is priced at; `RateCard.bounded` fills an unknown cache rate with the
highest input-side rate, an upper bound for settlement.
"""

from __future__ import annotations

from decimal import Context, Decimal, DivisionByZero, Inexact, InvalidOperation, Overflow

import msgspec

from continuity.messages import Usage

__all__ = ["EXACT", "MILLION", "RateCard", "RateTier", "estimate_price", "price_usage"]

EXACT = Context(prec=60, traps=[Inexact, InvalidOperation, DivisionByZero, Overflow])
MILLION = Decimal(1_000_000)


class RateTier(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """USD per million tokens as decimal text; None: the catalog does not know it."""

    input: str | None
    output: str | None
    cache_read: str | None = None
    cache_write: str | None = None


class RateCard(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A model's list rates: the base, and tiers applied to a call whose whole input
    (cached included) strictly exceeds their threshold (the highest one wins)."""

    base: RateTier
    tiers: tuple[tuple[int, RateTier], ...] = ()

    def missing(self) -> list[str]:
        """The rates a hold needs and the card lacks (input and output, every tier)."""
        named = [("base", self.base), *((f"tier>{a}", t) for a, t in self.tiers)]
        return [
            f"{where}.{field}"
            for where, tier in named
            for field in ("input", "output")
            if getattr(tier, field) is None
        ]

    def tier_for(self, total_input: int) -> RateTier:
        chosen = self.base
        for above, tier in self.tiers:
            if total_input > above:
                chosen = tier
        return chosen

    def bounded(self) -> RateCard:
        """This card with every unknown cache rate replaced by the highest input-side
        rate (an upper bound on what a cached token can cost)."""
        worst = str(self.worst_rates()[0])

        def fill(tier: RateTier) -> RateTier:
            return msgspec.structs.replace(
                tier,
                cache_read=tier.cache_read if tier.cache_read is not None else worst,
                cache_write=tier.cache_write if tier.cache_write is not None else worst,
            )

        return RateCard(base=fill(self.base), tiers=tuple((a, fill(t)) for a, t in self.tiers))

    def worst_rates(self) -> tuple[Decimal, Decimal]:
        """The highest input-side rate and the highest output rate, over every tier."""
        tiers = [self.base, *(t for _, t in self.tiers)]
        inputs = [
            Decimal(rate)
            for t in tiers
            for rate in (t.input, t.cache_read, t.cache_write)
            if rate is not None
        ]
        outputs = [Decimal(t.output) for t in tiers if t.output is not None]
        return max(inputs), max(outputs)


def _parts(tier: RateTier, usage: Usage) -> tuple[tuple[int, str | None], ...]:
    """(tokens, rate) of each part of a call: uncached input (less what it writes to the
    cache; those tokens are priced at the write rate), output, cache reads, cache writes."""
    return (
        (usage.input - usage.cache_write, tier.input),
        (usage.output, tier.output),
        (usage.cache_read, tier.cache_read),
        (usage.cache_write, tier.cache_write),
    )


def price_usage(
    card: RateCard,
    usage: Usage,
    *,
    multiplier: Decimal | None = None,
    every_part: bool = False,
) -> Decimal | None:
    """The exact list price of one call in USD, or None when a rate it needs is unknown:
    each part's tokens at its rate (`_parts`), at the tier the whole input selects,
    times `multiplier` (a service tier's; None: none), over a million.

    A part of zero tokens needs no rate and is left out, unless `every_part`: then it
    counts too (its rate must be known), so its rate's decimal places are the sum's, as
    settlement has always written its cost (`continuity.spend.usage.catalog_cost`).
    The value never depends on `every_part`; only its scale (``usd_text``) may."""
    total = Decimal(0)
    for tokens, rate in _parts(card.tier_for(usage.total_input), usage):
        if tokens == 0 and not every_part:
            continue
        if rate is None:
            return None
        total = EXACT.add(total, EXACT.multiply(Decimal(tokens), Decimal(rate)))
    if multiplier is not None:
        total = EXACT.multiply(total, multiplier)
    return EXACT.divide(total, MILLION)


def estimate_price(card: RateCard, usage: Usage) -> float | None:
    """`price_usage` in float, for dry-run estimates: the same tier, parts and unknown
    rule, each part ``tokens * rate / 1e6`` added in part order.

    Not ``float(price_usage(...))``: that is the exact price rounded once, while this is
    the float sum the estimates and plan digests have always been built from (the two
    often differ in the last bit). A catalog rate's text is the decimal its float was
    written as (`continuity.plan.pricing.rate_card`), so ``float(rate)`` is that float."""
    total = 0.0
    for tokens, rate in _parts(card.tier_for(usage.total_input), usage):
        if tokens == 0:
            continue
        if rate is None:
            return None
        total += tokens * float(rate) / 1_000_000
    return total
