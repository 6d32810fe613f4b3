"""Numbers as answers write them: digits with any locale's separators, and English words.

`read_digits` reads a run of digits and separators (``NUMBER`` matches one) to a
Decimal, or says why it cannot:

- a separator that repeats, or a space or an apostrophe (``1,234,567``, ``1.234.567``,
  ``45 000``, ``3'400``), groups thousands; the groups after the first have three
  digits, the first one to three and no leading zero. A comma may also group Indian
  style (``1,23,456``: twos, then a last three);
- a last ``.`` or ``,`` after another separator is the decimal mark (``1,234.56``,
  ``9.876,50``, ``1 234,56``, ``1'234.50``); the others must group as above;
- a lone ``.`` or ``,`` is a decimal mark unless three digits follow it. Before exactly
  three digits (``1,234``, ``1.234``) it groups thousands when every currency the amount
  may be in has fewer than three minor digits (babel's precision: ``€1.234`` is 1234),
  and the number is unreadable otherwise (``1,234 KWD`` is 1234 or 1.234); a first group
  that cannot group (``0,500``, ``1234,567``) makes it a decimal mark;
- any other mix of separators is unreadable.

`read_words` reads an English cardinal written out (``two hundred and forty``, ``three
thousand four hundred``, ``a hundred``, ``twelve hundred``, ``forty-two``) by its
grammar: groups below a thousand, each with an optional ``X hundred``, ``and`` only
after ``hundred`` or before a last group below a hundred, scale words (``thousand``,
``lakh``, ``million``, ``crore``, ``billion``, ``trillion``) in falling order. Anything
else is unreadable: two numbers side by side (``twenty twenty``, ``one fifty``), a
fraction or a vague quantity (``half a million``, ``two point five``, ``a few
thousand``: `WORD` matches those words too, so their span is read and refused rather
than cut short to a different number).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from decimal import Decimal

from continuity.probes.mentions import Unreadable

__all__ = ["NUMBER", "SCALES", "SMALL_WORDS", "WORD", "read_digits", "read_words"]

# Digits with separators: a mark between digits, or a space before exactly three.
NUMBER = r"\d+(?:[.,']\d+| \d{3}(?!\d))*"

_UNITS = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
]  # fmt: skip
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SMALL = {w: n for n, w in enumerate(_UNITS)} | {w: 20 + 10 * n for n, w in enumerate(_TENS)}
# The words of the numbers below a hundred, longest first (for an alternation).
SMALL_WORDS = tuple(sorted(_SMALL, key=len, reverse=True))
SCALES = {
    "thousand": 10**3,
    "lakh": 10**5,
    "million": 10**6,
    "crore": 10**7,
    "billion": 10**9,
    "trillion": 10**12,
}
# Words that make a written-out number something else: a fraction, a decimal point, a
# vague count. They belong to a number's span so that it is refused whole.
_QUALIFIERS = ["half", "quarter", "point", "few", "several", "couple", "dozen", "odd"]
WORD = "|".join(
    sorted([*_SMALL, *SCALES, "hundred", "a", "an", "and", *_QUALIFIERS], key=len, reverse=True)
)


def _grouped(groups: Sequence[str], mark: str) -> bool:
    """Whether digit `groups` joined by `mark` group thousands (or lakhs, with commas)."""
    first, rest = groups[0], groups[1:]
    if first.startswith("0") or not rest:
        return False
    western = len(first) <= 3 and all(len(g) == 3 for g in rest)
    indian = (
        mark == ","
        and len(first) <= 2
        and len(rest) >= 2
        and all(len(g) == 2 for g in rest[:-1])
        and len(rest[-1]) == 3
    )
    return western or indian


def read_digits(token: str, minor_digits: Collection[int] = (2,)) -> Decimal | Unreadable:
    """The number `token` (a match of `NUMBER`) writes, for an amount whose currency has
    one of `minor_digits` minor digits (module doc)."""
    parts = re.split(r"([.,' ])", token)
    groups, marks = parts[0::2], parts[1::2]
    if not marks:
        return Decimal(token)
    kinds = set(marks)
    if len(kinds) == 1:
        mark = marks[0]
        if mark in " '" or len(marks) > 1:
            if _grouped(groups, mark):
                return Decimal("".join(groups))
            return Unreadable(f"digits misgrouped by {mark!r}")
        head, tail = groups
        if len(tail) == 3 and _grouped(groups, mark):
            if max(minor_digits, default=2) < 3:
                return Decimal(head + tail)
            return Unreadable(f"{mark!r} before three digits: a decimal mark or grouping")
        return Decimal(f"{head}.{tail}")
    decimal = marks[-1]
    grouping = set(marks[:-1])
    if decimal not in ".," or len(grouping) != 1 or decimal in grouping:
        return Unreadable("separators that are neither a grouping nor a decimal mark")
    if not _grouped(groups[:-1], grouping.pop()):
        return Unreadable("digits misgrouped before the decimal mark")
    return Decimal("".join(groups[:-1]) + "." + groups[-1])


def _below_thousand(words: Sequence[str], i: int, *, top: bool) -> tuple[int, int] | None:
    """A group below a thousand (or ``twelve hundred`` at the top) from ``words[i]``: its
    value and the index after it; None when no group starts there."""
    value, start = 0, i
    word = words[i] if i < len(words) else ""
    if word in ("a", "an") or (word in _SMALL and 0 < _SMALL[word] < 100):
        count = 1 if word in ("a", "an") else _SMALL[word]
        if i + 1 < len(words) and words[i + 1] == "hundred":
            if count >= 10 and (not top or count % 10 == 0):
                return None  # "twelve hundred" only as the whole number's top group
            value, i = count * 100, i + 2
            if i + 1 < len(words) and words[i] == "and" and words[i + 1] in _SMALL:
                i += 1
        elif word in ("a", "an"):
            return None  # "a" counts only before "hundred" or a scale word
    word = words[i] if i < len(words) else ""
    if word in _SMALL and _SMALL[word] > 0:
        small = _SMALL[word]
        value, i = value + small, i + 1
        following = words[i] if i < len(words) else ""
        if small >= 20 and following in _SMALL and 0 < _SMALL[following] < 10:
            value, i = value + _SMALL[following], i + 1
    if i == start:
        return None
    return value, i


def read_words(words: Sequence[str]) -> int | Unreadable:
    """The number lower-case `words` (split on spaces and hyphens) write (module doc)."""
    if list(words) == ["zero"]:
        return 0
    if len(words) > 1 and words[0] in ("a", "an") and words[1] in _SMALL:
        words = words[1:]  # "a one hundred euro deposit": an article, not a count
    total, i, last_scale = 0, 0, 10**15
    while i < len(words):
        if words[i] in ("a", "an") and i + 1 < len(words) and words[i + 1] in SCALES:
            group, i = 1, i + 1
        else:
            read = _below_thousand(words, i, top=total == 0 and i == 0)
            if read is None:
                return Unreadable(f"not a number in words at {words[i]!r}")
            group, i = read
        scale = SCALES.get(words[i]) if i < len(words) else None
        if scale is None:
            if i < len(words):
                return Unreadable(f"two numbers side by side at {words[i]!r}")
            return total + group
        if scale >= last_scale or group >= 1000:
            return Unreadable("scale words out of order")
        total, last_scale, i = total + group * scale, scale, i + 1
        if i < len(words) and words[i] == "and":
            rest = read_words(words[i + 1 :])
            if isinstance(rest, Unreadable) or rest >= 100:
                return Unreadable("'and' before more than a last group below a hundred")
            return total + rest
    return total
