"""One price function: `price_usage` (exact) and `estimate_price` (its float view).

Each property compares the one function with the formula it replaced, written out here
as it was: the plan's float `call_cost` and exact `exact_cost` (over `ModelPrice`), the
cost cap's `price_usage` (over a `RateCard`) and settlement's `catalog_cost` (over a raw
`UsageRecord` and a service-tier multiplier). Floats must be bit-identical (they feed
plan digests and printed estimates) and Decimals identical in value *and* scale
(``as_tuple``: settlement writes its cost with ``usd_text``, which keeps the scale).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.messages import Usage
from continuity.plan.pricing import ModelPrice, Tier, call_cost, load_catalog, rate_card
from continuity.providers.rates import (
    EXACT,
    MILLION,
    RateCard,
    RateTier,
    estimate_price,
    price_usage,
)
from continuity.spend.assumptions import ASSUMED_V1, Rates, tier_multiplier
from continuity.spend.usage import UsageRecord, catalog_cost

# -- the replaced formulas, as they were -------------------------------------------------


def old_rates(price: ModelPrice, total_input: int) -> tuple[float | None, ...]:
    rates = (price.input, price.output, price.cache_read, price.cache_write)
    for tier in price.tiers:
        if total_input > tier.above_input_tokens:
            rates = (tier.input, tier.output, tier.cache_read, tier.cache_write)
    return rates


def old_call_cost(price: ModelPrice, usage: Usage) -> float | None:
    input_rate, output_rate, read_rate, write_rate = old_rates(price, usage.total_input)
    parts = (
        (usage.input - usage.cache_write, input_rate),
        (usage.output, output_rate),
        (usage.cache_read, read_rate),
        (usage.cache_write, write_rate),
    )
    total = 0.0
    for tokens, rate in parts:
        if tokens == 0:
            continue
        if rate is None:
            return None
        total += tokens * rate / 1_000_000
    return total


def old_exact_cost(price: ModelPrice, usage: Usage) -> Decimal | None:
    input_rate, output_rate, read_rate, write_rate = old_rates(price, usage.total_input)
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
        if rate is None:
            return None
        total = EXACT.add(total, EXACT.multiply(Decimal(tokens), Decimal(repr(rate))))
    return EXACT.divide(total, MILLION)


def old_price_usage(card: RateCard, usage: Usage) -> Decimal | None:
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


def old_catalog_cost(usage: UsageRecord, tier: str | None, rates: Rates) -> Decimal:
    multiplier = tier_multiplier(ASSUMED_V1, tier)
    assert multiplier is not None
    read = usage.cache_read or 0
    write = usage.cache_write or 0
    parts = (
        (usage.input - read - write, Decimal(rates.input)),
        (read, Decimal(rates.cache_read)),
        (write, Decimal(rates.cache_write)),
        (usage.output, Decimal(rates.output)),
    )
    total = Decimal(0)
    for tokens, rate in parts:
        total = EXACT.add(total, EXACT.multiply(Decimal(tokens), rate))
    return EXACT.divide(EXACT.multiply(total, multiplier), MILLION)


CATALOG = load_catalog()

# -- strategies --------------------------------------------------------------------------

CATALOG_LIKE = [0.0, 0.01, 0.075, 0.1, 0.125, 0.25, 0.3, 1.25, 2.5, 3.0, 3.75, 10.0, 15.0, 75.0]
float_rates = st.one_of(
    st.sampled_from(CATALOG_LIKE),
    st.floats(min_value=1e-6, max_value=1_000),  # any float a price could be
    st.decimals(min_value=0, max_value=100, places=4).map(float),
)
maybe_rate = st.one_of(st.none(), float_rates, float_rates)  # mostly known
# Token counts with many trailing zeros too: they decide the scale of an exact quotient.
tokens = st.one_of(st.integers(0, 2_000_000), st.integers(0, 300).map(lambda n: n * 10_000_000))
usages = st.builds(Usage, input=tokens, cache_read=tokens, cache_write=tokens, output=tokens)


@st.composite
def model_prices(draw: st.DrawFn) -> ModelPrice:
    def tier(above: int) -> Tier:
        rates = [draw(maybe_rate) for _ in range(4)]
        return Tier(
            above, input=rates[0], output=rates[1], cache_read=rates[2], cache_write=rates[3]
        )

    base = tier(0)
    starts = sorted(draw(st.sets(st.integers(0, 3_000_000), max_size=3)))
    return ModelPrice(
        input=base.input,
        output=base.output,
        cache_read=base.cache_read,
        cache_write=base.cache_write,
        tiers=tuple(tier(above) for above in starts),
    )


decimal_texts = st.one_of(
    st.sampled_from(["0", "0.1", "0.10", "2", "2.5", "10", "1E+1", "0.0000001", "3.750"]),
    st.decimals(min_value=0, max_value=1_000, places=6).map(str),
    st.decimals(min_value=0, max_value=1_000, places=0).map(str),
)


# -- the float view ----------------------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(price=model_prices(), usage=usages)
def test_the_float_view_is_the_old_float_formula_bit_for_bit(
    price: ModelPrice, usage: Usage
) -> None:
    new, old = estimate_price(rate_card(price), usage), old_call_cost(price, usage)
    assert (new is None) == (old is None)
    assert repr(new) == repr(old)  # bit-identical (repr tells -0.0 from 0.0 too)
    listed = msgspec.structs.replace(CATALOG, models={"test:model": price})
    assert repr(call_cost(listed, "test:model", usage)) == repr(old)  # its cached card too


def test_the_float_view_is_not_the_exact_price_rounded_once() -> None:
    """Why the float view keeps its own sum: rounding the exact price once differs in
    the last bit for many calls, and the dry run's estimates are built from the sum."""
    card = RateCard(base=RateTier(input="0.1", output="0.3", cache_read="0.01"))
    usage = Usage(input=3, cache_read=3, output=3)
    exact = price_usage(card, usage)
    assert exact is not None and str(exact) == "0.00000123"
    assert estimate_price(card, usage) == 3 * 0.1 / 1e6 + 3 * 0.3 / 1e6 + 3 * 0.01 / 1e6
    assert estimate_price(card, usage) == 1.2299999999999999e-06 != float(exact)


# -- the exact price ---------------------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(price=model_prices(), usage=usages)
def test_the_plans_exact_price_is_unchanged_and_exact(price: ModelPrice, usage: Usage) -> None:
    new, old = price_usage(rate_card(price), usage), old_exact_cost(price, usage)
    assert (new is None) == (old is None)
    if new is None or old is None:
        return
    assert new.as_tuple() == old.as_tuple()
    rates = old_rates(price, usage.total_input)
    counts = (usage.input - usage.cache_write, usage.output, usage.cache_read, usage.cache_write)
    truth = sum(
        (Fraction(n) * Fraction(repr(r)) for n, r in zip(counts, rates, strict=True) if n),
        Fraction(0),
    )
    assert Fraction(new) == truth / 1_000_000


@st.composite
def cards(draw: st.DrawFn) -> RateCard:
    def tier() -> RateTier:
        texts = st.one_of(st.none(), decimal_texts, decimal_texts)
        return RateTier(
            input=draw(texts), output=draw(texts), cache_read=draw(texts), cache_write=draw(texts)
        )

    starts = sorted(draw(st.sets(st.integers(0, 3_000_000), max_size=2)))
    return RateCard(base=tier(), tiers=tuple((above, tier()) for above in starts))


@settings(max_examples=500, deadline=None)
@given(card=cards(), usage=usages)
def test_the_cost_caps_price_is_unchanged(card: RateCard, usage: Usage) -> None:
    new, old = price_usage(card, usage), old_price_usage(card, usage)
    assert (new is None) == (old is None)
    if new is not None and old is not None:
        assert new.as_tuple() == old.as_tuple()


record_counts = st.one_of(st.just(msgspec.UNSET), tokens)
records = st.builds(
    UsageRecord,
    input=st.integers(1, 3_000_000),
    output=tokens,
    cache_read=record_counts,
    cache_write=record_counts,
)
registered = st.builds(
    Rates,
    input=decimal_texts,
    output=decimal_texts,
    cache_read=decimal_texts,
    cache_write=decimal_texts,
)


@settings(max_examples=500, deadline=None)
@given(
    usage=records,
    tier=st.sampled_from([None, "default", "flex", "priority"]),
    rates=registered,
)
def test_the_settled_cost_is_unchanged_in_value_and_scale(
    usage: UsageRecord, tier: str | None, rates: Rates
) -> None:
    assumptions = msgspec.structs.replace(ASSUMED_V1, rates=rates)
    new, old = catalog_cost(usage, tier, assumptions), old_catalog_cost(usage, tier, rates)
    assert new.as_tuple() == old.as_tuple()
    assert str(new) == str(old)


def test_every_part_changes_the_scale_never_the_value() -> None:
    """A zero-token part counts toward the scale only when every part counts."""
    card = RateCard(base=RateTier(input="2", output="10", cache_read="0.125", cache_write="2.5"))
    usage = Usage(input=10_000_000, output=0)
    skipped = price_usage(card, usage)
    counted = price_usage(card, usage, every_part=True)
    assert skipped == counted == Decimal(20)
    assert (str(skipped), str(counted)) == ("20", "20.000")


def test_a_zero_token_part_needs_no_rate_unless_every_part_counts() -> None:
    card = RateCard(base=RateTier(input="2", output="10"))
    usage = Usage(input=1_000, output=100)
    assert price_usage(card, usage) == Decimal("0.003")
    assert estimate_price(card, usage) == 1_000 * 2.0 / 1e6 + 100 * 10.0 / 1e6
    assert price_usage(card, usage, every_part=True) is None
    assert price_usage(card, Usage(input=1_000, cache_read=1, output=1)) is None
    assert estimate_price(card, Usage(input=1_000, cache_read=1, output=1)) is None


def test_the_multiplier_applies_before_the_division() -> None:
    card = RateCard(base=RateTier(input="2", output="1"))
    usage = Usage(input=1, output=0)
    # (1 x 2) x 0.5 / 10^6 is 0.000001, as settlement wrote it; dividing first would
    # give the same value at another scale (0.0000010).
    assert str(price_usage(card, usage, multiplier=Decimal("0.5"))) == "0.000001"
