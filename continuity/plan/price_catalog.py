"""The pricing catalog file: list prices per model, with input tiers, and its loader.

Prices are per million tokens; a rate or limit left out (``null``) is unknown. The
catalog lists the seed's fictional models and any a user prices by hand; it overrides
genai-prices for every id it lists (`continuity.plan.pricing`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from continuity.errors import PricingError

__all__ = [
    "CATALOG_SCHEMA",
    "Catalog",
    "ModelPrice",
    "Tier",
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
