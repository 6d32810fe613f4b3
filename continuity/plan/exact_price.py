"""Exact list prices of single calls in `decimal.Decimal`, with the catalog's tier rule.

`continuity.plan.pricing.call_cost` prices in float for the dry run. Lookup pricing
sums thousands of calls and proposes a cap rounded *up* to the cent, where a float sum
that lands a hair above a cent boundary would add a cent that is not owed. Here every
rate is read as the decimal the catalog (or genai-prices) wrote, and sums stay exact
(the exact context, `exact_sum` and `ceil_to_cents` are `continuity.spend.money`'s,
re-exported here).

The tier rule is pricing's own (`continuity.plan.pricing`): the highest tier whose
``above_input_tokens`` the call's whole input strictly exceeds, cached input included,
and its rates apply to all of the call's tokens. A rate the call needs that is unknown
makes the call's price unknown (None), never zero.

`missing_terms` names what lookup pricing and readiness require of a model before any
number is approved: input, output and cache-read rates at the base and in every tier
(the scenarios read from the cache; they never write it), and the context and output
limits.
"""

from __future__ import annotations

from decimal import Decimal

from continuity.messages import Usage
from continuity.plan.pricing import ModelPrice, _rates
from continuity.spend.money import CENT, EXACT, MILLION, ceil_to_cents, exact_sum

__all__ = [
    "CENT",
    "EXACT",
    "MILLION",
    "ceil_to_cents",
    "exact_cost",
    "exact_rate",
    "exact_sum",
    "missing_terms",
    "tiered",
]


def exact_rate(rate: float | None) -> Decimal | None:
    """A per-million rate as the decimal it was written as (``repr`` of a float is the
    shortest text that reads back to it: the catalog's ``0.1`` is 0.1, not the binary
    fraction near it)."""
    return None if rate is None else Decimal(repr(rate))


def exact_cost(price: ModelPrice | None, usage: Usage) -> Decimal | None:
    """The list price of one call in USD, exactly; None when the model has no price or a
    rate the call needs is unknown. The parts are `call_cost`'s: uncached input (less
    what it writes to the cache) at the input rate, output, cache reads, cache writes."""
    if price is None:
        return None
    input_rate, output_rate, read_rate, write_rate = _rates(price, usage.total_input)
    parts = (
        (usage.input - usage.cache_write, input_rate),
        (usage.output, output_rate),
        (usage.cache_read, read_rate),
        (usage.cache_write, write_rate),
    )
    total = Decimal(0)
    for tokens, rate in parts:
        if tokens == 0:
            continue
        exact = exact_rate(rate)
        if exact is None:
            return None
        total = EXACT.add(total, EXACT.multiply(Decimal(tokens), exact))
    return EXACT.divide(total, MILLION)


def tiered(price: ModelPrice | None, total_input: int) -> bool:
    """Whether a call of `total_input` tokens (cached included) is priced above the base
    rate: it strictly exceeds the model's first tier."""
    return bool(price and price.tiers and total_input > price.tiers[0].above_input_tokens)


def missing_terms(price: ModelPrice | None) -> list[str]:
    """What a lookup price needs and `price` lacks, in a fixed order (empty: complete).

    A model with no price at all is ``price``; otherwise each missing rate is named by
    where it is (``input``, ``tier>200000.cache_read``), then ``context_window`` and
    ``max_output``."""
    if price is None:
        return ["price"]
    missing = [
        name
        for name, rate in (
            ("input", price.input),
            ("output", price.output),
            ("cache_read", price.cache_read),
        )
        if rate is None
    ]
    for tier in price.tiers:
        for name, rate in (
            ("input", tier.input),
            ("output", tier.output),
            ("cache_read", tier.cache_read),
        ):
            if rate is None:
                missing.append(f"tier>{tier.above_input_tokens}.{name}")
    if not price.context_window:  # a zero limit is no limit we could plan against
        missing.append("context_window")
    if not price.max_output:
        missing.append("max_output")
    return missing
