"""Exact money: `decimal.Decimal` in a context that refuses to round.

Every cap, hold, settlement and estimate of the spend controller is a `Decimal` in
US dollars, computed in `EXACT` (an inexact result raises instead of being kept), and
rounded once, deliberately, up to the cent (`ceil_to_cents`). Never a float: a float
sum that lands a hair above a cent boundary would reserve or approve a cent that is
not owed, and a float cap compared with a float total can admit a request it should
refuse.

A cap is given in whole cents (`cap_cents`): a decimal text such as ``"25.00"`` whose
cents are an integer no larger than JavaScript's ``Number.MAX_SAFE_INTEGER`` (the seed's
"safe integer"), so every tool that reads a registration reads the same number.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import (
    ROUND_CEILING,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
)

__all__ = [
    "CENT",
    "EXACT",
    "MAX_SAFE_CENTS",
    "MILLION",
    "ceil_to_cents",
    "exact_sum",
    "parse_usd",
    "usd_text",
    "whole_cents",
]

CENT = Decimal("0.01")
MILLION = Decimal(1_000_000)
MAX_SAFE_CENTS = 2**53 - 1
# Money arithmetic that refuses to round: an inexact result raises instead of being kept
# (sums of calls have a few dozen digits at most; 60 leaves room).
EXACT = Context(prec=60, traps=[Inexact, InvalidOperation, DivisionByZero, Overflow])
_ROUNDING = Context(prec=60)  # for the one deliberate rounding, up to the cent


def exact_sum(amounts: Iterable[Decimal]) -> Decimal:
    """The sum of `amounts`, exactly (`EXACT` raises rather than round)."""
    total = Decimal(0)
    for amount in amounts:
        total = EXACT.add(total, amount)
    return total


def ceil_to_cents(amount: Decimal) -> Decimal:
    """`amount` rounded up to the next whole cent (exact)."""
    return amount.quantize(CENT, rounding=ROUND_CEILING, context=_ROUNDING)


def parse_usd(text: str) -> Decimal | None:
    """A dollar amount written as a plain decimal (``"3.92"``, ``"25"``), or None when
    `text` is not one (an exponent, a sign, a NaN or an infinity is not)."""
    if not text or not all(c.isdigit() or c == "." for c in text) or text.count(".") > 1:
        return None
    if text.startswith(".") or text.endswith("."):
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the characters above always parse
        return None
    return value if value.is_finite() else None


def whole_cents(amount: Decimal) -> int | None:
    """`amount` as an integer number of cents, or None when it is not a whole number of
    cents, is negative, or its cents are above `MAX_SAFE_CENTS`."""
    if not amount.is_finite() or amount < 0:
        return None
    cents = amount * 100
    if cents != cents.to_integral_value():
        return None
    value = int(cents)
    return value if value <= MAX_SAFE_CENTS else None


def usd_text(amount: Decimal) -> str:
    """`amount` as plain decimal text with no exponent, its own scale kept (``3.92``,
    ``25.00``, ``0.000017``)."""
    return format(amount, "f")
