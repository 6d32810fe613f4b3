"""List prices per call: the catalog first, then genai-prices; unknown stays unknown.

A model's price comes from the pricing catalog (`continuity.plan.price_catalog`:
``fixtures/pricing/catalog.json`` or ``--pricing FILE``) when it lists the id, even
with unknown (``null``) rates, and otherwise from genai-prices' bundled data
(`continuity.plan.price_db`). A model neither knows has no price.

Prices are per million tokens. A call is priced at the highest tier whose
``above_input_tokens`` threshold its input strictly exceeds, counting cached input too.
A missing rate makes the call's cost ``None`` (unknown), never zero. A call is priced by
the one rule in `continuity.providers.rates` (`rate_card` turns a price into its card):
exactly (`price_usage`) or as a float estimate (`estimate_price`, `call_cost`).

genai-prices' prices are those in force on the catalog's ``as_of`` day, never on the
day the plan is built or run: a price the library dates (a price change, or a
promotion that ends) is taken on that fixed day, so the same catalog and library
version price every call the same on any day. Move ``as_of`` to take later changes.

`PriceSource` names the prices a plan was estimated with (the catalog's bytes, the
genai-prices version and the day its prices are taken on); a real plan binds it, so
changing any of them changes the plan's confirmation digest.
"""

from __future__ import annotations

import functools
from decimal import Decimal
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
from continuity.providers.rates import RateCard, RateTier, estimate_price

__all__ = [
    "CATALOG_SCHEMA",
    "Catalog",
    "ModelPrice",
    "PriceSource",
    "Tier",
    "call_cost",
    "default_catalog_path",
    "describe_source",
    "exact_rate",
    "load_catalog",
    "model_price",
    "price_source",
    "rate_card",
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


def exact_rate(rate: float | None) -> Decimal | None:
    """A per-million rate as the decimal it was written as (``repr`` of a float is the
    shortest text that reads back to it: the catalog's ``0.1`` is 0.1, not the binary
    fraction near it)."""
    return None if rate is None else Decimal(repr(rate))


def _tier(price: ModelPrice | Tier) -> RateTier:
    def text(rate: float | None) -> str | None:
        exact = exact_rate(rate)
        return None if exact is None else str(exact)

    return RateTier(
        input=text(price.input),
        output=text(price.output),
        cache_read=text(price.cache_read),
        cache_write=text(price.cache_write),
    )


def rate_card(price: ModelPrice) -> RateCard:
    """`price` as an exact rate card: each rate the decimal text its float was written
    as (`exact_rate`), which reads back to the same float, so `price_usage` prices a
    call exactly and `estimate_price` in the same float as ever. The tiers keep their
    order: the last one a call's whole input strictly exceeds wins. (The cost cap's
    account is opened with these cards too: `continuity.runner.cost_account`.)"""
    return RateCard(
        base=_tier(price), tiers=tuple((t.above_input_tokens, _tier(t)) for t in price.tiers)
    )


def call_cost(catalog: Catalog, model: str, usage: Usage) -> float | None:
    """The list price of one call in USD as a float estimate (`estimate_price`), or None
    when any rate the call needs is unknown (or neither the catalog nor genai-prices
    knows the model)."""
    price = model_price(catalog, model)
    if price is None:
        return None
    return estimate_price(_estimate_card(price), usage)


@functools.lru_cache(maxsize=256)
def _estimate_card(price: ModelPrice) -> RateCard:
    """`rate_card(price)`, kept: a dry run prices every planned call several times over.
    For estimates only: equal prices share a card (``2 == 2.0``), and equal rates read
    back to the same floats, while an exact price keeps its own text's scale."""
    return rate_card(price)
