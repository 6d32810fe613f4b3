"""Exact list prices in `decimal.Decimal`: rates as written, the tier rule, what is missing.

`continuity.plan.pricing.call_cost` prices in float for the dry run. Lookup pricing
sums thousands of calls and proposes a cap rounded *up* to the cent, where a float sum
that lands a hair above a cent boundary would add a cent that is not owed. There a call
is priced exactly by the one price function, `continuity.providers.rates.price_usage`,
over the price's rate card (`continuity.plan.pricing.rate_card`): every rate is read as
the decimal the catalog (or genai-prices) wrote (`continuity.plan.pricing.exact_rate`),
and sums stay exact (the exact context, `exact_sum` and `ceil_to_cents` are
`continuity.spend.money`'s, re-exported here).

The tier rule is the rate card's: the highest tier whose ``above_input_tokens`` the
call's whole input strictly exceeds, cached input included, and its rates apply to all
of the call's tokens (`tiered` says whether a call is above the base). A rate the call
needs that is unknown makes the call's price unknown (None), never zero.

`missing_terms` names what lookup pricing and readiness require of a model before any
number is approved: input, output and cache-read rates at the base and in every tier
(the scenarios read from the cache; they never write it), and the context and output
limits.
"""

from __future__ import annotations

from continuity.plan.pricing import ModelPrice
from continuity.spend.money import CENT, EXACT, MILLION, ceil_to_cents, exact_sum

__all__ = [
    "CENT",
    "EXACT",
    "MILLION",
    "ceil_to_cents",
    "exact_sum",
    "missing_terms",
    "tiered",
]


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
