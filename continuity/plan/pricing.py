"""List prices per call: the catalog first, then genai-prices; unknown stays unknown.

A model's price comes from the pricing catalog (`continuity.plan.price_catalog`:
``fixtures/pricing/catalog.json`` or ``--pricing FILE``) when it lists the id, even
with unknown (``null``) rates, and otherwise from genai-prices' bundled data
(`continuity.plan.price_db`). A model neither knows has no price.

Prices are per million tokens. A call is priced at the highest tier whose
``above_input_tokens`` threshold its input strictly exceeds, counting cached input too.
A missing rate makes the call's cost ``None`` (unknown), never zero.

genai-prices' prices are those in force on the catalog's ``as_of`` day, never on the
day the plan is built or run: a price the library dates (a price change, or a
promotion that ends) is taken on that fixed day, so the same catalog and library
version price every call the same on any day. Move ``as_of`` to take later changes.

`PriceSource` names the prices a plan was estimated with (the catalog's bytes, the
genai-prices version and the day its prices are taken on); a real plan binds it, so
changing any of them changes the plan's confirmation digest.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.digest import digest_bytes
from continuity.messages import Usage
from continuity.plan.price_catalog import (
    CATALOG_SCHEMA,
    Catalog,
    ModelPrice,
    Tier,
    catalog_day,
    decode_catalog,
    default_catalog_path,
    load_catalog,
    read_catalog,
)
from continuity.plan.price_db import LIBRARY, database_price, library_version

__all__ = [
    "CATALOG_SCHEMA",
    "Catalog",
    "ModelPrice",
    "PriceSource",
    "Tier",
    "call_cost",
    "default_catalog_path",
    "describe_source",
    "load_catalog",
    "model_price",
    "price_source",
]


class PriceSource(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Where a plan's prices come from: the catalog (blake3 of its bytes, so its path
    does not matter) over a genai-prices version, whose prices are taken on the UTC day
    `prices_on` (the catalog's ``as_of``, ``YYYY-MM-DD``)."""

    catalog_blake3: str
    library: str = LIBRARY
    library_version: str
    prices_on: str


def price_source(path: Path | None = None) -> PriceSource:
    """The price source of the catalog at `path` (default: the checked-in one) and the
    installed genai-prices, taken on the catalog's ``as_of`` day.

    Raises:
        PricingError: ``pricing_invalid`` when the catalog cannot be read or is invalid
            (`decode_catalog`), or genai-prices is not installed.
    """
    source, data = read_catalog(path)
    catalog = decode_catalog(data, str(source))
    return PriceSource(
        catalog_blake3=digest_bytes(data),
        library_version=library_version(),
        prices_on=catalog_day(catalog, str(source)).isoformat(),
    )


def describe_source(source: PriceSource, catalog: Catalog | None = None) -> str:
    """One line naming the prices: the catalog's digest over genai-prices and the day
    its prices are taken on. (`catalog` is no longer read: the day is in `source`.)"""
    del catalog
    return (
        f"prices: catalog blake3 {source.catalog_blake3[:16]}, overriding "
        f"{source.library} {source.library_version} as of {source.prices_on} "
        "(bundled data, never updated online)"
    )


def model_price(catalog: Catalog, model: str) -> ModelPrice | None:
    """The price of `model`: the catalog's entry when it lists the id (it overrides),
    else genai-prices' on the catalog's ``as_of`` day, else None (unknown).

    Raises:
        PricingError: ``pricing_invalid`` for a genai-prices price out of range, or a
            catalog whose ``as_of`` is not a date.
    """
    listed = catalog.models.get(model)
    if listed is not None:
        return listed
    return database_price(model, catalog_day(catalog))


def _rates(price: ModelPrice, total_input: int) -> tuple[float | None, ...]:
    rates = (price.input, price.output, price.cache_read, price.cache_write)
    for tier in price.tiers:  # ascending: the last one strictly exceeded wins
        if total_input > tier.above_input_tokens:
            rates = (tier.input, tier.output, tier.cache_read, tier.cache_write)
    return rates


def call_cost(catalog: Catalog, model: str, usage: Usage) -> float | None:
    """The list price of one call in USD, or None when any rate the call needs is
    unknown (or neither the catalog nor genai-prices knows the model)."""
    price = model_price(catalog, model)
    if price is None:
        return None
    input_rate, output_rate, read_rate, write_rate = _rates(price, usage.total_input)
    # `input` includes the tokens written to the cache; they are priced at the write rate.
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
