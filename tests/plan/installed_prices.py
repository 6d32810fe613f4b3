"""The installed genai-prices data, read through the library's own types, for tests that
must hold for any release of it.

Expected costs are computed here by plain arithmetic from the rates the library's data
holds for a model on the checked-in catalog's ``as_of`` day (`ModelInfo.get_prices`, the
library's own date rule), never through `continuity.plan.price_db`'s conversion, so a
data update moves a test's expectation and our result together. A test that needs a
feature (a tier, a cached-input price) takes a preferred model when the installed data
still gives it that feature, else the first model that has it, and fails only when no
model of the provider has it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time
from decimal import Decimal

import pytest
from genai_prices.data import providers
from genai_prices.data_snapshot import DataSnapshot
from genai_prices.types import ModelInfo, TieredPrices

from continuity.messages import Usage
from continuity.plan.price_catalog import Catalog, catalog_day
from continuity.plan.pricing import load_catalog, model_price

M = 1_000_000
DAY = catalog_day(load_catalog())  # the day the checked-in catalog takes prices on
NOON = datetime.combine(DAY, time(12), tzinfo=UTC)  # an instant inside that day
RATE_KEYS = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")

Rates = dict[str, Decimal | TieredPrices]


def empty_catalog(as_of: str = DAY.isoformat()) -> Catalog:
    """A catalog listing no model, so every price comes from genai-prices."""
    return Catalog(
        schema="continuity-pricing-v1", currency="USD", unit="", as_of=as_of, note="", models={}
    )


@dataclass(frozen=True)
class Installed:
    """One model of the installed data with the prices the library gives on `DAY`."""

    provider: str
    info: ModelInfo
    rates: Rates

    @property
    def id(self) -> str:
        return f"{self.provider}:{self.info.id}"


SNAPSHOT = DataSnapshot(providers=providers, from_auto_update=False)


@functools.cache
def installed(provider: str) -> tuple[Installed, ...]:
    """Every model of `provider` that we price (on `DAY`, from an empty catalog) and
    whose own id the library resolves to it, with the library's prices on `DAY`."""
    found = []
    for entry in (p for p in providers if p.id == provider):
        for info in entry.models:
            try:
                if SNAPSHOT.find_provider_model(info.id, None, provider, None)[1] is not info:
                    continue
            except LookupError:  # an id its own match rules do not take (ft:gpt-4o)
                continue
            if model_price(empty_catalog(), f"{provider}:{info.id}") is None:
                continue
            prices = info.get_prices(NOON)
            rates = {k: v for k, v in vars(prices).items() if v is not None}
            found.append(Installed(provider, info, rates))
    return tuple(found)


def pick(provider: str, prefer: str, feature: str, has: Callable[[Installed], bool]) -> Installed:
    """`prefer` when the installed data gives it `feature`, else the first model of
    `provider` that has it; a test failure when none has."""
    models = [m for m in installed(provider) if has(m)]
    for model in models:
        if model.info.id == prefer:
            return model
    if not models:
        pytest.fail(f"no {provider} model in the installed genai-prices has {feature}")
    return models[0]


def tier_starts(rates: Rates) -> list[int]:
    """Every tier threshold of any of the four token rates, ascending."""
    return sorted(
        {t.start for k in RATE_KEYS if isinstance(v := rates.get(k), TieredPrices) for t in v.tiers}
    )


def rate(rates: Rates, key: str, total_input: int) -> Decimal:
    """One key's rate for a call of `total_input` input tokens (cached included): the
    base, or the price of the highest tier whose start the input strictly exceeds. A
    cache rate the data leaves out is the input rate (cached tokens bill as input)."""
    value = rates.get(key)
    if value is None and key in ("cache_read_mtok", "cache_write_mtok"):
        value = rates["input_mtok"]
    assert value is not None, key
    if not isinstance(value, TieredPrices):
        return value
    price = value.base
    for tier in value.tiers:
        if total_input > tier.start:
            price = tier.price
    return price


def expected_usd(rates: Rates, usage: Usage) -> float:
    """The call's price by plain arithmetic: `usage.input` includes the tokens written
    to the cache, which pay the cache-write rate; cached reads pay the read rate."""
    total = usage.total_input
    parts = (
        (usage.input - usage.cache_write, "input_mtok"),
        (usage.output, "output_mtok"),
        (usage.cache_read, "cache_read_mtok"),
        (usage.cache_write, "cache_write_mtok"),
    )
    return float(sum(Decimal(n) * rate(rates, key, total) for n, key in parts if n) / M)


def has_flat_cached_input(model: Installed) -> bool:
    """Flat input and output rates and a cached-input rate below the input rate."""
    rates = model.rates
    flat = [rates.get(k) for k in ("input_mtok", "output_mtok", "cache_read_mtok")]
    if tier_starts(rates) or not all(isinstance(r, Decimal) for r in flat):
        return False
    return rates["cache_read_mtok"] < rates["input_mtok"]  # type: ignore[operator]


def has_input_tier(model: Installed, *keys: str) -> bool:
    """An input tier (above 20,000 tokens) with a price of its own, and every key of
    `keys` priced."""
    value = model.rates.get("input_mtok")
    return (
        isinstance(value, TieredPrices)
        and value.tiers[0].start > 20_000
        and value.tiers[0].price != value.base
        and all(k in model.rates for k in keys)
    )
