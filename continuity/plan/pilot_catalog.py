"""The reader's catalog entry as a cap-gated pilot binds it, and what it must not lack.

A pilot reserves Rmax from the registered rates, which must be the catalog's
(`continuity.spend.descriptor.check_catalog`). So its pricing needs more than the lookup
scenarios' (`continuity.plan.exact_price.missing_terms`): the cache-write rate too (the
highest input-class rate, $2.50/M for Sol, is what Rmax charges every input token at),
at the base and in every tier, and both limits. `pilot_missing_terms` names what is
missing; `catalog_binding` turns a complete entry into a sealed `CatalogBinding`, each
rate the exact decimal text the catalog wrote (`exact_rate`), never a float.
"""

from __future__ import annotations

from continuity.errors import SpendError
from continuity.plan.pricing import ModelPrice, exact_rate
from continuity.spend.descriptor import CatalogBinding, CatalogTier, sealed_catalog
from continuity.spend.money import usd_text

__all__ = ["catalog_binding", "pilot_missing_terms"]

_RATES = ("input", "output", "cache_read", "cache_write")


def pilot_missing_terms(price: ModelPrice | None) -> list[str]:
    """What a pilot's catalog binding needs and `price` lacks, in a fixed order (empty:
    complete): ``price`` for no entry at all, else each missing rate by where it is
    (``cache_write``, ``tier>200000.input``), then ``context_window`` and ``max_output``."""
    if price is None:
        return ["price"]
    missing = [name for name in _RATES if getattr(price, name) is None]
    for tier in price.tiers:
        missing += [
            f"tier>{tier.above_input_tokens}.{name}"
            for name in _RATES
            if getattr(tier, name) is None
        ]
    if not price.context_window:
        missing.append("context_window")
    if not price.max_output:
        missing.append("max_output")
    return missing


def _text(rate: float | None) -> str | None:
    exact = exact_rate(rate)
    return None if exact is None else usd_text(exact)


def catalog_binding(model: str, price: ModelPrice | None) -> CatalogBinding:
    """`model`'s catalog entry as a sealed binding (rates as exact decimal text).

    Raises:
        SpendError: ``lookup_pilot_prices_missing`` (at ``catalog.<model>``) naming
            every missing rate or limit.
    """
    missing = pilot_missing_terms(price)
    if missing or price is None:
        raise SpendError(
            f"the catalog lacks {', '.join(missing)} for {model}: a pilot's reservation "
            "cannot be priced",
            code="lookup_pilot_prices_missing",
            location=f"catalog.{model}",
        )
    rates = [_text(getattr(price, name)) for name in _RATES]
    input_rate, output_rate, read_rate, write_rate = (r or "" for r in rates)
    assert price.context_window and price.max_output  # pilot_missing_terms checked them
    return sealed_catalog(
        CatalogBinding(
            model=model,
            input=input_rate,
            output=output_rate,
            cache_read=read_rate,
            cache_write=write_rate,
            context_window=price.context_window,
            max_output=price.max_output,
            tiers=tuple(
                CatalogTier(
                    above_input_tokens=tier.above_input_tokens,
                    input=_text(tier.input),
                    output=_text(tier.output),
                    cache_read=_text(tier.cache_read),
                    cache_write=_text(tier.cache_write),
                )
                for tier in price.tiers
            ),
            digest="",
        )
    )
