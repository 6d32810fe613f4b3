"""Currencies by sign, ISO 4217 code and English name: what an amount's unit can mean.

`continuity.probes.money` reads an amount's unit with `currencies_of`: the set of ISO
4217 codes a written unit can stand for. A unit that names one currency (``€``,
``CHF``, ``zł``, ``Swiss francs``) gives one code; an ambiguous one (``$``, ``kr``,
``¥``, ``francs``) gives every currency it names in any locale, and a reader then needs
the expected currency to be among them (the unit never picks one of them by itself).

The data is the Unicode CLDR data that `babel` ships, kept as a snapshot in
`continuity.probes.currency_table` by `continuity.probes.cldr` (which says why and how).
What it holds:

- the ISO 4217 codes of the currencies in tender today (historic codes such as ``LVR``
  would read identifiers as money);
- every sign of those currencies in every locale (``$``, ``A$``, ``R$``, ``kr``, ``zł``, ``Kč``,
  ``₹`` ...), normalised as answers are (`continuity.probes.normalise`);
- their English singular and plural names (``US
  dollars``, ``Swiss francs``, ``Japanese yen``), and each name's last word alone
  (``dollars``, ``francs``), which names every currency whose name ends in it;
- each currency's usual number of minor digits (babel's `get_currency_precision`);
- the bare signs of English (``$`` USD, ``£`` GBP, ``¥`` JPY ...): the reading of an
  ambiguous unit in an *expected* value, which the trace wrote in English.

A unit that is also an ordinary English word (``ALL``, ``TOP``, ``Rs``, ``won``,
``real``, ``mark``: Zipf frequency 4 or more in wordfreq's English list, or a single
letter) is "word-like": it reads as a currency only when it names the expected currency,
or, for a plural last word alone, when one of its currencies has a bare English sign
(``dollars``, ``pounds``; never ``won``). A name never stands before the number. Codes
are read in capitals, and in any case when not word-like; signs as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from continuity.probes.currency_table import (
    CODES,
    ENGLISH_SIGNS,
    NAMES,
    PRECISIONS,
    SC_CHARS,
    SIGNS,
    WORDLIKE,
)

__all__ = [
    "SC_CHARS",
    "SIGN_PATTERN",
    "UNIT_PATTERN",
    "Currencies",
    "currencies_of",
    "expected_reading",
    "precision",
    "unit_at",
    "wordlike",
]

Currencies = frozenset[str]

_CODE_SET = frozenset(CODES)


def _alternation(tokens: Iterable[str]) -> str:
    return "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))


# A unit before a number: a sign, or three letters (a code if `currencies_of` says so),
# never inside a longer word. Names are looked up word by word (`unit_at`): an
# alternation of every name costs a scorer start 20 ms a regex to compile.
_LETTER = r"[^\W\d_]"
SIGN_PATTERN = r"(?<!" + _LETTER + r")(?:" + _alternation(SIGNS) + r")(?!" + _LETTER + r")"
UNIT_PATTERN = r"(?:" + SIGN_PATTERN + r"|(?<!" + _LETTER + r")[A-Za-z]{3}(?!" + _LETTER + r"))"
_SIGN_AT = re.compile(SIGN_PATTERN)
_WORDS_AT = re.compile(_LETTER + r"+(?: " + _LETTER + r"+){0,3}")


def unit_at(text: str, start: int) -> tuple[str, int] | None:
    """The unit written at ``text[start:]`` (a sign, a code or the longest name of up to
    four words) and where it ends; None when none starts there."""
    if sign := _SIGN_AT.match(text, start):
        return sign.group(), sign.end()
    words = _WORDS_AT.match(text, start)
    if words is None:
        return None
    parts = words.group().split(" ")
    for n in range(len(parts), 0, -1):
        unit = " ".join(parts[:n])
        if unit.lower() in NAMES or (n == 1 and unit.upper() in _CODE_SET):
            return unit, start + len(unit)
    return None


def wordlike(unit: str) -> bool:
    """Whether `unit` (as written) is also an ordinary English word (module doc)."""
    return unit.lower().rstrip(".") in WORDLIKE or (len(unit) == 1 and unit.isalpha())


def currencies_of(
    unit: str, expected: Currencies | None = None, *, names: bool = True
) -> Currencies | None:
    """The ISO 4217 codes `unit` (a sign, code or, with `names`, a name as written in an
    answer) stands for; None when it is no currency as written, or a word-like unit that
    does not name the `expected` currency."""
    found: Currencies | None = None
    if unit in SIGNS:
        found = frozenset(SIGNS[unit])
    elif unit.upper() in _CODE_SET and (unit.isupper() or unit.lower() not in WORDLIKE):
        found = frozenset([unit.upper()])
    elif names and unit.lower() in NAMES:
        found = frozenset(NAMES[unit.lower()])
    if found is None:
        return None
    # A word-like plural last word alone ("dollars", "pounds") still reads when one of
    # its currencies has a bare English sign; any other word-like unit ("won", "real",
    # "Rs") only as the expected currency.
    english = (
        unit.lower() in NAMES
        and unit.lower().endswith("s")
        and any(c in ENGLISH_SIGNS.values() for c in found)
    )
    if wordlike(unit) and not (expected and expected <= found) and not english:
        return None
    return found


def expected_reading(found: Currencies) -> Currencies:
    """An expected value's currency: an ambiguous unit reads as the one currency among
    `found` whose English sign is bare (``$`` USD, ``£`` GBP), else stays ambiguous."""
    bare = {code for code in ENGLISH_SIGNS.values() if code in found}
    return frozenset(bare) if len(bare) == 1 else found


def precision(code: str) -> int:
    """The usual number of minor digits of currency `code` (2 unless babel says other)."""
    return PRECISIONS.get(code, 2)
