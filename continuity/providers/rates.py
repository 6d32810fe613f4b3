"""The cost cap's list rates: exact rate cards, the tier rule and the worst rates.

A `RateCard` holds a model's list rates per million tokens as decimal text (exact when
read), a base tier and tiers that apply to a call whose whole input, cached included,
strictly exceeds their threshold (the highest such tier wins). `price_usage` prices one
call exactly; `RateCard.worst_rates` gives the highest input-side and output rates a
hold is priced at; `RateCard.bounded` fills an unknown cache rate with the highest
input-side rate, an upper bound for settlement.
"""

from __future__ import annotations

from decimal import Context, Decimal, DivisionByZero, Inexact, InvalidOperation, Overflow

import msgspec

from continuity.messages import Usage

__all__ = ["EXACT", "MILLION", "RateCard", "RateTier", "price_usage"]

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


def price_usage(card: RateCard, usage: Usage) -> Decimal | None:
    """The exact list price of one call in USD, or None when a rate it needs is unknown:
    uncached input (less what it writes to the cache) at the input rate, output, cache
    reads and cache writes, at the tier its whole input selects."""
    tier = card.tier_for(usage.total_input)
    parts = (
        (usage.input - usage.cache_write, tier.input),
        (usage.output, tier.output),
        (usage.cache_read, tier.cache_read),
        (usage.cache_write, tier.cache_write),
    )
    total = Decimal(0)
    for tokens, rate in parts:
        if tokens == 0:
            continue
        if rate is None:
            return None
        total = EXACT.add(total, EXACT.multiply(Decimal(tokens), Decimal(rate)))
    return EXACT.divide(total, MILLION)
