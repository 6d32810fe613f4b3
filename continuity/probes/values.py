"""Values by kind: where an answer states a value, as spans of the normalised answer.

Every function here reads text that already went through `normalise` (so dashes are
``-``, zero-width characters are gone, full-width digits are ASCII and no-break and
narrow spaces are spaces) and returns `Mention`s: a span and a canonical key, so two
renderings of one value share a key. The rule is "right when sure, silent when not": a
reading never yields a value other than the one written.

A value's kind is decided by the whole expected value (`kind_of`):

- ``money`` (`continuity.probes.money`): an amount and a unit before or after it, the
  unit any ISO 4217 code in tender, any locale's sign (``€``, ``CHF``, ``kr``, ``zł``,
  ``R$``, ``A$``, ``₹`` ...) or an English name (``euros``, ``Swiss francs``), read
  through babel's CLDR data (`continuity.probes.currencies`); digits with any locale's
  separators (``9.876,50``, ``3'400``, ``45 000``, ``1,23,456``), a lone separator
  before three digits read by the currency's minor digits (``€1.234`` is 1234); scale
  words (``€2.5m``, ``1.5 million euros``) and numbers in words (``two hundred and
  forty euros``, `continuity.probes.numbers`). An ambiguous unit (``$``, ``kr``, ``¥``)
  states the expected amount when it may stand for the expected currency; one that
  cannot (``$`` for EUR) is another amount. A bare amount counts only when written as
  money is (``483.00``, ``5,135``) or after a word only money follows (``refunding
  456``); it matches the expected amount in any currency, since the question fixes it;
- ``date`` (`continuity.probes.calendar`): day and month names (``18th June``, ``Jun
  18``, ``Friday, 18 June``, ``18-Jun-2027``), year first (``2027-06-18``,
  ``2027/06/18``, ``2027.06.18``) and numeric dates (``18.06.2027``, ``18/06/2027``,
  ``06/18/2027``, ``18/06``): a day above 12 fixes their order, else a weekday that
  fits one order only, else the trace's locale (``day-first``, ``month-first``);
- ``time``: ``7:30pm``, ``19:30``, ``19.30``, ``19:30h``, ``1930 hrs``, ``19h30``,
  ``noon``, and spelled-out times (``half past seven in the evening``, ``seven thirty
  pm``, ``quarter to eight``), a digit time with a spelled-out part of the day (``7.30
  in the evening``) and British ``half seven`` (7:30); a bare ``7:30`` may mean either
  half of the day;
- ``identifier`` (``AWD-7K2Q-9DXX``): its alphanumeric runs in order with any separators
  or none, never inside a longer token;
- ``digits`` (phone numbers and postcodes): their digits and letters in order with any
  spacing or punctuation, ``+44`` standing for a leading ``0``;
- ``code`` (``C7``, ``B14``): an optional space or hyphen between letters and digits;
- ``phrase``: other terms, word by word on word boundaries, a final ``s`` optional.

`unreadable` returns the spans that look like a value of the kind but do not read as one
value with confidence, each with an `Unreadable` key that says why: an amount in an
unknown currency (``Z$50``, ``₿0.5``, ``XYZ 1,250.00``) or in a code that is also a word
(``500 ALL``), digits that are no grouping (``€1,23,4``) or may be a decimal or a
grouping (``1,234 KWD``: three minor digits), a number in words that is not one number
(``twenty twenty euros``, ``half a million euros``), and a numeric date whose order
nothing fixes (``09/11/2026`` in a trace of unknown locale, or a weekday that fits only
the order the locale does not use). `find_all` never returns a span `unreadable` does:
overlapping readings, readable or not, are settled first (the earliest, then the
longest, stands), so a scorer that sees no readable value but an unreadable one can
call the answer unresolved instead of guessing.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Literal

from continuity.probes import money
from continuity.probes.calendar import (
    DATE_FORMS,
    TIME_FORMS,
    WEEKDAY_NUMBERS,
    Locale,
    date_readings,
    same_day,
    same_time,
    times,
)
from continuity.probes.mentions import Mention, Unreadable
from continuity.probes.normalise import mentions_pattern, normalise

__all__ = [
    "KINDS",
    "Kind",
    "Locale",
    "Mention",
    "Unreadable",
    "find_all",
    "find_value",
    "kind_of",
    "specifics",
    "states",
    "unreadable",
    "value_key",
]

Kind = Literal["money", "date", "time", "identifier", "digits", "code", "phrase"]
KINDS: tuple[Kind, ...] = ("money", "date", "time", "identifier", "digits", "code", "phrase")


# ---------------------------------------------------------------- identifiers and codes
_ID_SHAPE = re.compile(r"^[A-Z]{2,}[-/][A-Z0-9][A-Z0-9-]*$")
# Any other single token of letters and digits (both) joined by -, /, . or _ or nothing,
# longer than a short code or with a separator: "MX20250917003341", "LD/5512/K".
_ID_TOKEN = re.compile(r"(?=[^\d]*\d)(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9]+(?:[-/._][A-Za-z0-9]+)*")
_SHORT_CODE = re.compile(r"(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{2,8}")
_DIGITS_VALUE = re.compile(r"\+?[\d ()-]{6,}|[A-Z0-9]{2,5}(?: [A-Z0-9]{2,5})+")
_EDGE_BEFORE = r"(?<![A-Za-z0-9])(?<![A-Za-z0-9][-_./])"
_EDGE_AFTER = r"(?![A-Za-z0-9])(?![-_./][A-Za-z0-9])"


def _runs(value: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9]+", value)


def _alnum(text: str) -> str:
    return "".join(_runs(text)).upper()


def _identifier_shape(value: str) -> re.Pattern[str]:
    """Every token of the value's shape: as many runs, each as long, any separators."""
    body = r"(?:\s*[-_./:#]?\s*)".join(rf"[A-Za-z0-9]{{{len(run)}}}" for run in _runs(value))
    return re.compile(_EDGE_BEFORE + body + _EDGE_AFTER)


def _runs_on(text: str, start: int, end: int) -> bool:
    """Whether a regrouped rendering at ``text[start:end]`` runs on into a group of
    digits across one separator (``MX20 2509 7`` is not ``MX202509``: a superstring
    written with spaces)."""
    after = re.match(r"[\s./-]([A-Za-z0-9]+)", text[end:])
    before = re.search(r"(?<![A-Za-z0-9])([A-Za-z0-9]+)[\s./-]$", text[:start])
    return any(m is not None and m.group(1).isdigit() for m in (after, before))


def _regrouped(text: str, value: str) -> Iterator[Mention]:
    """The value's letters and digits, in order, grouped in any way: one space, dot,
    slash or hyphen or none between any two (``MX20 2509 1700`` for ``MX2025091700``)."""
    loose = r"[\s./-]?".join(re.escape(c) for c in _alnum(value))
    for m in re.finditer(_EDGE_BEFORE + loose + _EDGE_AFTER, text, re.IGNORECASE):
        if not _runs_on(text, m.start(), m.end()):
            yield Mention(m.start(), m.end(), _alnum(value))


@functools.lru_cache(maxsize=1024)
def _same_shape(value: str) -> re.Pattern[str]:
    classes = [r"\d" if c.isdigit() else "[A-Za-z]" for c in _alnum(value)]
    return re.compile(_EDGE_BEFORE + r"[\s./-]?".join(classes) + _EDGE_AFTER)


def _shaped(text: str, value: str) -> Iterator[Mention]:
    """Other identifiers of the value's shape: its letters and digits in the same
    classes and order (``RT4490`` and ``RT 9044`` for ``RT4409``), grouped in any way. A
    candidate written with spaces counts only in capitals, so prose (``in 2027``) never
    does."""
    for m in _same_shape(value).finditer(text):
        if _candidate(m.group(0)) and not _runs_on(text, m.start(), m.end()):
            yield Mention(m.start(), m.end(), _alnum(m.group(0)))


def _candidate(token: str) -> bool:
    """A token of an identifier's shape that reads as an identifier: it has a digit, and
    if written with spaces it is in capitals (``is AA 00`` is prose)."""
    return bool(re.search(r"\d", token)) and (not re.search(r"\s", token) or token.upper() == token)


def _identifiers(text: str, value: str) -> Iterator[Mention]:
    seen: set[tuple[int, int]] = set()
    pattern = mentions_pattern(value)
    if pattern is not None:
        for m in pattern.finditer(text):
            seen.add(m.span())
            yield Mention(m.start(), m.end(), _alnum(m.group(0)))
    # The same characters grouped otherwise ("PWX 5812 0647" for "PWX-58120647").
    for mention in _regrouped(text, value):
        if (mention.start, mention.end) not in seen:
            seen.add((mention.start, mention.end))
            yield mention
    for m in _identifier_shape(value).finditer(text):
        token = m.group(0)
        if m.span() not in seen and _candidate(token):
            seen.add(m.span())
            yield Mention(m.start(), m.end(), _alnum(token))
    yield from (m for m in _shaped(text, value) if (m.start, m.end) not in seen)


def _digit_pattern(value: str) -> re.Pattern[str]:
    chars = _alnum(value)
    gap = r"[\s().-]*"
    body = gap.join(re.escape(c) for c in chars)
    national = re.fullmatch(
        r"\+\s?(\d{1,3})[\s().-]*(\d[\d\s().-]+)|0(\d[\d\s().-]+)", value.strip()
    )
    if national:
        # A national number: "+44 7700 900123", "+44 (0)7700 900123" and "07700 900123"
        # are one number; so are "+1 202 555 0142", "(202) 555-0142" and "2025550142".
        rest = gap.join(re.escape(c) for c in _alnum(national[2] or national[3]))
        code = national[1] or r"\d{1,3}"
        body = rf"(?:\+?\s?{code}{gap}(?:\(0\){gap})?|0{gap})?{rest}"
    return re.compile(r"(?<![A-Za-z0-9+])" + body + r"(?![A-Za-z0-9])", re.IGNORECASE)


def _digits(text: str, value: str) -> Iterator[Mention]:
    for m in _digit_pattern(value).finditer(text):
        yield Mention(m.start(), m.end(), _alnum(value))


def _codes(text: str, value: str | None) -> Iterator[Mention]:
    if value is None:
        pattern = re.compile(_EDGE_BEFORE + r"[A-Za-z]{1,2}[\s-]?\d{1,3}" + _EDGE_AFTER)
    else:
        runs = re.findall(r"[A-Za-z]+|\d+", value)
        body = r"[\s-]?".join(re.escape(run) for run in runs)
        pattern = re.compile(_EDGE_BEFORE + body + _EDGE_AFTER, re.IGNORECASE)
    for m in pattern.finditer(text):
        token = m.group(0)
        if value is not None or (re.search(r"[A-Z]", token) and not token[0].isspace()):
            yield Mention(m.start(), m.end(), _alnum(token))
    if value is not None:  # regrouped ("RT 44 09"), and candidates of its shape ("RT4490")
        yield from _regrouped(text, value)
        yield from _shaped(text, value)


def _phrases(text: str, value: str) -> Iterator[Mention]:
    day = WEEKDAY_NUMBERS.get(value.lower())
    if day is not None:  # "Thursday" as "Thu", "Thur" or "Thurs"
        names = sorted((n for n, d in WEEKDAY_NUMBERS.items() if d == day), key=len, reverse=True)
        pattern = re.compile(r"\b(?:" + "|".join(names) + r")\b\.?", re.IGNORECASE)
        for m in pattern.finditer(text):
            yield Mention(m.start(), m.end(), value.lower())
        return
    words = value.split()
    if 1 < len(words) <= 3:  # "the Larkspur project" states "Project Larkspur"
        for order in itertools.permutations(words):
            if list(order) != words:
                joined = r"\s+".join(re.escape(w) for w in order)
                for m in re.finditer(r"(?<![A-Za-z0-9])" + joined + r"(?![A-Za-z0-9])", text, re.I):
                    yield Mention(m.start(), m.end(), value.lower())
    body = r"\s+".join(re.escape(w) for w in words[:-1])
    stem = words[-1]
    if len(stem) > 3 and stem.endswith("s") and not stem.endswith(("ss", "us", "is")):
        stem = stem[:-1]
    last = re.escape(stem) + r"(?:e?s)?"
    full = (body + r"\s+" if body else "") + last
    pattern = re.compile(r"(?<![A-Za-z0-9])" + full + r"(?![A-Za-z0-9])", re.IGNORECASE)
    for m in pattern.finditer(text):
        yield Mention(m.start(), m.end(), value.lower())


# ---------------------------------------------------------------- dispatch
def kind_of(value: str) -> Kind:
    """The kind of an expected value, decided by the whole value."""
    text = normalise(value)
    if money.is_money(text):
        return "money"
    if any(form.fullmatch(text) for form in DATE_FORMS):
        return "date"
    if any(form.fullmatch(text) for form in TIME_FORMS):
        return "time"
    if _ID_SHAPE.match(text) or (
        _ID_TOKEN.fullmatch(text) and (len(_alnum(text)) > 8 or re.search(r"[-/._]", text))
    ):
        return "identifier"
    if any(c.isdigit() for c in text) and _DIGITS_VALUE.fullmatch(text.upper()):
        return "digits"
    if _SHORT_CODE.fullmatch(text):
        return "code"
    return "phrase"


_SAME: dict[Kind, Callable[[object, object], bool]] = {
    "money": money.same_money,
    "date": same_day,
    "time": same_time,
}


@functools.lru_cache(maxsize=4096)
def value_key(value: str, locale: Locale = "day-first") -> object:
    """The canonical key of an expected value (what its mentions are compared with)."""
    text = normalise(value)
    if kind_of(value) == "money":
        return money.expected_amount(text)
    found = find_all(text, value, locale)
    whole = [m for m in found if (m.start, m.end) == (0, len(text))]
    return whole[0].key if whole else _alnum(text) or text.lower()


def _longest(found: Iterable[Mention]) -> list[Mention]:
    """Overlapping readings of one stretch of text ("GBP 1,745" also holds a bare
    "1,745"): the first, then the longest, stands for it."""
    kept: list[Mention] = []
    for mention in sorted(found, key=lambda m: (m.start, -m.end)):
        if not kept or mention.start >= kept[-1].end:
            kept.append(mention)
    return kept


def _readings(text: str, value: str, locale: Locale) -> list[Mention]:
    """Every reading in normalised `text` of a value of `value`'s kind, readable or not."""
    kind = kind_of(value)
    if kind == "money":
        expected = money.expected_amount(value)
        found: Iterable[Mention] = money.readings(text, expected and expected.currencies)
    elif kind == "date":
        found = date_readings(text, locale)
    elif kind == "time":
        found = times(text)
    elif kind == "identifier":
        found = _identifiers(text, value)
    elif kind == "digits":
        found = _digits(text, value)
    elif kind == "code":
        found = [*_codes(text, value), *_codes(text, None)]
    else:
        found = _phrases(text, value)
    return _longest(found)


def find_all(text: str, value: str, locale: Locale = "day-first") -> list[Mention]:
    """Every mention in normalised `text` of a value of `value`'s kind (and, for
    identifiers, shape) that reads as one value: the candidates a single-value answer
    is checked against. None of them overlaps a span `unreadable` returns."""
    return [m for m in _readings(text, value, locale) if not isinstance(m.key, Unreadable)]


def unreadable(text: str, value: str, locale: Locale = "day-first") -> list[Mention]:
    """The spans of normalised `text` that look like a value of `value`'s kind but do not
    read as one value with confidence (module doc), each with an `Unreadable` key that
    says why. A scorer that finds no readable value of the kind but one of these cannot
    tell right from wrong: the answer is unresolved, not a guess."""
    return [m for m in _readings(text, value, locale) if isinstance(m.key, Unreadable)]


def states(value: str, mention: Mention, locale: Locale = "day-first") -> bool:
    """Whether `mention` (found by `find_all` for a value of `value`'s kind) states `value`."""
    wanted = value_key(value, locale)
    same = _SAME.get(kind_of(value))
    return same(wanted, mention.key) if same is not None else wanted == mention.key


def find_value(text: str, value: str, locale: Locale = "day-first") -> list[Mention]:
    """The mentions in normalised `text` that state `value` itself."""
    return [m for m in find_all(text, value, locale) if states(value, m, locale)]


_SPECIFIC = re.compile(
    r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+(?![\w-])"
    r"|(?<![\w.,])\d{3,}(?![\w])"
    # one run of letters and digits that is a code, not a number with a unit or an
    # ordinal ("1990s", "10am", "4th", "mp3"): letters then three or more digits
    # ("PP4471"), or letters and digits alternating twice or more ("0xE8B4F925", "A7X9")
    r"|(?<![\w-])(?:[A-Za-z]{2,}\d{3,}|\w*?(?:[A-Za-z]+\d+){2,}\w*|\w*?(?:\d+[A-Za-z]+){2,}\d\w*)(?![\w-])"
)


def specifics(text: str, locale: Locale = "day-first") -> list[Mention]:
    """Every specific value normalised `text` states: amounts, dates, times, reference
    numbers and numbers of three or more digits (what an invented answer consists of),
    the ones that do not read as one value (`Unreadable` keys) included."""
    found = [*money.readings(text), *date_readings(text, locale), *times(text)]
    found += [Mention(m.start(), m.end(), _alnum(m.group(0))) for m in _SPECIFIC.finditer(text)]
    return _longest(found)
