"""The pricing catalog file: list prices per model, with input tiers, and its loader.

Prices are per million tokens; a rate or limit left out (``null``) is unknown. The
catalog lists the seed's fictional models and any a user prices by hand; it overrides
genai-prices for every id it lists (`continuity.plan.pricing`). Its ``as_of`` date
(``YYYY-MM-DD``, a UTC day) is also the day genai-prices' date-conditional prices are
taken at, so the catalog's bytes fix every price (`catalog_day`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path

import msgspec

from continuity.errors import PricingError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes

__all__ = [
    "CATALOG_SCHEMA",
    "Catalog",
    "ModelPrice",
    "Tier",
    "catalog_day",
    "decode_catalog",
    "default_catalog_path",
    "load_catalog",
    "read_catalog",
]

CATALOG_SCHEMA = "continuity-pricing-v1"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


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


def catalog_day(catalog: Catalog, where: str = "catalog") -> date:
    """The catalog's ``as_of`` as a date: the day genai-prices' prices are taken at.

    Raises:
        PricingError: ``pricing_invalid`` at ``{where}:$.as_of`` when it is not a
            ``YYYY-MM-DD`` calendar date.
    """
    try:
        if not _DAY.fullmatch(catalog.as_of):
            raise ValueError(catalog.as_of)
        return date.fromisoformat(catalog.as_of)
    except ValueError:
        raise PricingError(
            f"as_of {catalog.as_of!r} is not a YYYY-MM-DD date", location=f"{where}:$.as_of"
        ) from None


def decode_catalog(data: bytes, source: str) -> Catalog:
    """Decode and check a catalog's bytes (`source` names them in errors).

    Raises:
        PricingError: ``pricing_invalid`` (wrong schema, an ``as_of`` that is not a
            date, negative price, tiers out of order) with the file and field.
    """
    try:
        catalog = msgspec.json.decode(data, type=Catalog)
    except msgspec.MsgspecError as exc:
        raise PricingError(str(exc), location=source) from None
    if catalog.schema != CATALOG_SCHEMA:
        raise PricingError(f"schema {catalog.schema!r}", location=f"{source}:$.schema")
    catalog_day(catalog, source)
    for name, price in catalog.models.items():
        rates = [price.input, price.output, price.cache_read, price.cache_write]
        rates += [r for t in price.tiers for r in (t.input, t.output, t.cache_read, t.cache_write)]
        if any(r is not None and r < 0 for r in rates):
            raise PricingError("negative price", location=f"{source}:$.models.{name}")
        thresholds = [t.above_input_tokens for t in price.tiers]
        if thresholds != sorted(set(thresholds)):
            raise PricingError("tiers must rise strictly", location=f"{source}:$.models.{name}")
    return catalog


def read_catalog(path: Path | None = None) -> tuple[Path, bytes]:
    """The catalog file (`path` or the default) and its bytes.

    Raises:
        PricingError: ``pricing_invalid`` when it cannot be read, located at the file.
        InputError: ``input_not_a_file`` (a directory, device, FIFO...),
            ``input_too_large`` (over `DOCUMENT_MAX_BYTES`).
    """
    source = path or default_catalog_path()
    try:
        return source, read_user_bytes(source, limit=DOCUMENT_MAX_BYTES, what="the pricing catalog")
    except OSError as exc:
        raise PricingError(
            f"cannot read the pricing catalog: {exc.strerror}", location=str(source)
        ) from None


def load_catalog(path: Path | None = None) -> Catalog:
    """Load and check a catalog (`decode_catalog`).

    Raises:
        PricingError: ``pricing_invalid`` (unreadable, or as `decode_catalog`) with the
            file and field.
    """
    source, data = read_catalog(path)
    return decode_catalog(data, str(source))
