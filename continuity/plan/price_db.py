"""Real model prices from genai-prices (pydantic's price database), as catalog entries.

A model the pricing catalog does not list is looked up here by its ``provider:model``
id: the provider part names genai-prices' provider (``openai``, ``anthropic``,
``google`` ...; its own provider matching applies), the model part is matched by the
library's model rules (``anthropic:claude-sonnet-4-5-20250929`` is
``claude-sonnet-4-5``). The library's price is converted to a catalog `ModelPrice`, so
every call is priced by one rule (`continuity.providers.rates.price_usage`):

- ``input_mtok``, ``output_mtok``, ``cache_read_mtok`` and ``cache_write_mtok`` become
  the four rates; a cache rate the database leaves out is the input rate, as the
  library itself bills it (cached tokens fall back to their parent unit, input);
- per-key tiers (``TieredPrices``, the long-context prices) become the catalog's tier
  rows: one row per distinct threshold, each key at the rate it has above that
  threshold. Both the library and the catalog apply the highest tier whose start the
  call's whole input (cached included) strictly exceeds, to all of its tokens;
- prices for what a text call never uses (audio, images, video, documents, web or file
  searches, one-hour cache writes) are ignored; any other price (per request, separate
  reasoning or text-modality rates) makes the model **unknown**, never cheaper;
- the model's context window is its input limit; it lists no output limit.

A model whose prices change over time is priced on one given UTC day, never at the
clock's "now" (`prices_on`): the price in force on that day by the library's own rule
(the last entry whose start date has come, else the first). A model whose price changes
within a day (time-of-day prices, such as DeepSeek's off-peak rates, which can be
higher or lower) is **unknown**: a plan cannot know when its calls run. Request-specific
price variants (a service tier chosen per request) are not applied: calls choose none.

Only the data bundled with the installed package is read: never the network and never
an auto-updated snapshot (``genai_prices.UpdatePrices`` installs a process-wide one,
which this module does not consult), so a price is a function of the installed version
and the day, both of which the plan binds (`continuity.plan.pricing.PriceSource`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import math
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from continuity.errors import PricingError
from continuity.plan.price_catalog import ModelPrice, Tier

if TYPE_CHECKING:
    from genai_prices import types as genai
    from genai_prices.data_snapshot import DataSnapshot

__all__ = ["LIBRARY", "convert_price", "database_price", "library_version", "prices_on"]

LIBRARY = "genai-prices"
_RATES = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")
# Prices a text-only chat call without server tools never incurs.
_IGNORED_PARTS = ("audio", "image", "video", "document", "searches")
_IGNORED_KEYS = frozenset({"cache_write_1h_mtok"})  # calls write the default 5-minute cache


def library_version() -> str:
    """The installed genai-prices version (its bundled data's identity).

    Raises:
        PricingError: ``pricing_invalid`` when genai-prices is not installed.
    """
    try:
        return importlib.metadata.version(LIBRARY)
    except importlib.metadata.PackageNotFoundError:
        raise PricingError(
            "genai-prices is not installed; run: python3 -m pip install genai-prices",
            location=LIBRARY,
        ) from None


@functools.cache
def _snapshot() -> DataSnapshot:
    """The bundled data only (not `genai_prices.data_snapshot.get_snapshot`, which
    returns an auto-updated snapshot once `UpdatePrices` has run)."""
    from genai_prices.data import providers
    from genai_prices.data_snapshot import DataSnapshot

    return DataSnapshot(providers=providers, from_auto_update=False)


def prices_on(info: genai.ModelInfo, day: date) -> genai.ModelPrice | None:
    """The model's prices in force all through UTC `day`, or None when they change
    within the day (a time-of-day or any other non-date condition may apply after the
    day's price).

    The day's price follows the library's rule (`genai_prices.types.ModelInfo.get_prices`):
    of the conditional prices, the last whose condition holds wins, and the first when
    none holds. Only the date is read; a clock never is.
    """
    from genai_prices.types import ModelPrice as GenaiPrice
    from genai_prices.types import StartDateConstraint

    if isinstance(info.prices, GenaiPrice):
        return info.prices
    entries = info.prices
    in_force = [
        i
        for i, entry in enumerate(entries)
        if entry.constraint is None
        or (
            isinstance(entry.constraint, StartDateConstraint) and entry.constraint.start_date <= day
        )
    ]
    chosen = in_force[-1] if in_force else 0
    # A later date condition has not started by `day`; any other later condition (a
    # time of day) would override the day's price for part of the day.
    for entry in entries[chosen + 1 :]:
        if not isinstance(entry.constraint, StartDateConstraint):
            return None
    return entries[chosen].prices


@functools.cache
def database_price(model: str, day: date) -> ModelPrice | None:
    """The price genai-prices' bundled data gives ``provider:model`` on UTC `day`, as a
    catalog entry, or None when the provider or model is unknown to it, its price
    changes within the day, or it is billed for something a call's token counts cannot
    price.

    Raises:
        PricingError: ``pricing_invalid`` for a price the database holds that is not a
            finite, non-negative number.
    """
    provider_id, _, name = model.partition(":")
    if not provider_id or not name:
        return None
    version = library_version()  # a missing library is an error, not an unknown price
    try:
        provider, info = _snapshot().find_provider_model(name, None, provider_id, None)
    except LookupError:
        return None
    price = prices_on(info, day)
    if price is None:
        return None
    where = f"{LIBRARY} {version}:{provider.id}/{info.id}"
    return convert_price(price, info.context_window, where=where)


def _keys(price: genai.ModelPrice) -> dict[str, Decimal | genai.TieredPrices]:
    return {k: v for k, v in vars(price).items() if not k.startswith("_") and v is not None}


def _checked(value: Decimal, where: str) -> float:
    rate = float(value)
    if not math.isfinite(rate) or rate < 0:
        raise PricingError(f"price {value} is not a finite rate >= 0", location=where)
    return rate


def _rate(
    value: Decimal | genai.TieredPrices | None, above: int | None, where: str
) -> float | None:
    """The rate of one key for input strictly above `above` tokens (None: the base)."""
    from genai_prices.types import TieredPrices

    if value is None:
        return None
    if not isinstance(value, TieredPrices):
        return _checked(value, where)
    rate = value.base
    for tier in sorted(value.tiers, key=lambda t: t.start):
        if above is not None and tier.start <= above:
            rate = tier.price
    return _checked(rate, where)


def _rates(
    keys: dict[str, Decimal | genai.TieredPrices], above: int | None, where: str
) -> tuple[float | None, float | None, float | None, float | None]:
    input_rate, output_rate, read_rate, write_rate = (
        _rate(keys.get(k), above, f"{where}.{k}") for k in _RATES
    )
    # The library bills cached tokens with no price of their own as input.
    read_rate = input_rate if keys.get("cache_read_mtok") is None else read_rate
    write_rate = input_rate if keys.get("cache_write_mtok") is None else write_rate
    return input_rate, output_rate, read_rate, write_rate


def _tier(keys: dict[str, Decimal | genai.TieredPrices], start: int, where: str) -> Tier:
    input_rate, output_rate, read_rate, write_rate = _rates(keys, start, where)
    return Tier(
        above_input_tokens=start,
        input=input_rate,
        output=output_rate,
        cache_read=read_rate,
        cache_write=write_rate,
    )


def convert_price(
    price: genai.ModelPrice, context_window: int | None, *, where: str
) -> ModelPrice | None:
    """One genai-prices price as a catalog entry (see the module doc for the rules), or
    None when it charges for something the four token rates cannot price.

    Raises:
        PricingError: ``pricing_invalid`` for a rate or tier start out of range.
    """
    from genai_prices.types import TieredPrices

    keys = _keys(price)
    unpriceable = [
        key
        for key in keys
        if key not in _RATES
        and key not in _IGNORED_KEYS
        and not any(part in key for part in _IGNORED_PARTS)
    ]
    if unpriceable:  # per request, reasoning or text-modality rates: not priceable here
        return None
    starts: set[int] = set()
    for key in _RATES:
        value = keys.get(key)
        if isinstance(value, TieredPrices):
            for tier in value.tiers:
                if not isinstance(tier.start, int) or tier.start < 0:
                    raise PricingError(
                        f"tier start {tier.start!r} is not a token count", location=f"{where}.{key}"
                    )
                starts.add(tier.start)
    base = _rates(keys, None, where)
    tiers = tuple(_tier(keys, start, where) for start in sorted(starts))
    return ModelPrice(
        input=base[0],
        output=base[1],
        cache_read=base[2],
        cache_write=base[3],
        context_window=context_window,
        tiers=tiers,
    )
