"""The pricing catalog: list prices per model, with input tiers; unknown stays unknown.

Prices are per million tokens. A call is priced at the highest tier whose
``above_input_tokens`` threshold its input strictly exceeds, counting cached input too.
A missing rate makes the call's cost ``None`` (unknown), never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from continuity.errors import PricingError
from continuity.messages import Usage

__all__ = [
    "CATALOG_SCHEMA",
    "Catalog",
    "ModelPrice",
    "Tier",
    "call_cost",
    "default_catalog_path",
    "load_catalog",
]

CATALOG_SCHEMA = "continuity-pricing-v1"


class Tier(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    above_input_tokens: int
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


class ModelPrice(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    context_window: int | None = None
    max_output: int | None = None
    tiers: tuple[Tier, ...] = ()


class Catalog(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    schema: str
    currency: str
    unit: str
    as_of: str
    note: str
    models: Mapping[str, ModelPrice]


def default_catalog_path() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures" / "pricing" / "catalog.json"


def load_catalog(path: Path | None = None) -> Catalog:
    """Load and check a catalog.

    Raises:
        PricingError: ``pricing_invalid`` (unreadable, wrong schema, negative price,
            tiers out of order) with the file and field.
    """
    source = path or default_catalog_path()
    try:
        catalog = msgspec.json.decode(source.read_bytes(), type=Catalog)
    except OSError as exc:
        raise PricingError(
            f"cannot read the pricing catalog: {exc.strerror}", location=str(source)
        ) from None
    except msgspec.MsgspecError as exc:
        raise PricingError(str(exc), location=str(source)) from None
    if catalog.schema != CATALOG_SCHEMA:
        raise PricingError(f"schema {catalog.schema!r}", location=f"{source}:$.schema")
    for name, price in catalog.models.items():
        rates = [price.input, price.output, price.cache_read, price.cache_write]
        rates += [r for t in price.tiers for r in (t.input, t.output, t.cache_read, t.cache_write)]
        if any(r is not None and r < 0 for r in rates):
            raise PricingError("negative price", location=f"{source}:$.models.{name}")
        thresholds = [t.above_input_tokens for t in price.tiers]
        if thresholds != sorted(set(thresholds)):
            raise PricingError("tiers must rise strictly", location=f"{source}:$.models.{name}")
    return catalog


def _rates(price: ModelPrice, total_input: int) -> tuple[float | None, ...]:
    rates = (price.input, price.output, price.cache_read, price.cache_write)
    for tier in price.tiers:  # ascending: the last one strictly exceeded wins
        if total_input > tier.above_input_tokens:
            rates = (tier.input, tier.output, tier.cache_read, tier.cache_write)
    return rates


def call_cost(catalog: Catalog, model: str, usage: Usage) -> float | None:
    """The list price of one call in the catalog's currency, or None when any rate the
    call needs is unknown (or the model is not in the catalog)."""
    price = catalog.models.get(model)
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
