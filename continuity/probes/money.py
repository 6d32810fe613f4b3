"""Amounts of money in an answer: the ``money`` kind of `continuity.probes.values`.

An amount is a number and a unit, the unit before or after it, with or without a space:
``€1.745,00``, ``1 745 €``, ``CHF 3'400``, ``45 000 kr``, ``R$ 1.234,56``, ``₹1,23,456``,
``483 pounds``, ``GBP 483.00``, ``two hundred and forty euros``. The unit reads through
`continuity.probes.currencies` (any ISO 4217 code in tender, any locale's sign, English
names) as the set of currencies it may stand for; the digits through
`continuity.probes.numbers.read_digits`, with the minor digits of those currencies (so
``€1.234`` is 1234); words through `continuity.probes.numbers.read_words`. A scale after
the digits multiplies them, as a word or an abbreviation in any case (``1.5 million
euros``, ``₹5 lakh``, ``€2.5m``, ``$3bn``, ``€4 Mio``); minor units after the amount add
to it (``245 euros and fifty cents``, ``£5 and 50p``); a range with one unit reads as
both its ends (``€450-500``, ``450-500 euros``), so it is never one value alone. An
amount's key is an `Amount`: the set of currencies (None for a bare number) and the
value.

A bare number counts as an amount only when written as money is (two decimals,
``483.00``; thousands grouping, ``5,135``, ``5.135,00``, ``5'135``) or right after a word
only money follows (``refunding 456``, ``comes to 483``, never ``invoice 483``); it then
matches the expected amount in any currency, since the question fixes it.

An expected value's ambiguous unit reads as its English sense (`currencies.expected_reading`:
``$`` is USD). An answer's amount states it when the values are equal and the answer's
unit may stand for the expected currency (``$`` for USD, ``kr`` for SEK), or it has none.
A unit that cannot stand for it (``$`` for EUR) is a different amount, never a guess.

Unreadable (`Unreadable` keys): an amount with an unknown currency sign (``Z$50``,
``₿0.5``, ``¤50``) or with three capitals that are no ISO code (``XYZ 1,250.00``), digits
that are no grouping (``€1,23,4``) or that may be a decimal or a grouping (``1,234 KWD``),
and a number in words that does not read to one number (``twenty twenty euros``, ``half
a million euros``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import NamedTuple

from continuity.probes.currencies import (
    SC_CHARS,
    UNIT_PATTERN,
    Currencies,
    currencies_of,
    expected_reading,
    precision,
    unit_at,
)
from continuity.probes.mentions import Mention, Unreadable
from continuity.probes.normalise import normalise
from continuity.probes.numbers import (
    NUMBER,
    SCALES,
    SMALL_WORDS,
    WORD,
    read_digits,
    read_words,
)
from continuity.probes.quantities import names_another

__all__ = ["Amount", "expected_amount", "is_money", "readings", "same_money"]


class Amount(NamedTuple):
    currencies: Currencies | None  # None: a bare number, in the question's currency
    value: Decimal


# A scale after the digits: a word ("1.5 million", "5 lakh") or an abbreviation ("€2.5m",
# "$3bn", "€4 Mio"), in any case; a scale left unread would read a thousandth of it.
_SHORT_SCALES = {"k": 10**3, "m": 10**6, "mm": 10**6, "mn": 10**6, "mio": 10**6}
_SHORT_SCALES |= {"b": 10**9, "bn": 10**9, "mrd": 10**9}
_SCALE = (
    r"(?:\s?(?P<short>(?i:" + "|".join(sorted(_SHORT_SCALES, key=len, reverse=True)) + r"))\b"
    r"|\s?(?P<scale>(?i:" + "|".join(SCALES) + r"))s?\b)?(?![.,']?\d)"
)
_BEFORE = re.compile(
    r"(?P<unit>" + UNIT_PATTERN + r")(?P<gap>\s?)(?P<number>" + NUMBER + r")" + _SCALE + r"(?!\w)"
)
# A number, or a number in words, and where a unit after it would start.
_AFTER = re.compile(r"(?<![\d.,'\w])(?P<number>" + NUMBER + r")" + _SCALE + r"(?P<gap>\s?)")
# Number words joined by spaces, hyphens or commas ("two thousand, five hundred").
_WORDS = re.compile(
    r"(?<![\w-])(?!and\b)(?P<words>(?i:" + WORD + r")(?:(?:[\s-]+|,\s*)(?i:" + WORD + r"))*)\s+"
)
_DIGIT_NEXT = re.compile(r"\s?\d")
# The minor unit after an amount ("245 euros and 50 cents", "£5 and 50p").
_MINOR = re.compile(
    r"\s*,?\s*(?:(?i:and|plus)\s+|&\s*)?(?P<minor>\d{1,2}|(?i:"
    + WORD
    + r")(?:[\s-]+(?i:"
    + WORD
    + r"))*)\s?(?i:cents?|pence|p|centimes?|paise|kopecks?|kopeks?|øre|öre|groszy|rappen)\b"
)
# A number right after a unit that follows its amount: "five pounds fifty", "5 euros 50"
# are 5.50, and a reader that stopped at the unit would read 5.
_TRAILING = re.compile(
    r"\s+(?:\d{1,2}|(?i:" + "|".join(SMALL_WORDS) + r"))\b(?![.,:/%-]?\d|\s?(?:st|nd|rd|th)\b)"
)
# The other end of a range with one unit: "€450-500", "450-500 euros".
_RANGE_TAIL = re.compile(r"\s?-\s?(?P<number>" + NUMBER + r")" + _SCALE + r"(?!\w)")
_RANGE_HEAD = re.compile(r"(?<![\d.,'\w])(?P<number>" + NUMBER + r")" + _SCALE + r"\s?-\s?$")
_BARE = re.compile(
    r"(?<![\w$£€.,'-])(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d{2})?|\d{1,3}(?:\.\d{3})+,\d{2}"
    r"|\d{1,3}(?:'\d{3})+(?:\.\d{2})?|\d+[.,]\d{2})(?!\w)(?![.,:'-]\d)"
)
# A bare whole number is an amount right after a word that only money follows
# ("refunding 456", "comes to 483"), never after "invoice", "order" or "room".
_MONEY_VERB = re.compile(
    r"(?i)\b(?:cost|costs|costing|charged?|charging|pay|paid|paying|refund|refunds|refunded"
    r"|refunding|priced?|total|totals|totall?ing|comes\s+to|came\s+to|quoted?|budget|fee)"
    r"\s+(?:of\s+|is\s+|was\s+|at\s+|us\s+|you\s+|me\s+)?(?P<number>\d{2,7}(?:[.,]\d{1,2})?)"
    r"(?![\w.,:/-]?\d)(?!\s?(?:%|[ap]\.?m\b|h\b|hrs?\b|x\b))(?![\w])"
)
_SIGN_CHARS = "[" + re.escape(SC_CHARS) + "]"
# A unit that is no currency this module knows: a currency sign, with up to three
# capitals before it ("Z$"), or three capitals, next to a number.
_UNKNOWN = re.compile(
    r"(?<![A-Za-z])(?P<unit>[A-Z]{0,3}" + _SIGN_CHARS + r"|[A-Z]{3})\s?(?P<number>" + NUMBER + r")"
    r"(?![.,']?\d)"
    r"|(?<![\d.,'])(?P<number2>" + NUMBER + r")\s?(?P<unit2>" + _SIGN_CHARS + r"|[A-Z]{3}\b)"
)


class _Written(NamedTuple):
    """An amount as written: its unit, and its digits (with a scale word) or words."""

    start: int
    end: int
    unit: str
    number: str = ""
    short: str | None = None
    scale: str | None = None
    words: str = ""
    joined: bool = False  # letters and digits with nothing between ("GBP483")
    unit_first: bool = False


def _written(text: str) -> Iterator[_Written]:
    """Every unit-and-number in `text`: unit first, digits then unit, words then unit."""
    for m in _BEFORE.finditer(text):
        joined = not m["gap"] and m["unit"][-1].isalpha()
        yield _Written(
            m.start(),
            m.end(),
            m["unit"],
            m["number"],
            m["short"],
            m["scale"],
            joined=joined,
            unit_first=True,
        )
    for m in _AFTER.finditer(text):
        if unit := unit_at(text, m.end()):
            joined = not m["gap"] and unit[0][0].isalpha() and not (m["short"] or m["scale"])
            yield _Written(
                m.start(), unit[1], unit[0], m["number"], m["short"], m["scale"], joined=joined
            )
    for m in _WORDS.finditer(text):
        # A unit followed by digits starts an amount of its own ("a £4 fee"): the words
        # before it are no number of that unit.
        if (unit := unit_at(text, m.end())) and not _DIGIT_NEXT.match(text, unit[1]):
            yield _Written(m.start(), unit[1], unit[0], words=m["words"])


def _minor_digits(currencies: Currencies | None) -> set[int]:
    return {precision(c) for c in currencies} if currencies else {2}


def _amount(
    w: _Written, expected: Currencies | None, *, english: bool = False
) -> Amount | Unreadable | None:
    """The amount `w` states; None when its unit is no currency. `english`: the number
    is written as English writes it (an expected value)."""
    currencies = currencies_of(w.unit, expected, names=not w.unit_first)
    if currencies is None:
        return None
    if w.words:
        spelled = read_words(re.split(r"[\s,-]+", w.words.lower()))
        return spelled if isinstance(spelled, Unreadable) else Amount(currencies, Decimal(spelled))
    # An ambiguous unit's minor digits: those of the expected currency it may stand for.
    digits_of = expected if expected and expected <= currencies else currencies
    number = _scaled(w.number, w.short, w.scale, {2} if english else _minor_digits(digits_of))
    return number if isinstance(number, Unreadable) else Amount(currencies, number)


def _scaled(
    digits: str, short: str | None, scale: str | None, minor: set[int]
) -> Decimal | Unreadable:
    number = read_digits(digits, minor)
    if isinstance(number, Unreadable):
        return number
    if short:
        return number * _SHORT_SCALES[short.lower()]
    return number * SCALES[scale.lower()] if scale else number


def _with_minor(amount: Amount, m: re.Match[str]) -> Amount | Unreadable:
    """`amount` with the minor units `m` (of `_MINOR`) adds: cents of a whole amount in
    currencies with two minor digits."""
    minor = m["minor"]
    count = int(minor) if minor.isdigit() else read_words(re.split(r"[\s-]+", minor.lower()))
    if (
        isinstance(count, Unreadable)
        or count >= 100
        or amount.value != amount.value.to_integral_value()
        or _minor_digits(amount.currencies) != {2}
    ):
        return Unreadable("an amount and a minor unit that do not add up")
    return Amount(amount.currencies, amount.value + Decimal(count) / 100)


def _range_ends(text: str, w: _Written, amount: Amount, minor: set[int]) -> Iterator[Mention]:
    """The other end of a range that shares `w`'s unit (``€450-500``, ``450-500 euros``):
    an amount in the same currencies, so a range reads as the two values it names."""
    if w.words:
        return
    if w.unit_first:
        end = _RANGE_TAIL.match(text, w.end)
    else:
        end = _RANGE_HEAD.search(text, max(0, w.start - 40), w.start)
    if end is not None:
        number = _scaled(end["number"], end["short"], end["scale"], minor)
        key = number if isinstance(number, Unreadable) else Amount(amount.currencies, number)
        yield Mention(end.start("number"), end.end("number"), key)


def _unknown(text: str, expected: Currencies | None) -> Iterator[Mention]:
    for m in _UNKNOWN.finditer(text):
        unit = m["unit"] or m["unit2"]
        if currencies_of(unit, expected) is not None:
            continue
        if unit.isalpha() and currencies_of(unit, frozenset([unit])) is not None:
            # A code that is also a word, in capitals beside a number ("500 ALL"): the
            # lek, or the word; not the expected currency either way.
            yield Mention(m.start(), m.end(), Unreadable(f"{unit!r}: a currency or a word"))
        elif unit.isalpha() and not re.search(r"[.,']\d{2}\b|\d{1,3}[,.']\d{3}", m.group(0)):
            continue  # capitals beside a plain number ("ABC 12") are no amount
        else:
            yield Mention(m.start(), m.end(), Unreadable(f"unknown currency {unit!r}"))


def readings(text: str, expected: Currencies | None = None) -> Iterator[Mention]:
    """Every amount in normalised `text`, read for an expected value in `expected`
    currencies (None when there is none): `Amount` keys, and `Unreadable` keys for the
    amounts that cannot be read (module doc). Spans may overlap; the caller keeps the
    longest."""
    for written in _written(text):
        key = _amount(written, expected)
        if key is None:
            continue
        end = written.end
        if isinstance(key, Amount) and (minor := _MINOR.match(text, end)):
            key, end = _with_minor(key, minor), minor.end()
        elif not written.unit_first and (trailing := _TRAILING.match(text, end)):
            key, end = Unreadable("a number after the unit: a minor amount?"), trailing.end()
        yield Mention(written.start, end, key)
        if isinstance(key, Amount):
            yield from _range_ends(text, written, key, _minor_digits(key.currencies))
    for form in (_BARE, _MONEY_VERB):
        for m in form.finditer(text):
            number = read_digits(m["number"], _minor_digits(expected))
            if form is _MONEY_VERB and names_another(text, m.end()):
                continue  # "paid 12 invoices": the number counts something else
            if not isinstance(number, Unreadable):
                yield Mention(m.start("number"), m.end(), Amount(None, number))
            elif form is _BARE:
                yield Mention(m.start("number"), m.end(), number)
    yield from _unknown(text, expected)


@functools.lru_cache(maxsize=4096)
def expected_amount(value: str) -> Amount | None:
    """The amount an expected value states as a whole, its ambiguous unit read in its
    English sense; None when the value is no amount with a unit."""
    text = normalise(value)
    for written in _written(text):
        if (written.start, written.end) != (0, len(text)) or written.joined:
            continue  # "GBP483" as an expected value is as likely an identifier
        key = _amount(written, None, english=True)
        if isinstance(key, Amount) and key.currencies:
            return Amount(expected_reading(key.currencies), key.value)
    return None


def is_money(value: str) -> bool:
    """Whether an expected value is an amount with a unit."""
    return expected_amount(value) is not None


def same_money(expected: object, stated: object) -> bool:
    """Whether a stated amount states the expected one: equal values, and a unit that may
    stand for the expected currency (or none)."""
    assert isinstance(expected, Amount) and isinstance(stated, Amount)
    if expected.value != stated.value:
        return False
    return stated.currencies is None or (
        expected.currencies is not None and expected.currencies <= stated.currencies
    )
