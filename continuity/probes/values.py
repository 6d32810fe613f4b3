"""Values by kind: where an answer states a value, as spans of the normalised answer.

Every function here reads text that already went through `normalise` (so dashes are
``-``, zero-width characters are gone and full-width digits are ASCII) and returns
`Mention`s: a span and a canonical key, so two renderings of one value share a key.

A value's kind is decided by the whole expected value (`kind_of`):

- ``money``: a currency (``$``, ``£``, ``€``, ``USD``/``GBP``/``EUR``, ``dollars``/
  ``pounds``/``euros``) and an amount, with thousands grouping and a decimal point or a
  decimal comma (``€456,00``, ``€1.745,00``). A bare amount counts only when it is
  written as money is (two decimals, ``483.00``, or thousands grouping, ``5,135``); it
  then matches the expected amount in any currency, since the question fixes it;
- ``date``: day and month names (``18th June``, ``Jun 18``, ``Friday, 18 June``), ISO
  ``2027-06-18`` and numeric dates (``18.06.2027``, ``18/06/2027``, ``06/18/2027``,
  ``18/06``) read in the trace's locale, where a day above 12 fixes the order;
- ``time``: ``7:30pm``, ``19:30``, ``19.30``, ``19:30h``, ``1930 hrs``, ``19h30``,
  ``noon``, and spelled-out times (``half past seven in the evening``, ``seven thirty
  pm``, ``quarter to eight``); a bare ``7:30`` may mean either half of the day;
- ``identifier`` (``AWD-7K2Q-9DXX``): its alphanumeric runs in order with any separators
  or none, never inside a longer token;
- ``digits`` (phone numbers and postcodes): their digits and letters in order with any
  spacing or punctuation, ``+44`` standing for a leading ``0``;
- ``code`` (``C7``, ``B14``): an optional space or hyphen between letters and digits;
- ``phrase``: other terms, word by word on word boundaries, a final ``s`` optional.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Literal, NamedTuple

from continuity.probes.normalise import mentions_pattern, normalise

__all__ = [
    "KINDS",
    "Kind",
    "Locale",
    "Mention",
    "find_all",
    "find_value",
    "kind_of",
    "specifics",
    "states",
    "value_key",
]

Locale = Literal["day-first", "month-first", "unknown"]
Kind = Literal["money", "date", "time", "identifier", "digits", "code", "phrase"]
KINDS: tuple[Kind, ...] = ("money", "date", "time", "identifier", "digits", "code", "phrase")


class Mention(NamedTuple):
    start: int
    end: int
    key: object


# ---------------------------------------------------------------- money
_NUMBER = r"\d(?:[\d,.]*\d)?"
_MONEY = re.compile(
    r"(?i)(?P<symbol>[$£€])\s?(?P<a>" + _NUMBER + r")"
    r"|\b(?P<code>USD|GBP|EUR)\s?(?P<b>" + _NUMBER + r")"
    r"|(?<![\d.,])(?P<c>" + _NUMBER + r")\s?(?P<unit>USD|GBP|EUR|dollars?|pounds?|euros?)\b"
    r"|(?<![\w$£€.,-])(?P<bare>\d{1,3}(?:,\d{3})+(?:\.\d{2})?|\d+[.,]\d{2})(?!\w)(?![.,:-]\d)"
)
_CURRENCIES = {"$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD"} | {
    "£": "GBP",
    "gbp": "GBP",
    "pound": "GBP",
    "pounds": "GBP",
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
}
_GROUPED = re.compile(r"\d{1,3}(?:([,.])\d{3})+|\d+")


def _amount(number: str) -> Decimal | None:
    """``1,745`` / ``1745.00`` / ``456,00`` / ``1.745,00`` as a Decimal; None when the
    separators are not a grouping and a decimal mark."""
    marks = [c for c in number if c in ",."]
    whole, fraction = number, ""
    if marks:
        last = max(number.rfind(","), number.rfind("."))
        tail = number[last + 1 :]
        # A single mark before exactly three digits groups thousands ("1,745"); any other
        # last mark is the decimal mark ("456,00", "172.5", "1.745,00").
        if not (len(marks) >= 1 and len(tail) == 3 and len(set(marks)) == 1):
            whole, fraction = number[:last], tail
    grouped = _GROUPED.fullmatch(whole)
    if grouped is None:
        return None
    if fraction and grouped.group(1) == number[len(whole)]:
        return None  # "1,745,00": the decimal mark repeats the grouping mark
    digits = re.sub(r"[,.]", "", whole)
    return Decimal(digits + ("." + fraction if fraction else ""))


def _money(text: str) -> Iterator[Mention]:
    for m in _MONEY.finditer(text):
        currency = m["symbol"] or m["code"] or m["unit"]
        amount = _amount(m["a"] or m["b"] or m["c"] or m["bare"])
        if amount is not None:
            key = (_CURRENCIES[currency.lower()] if currency else None, amount)
            yield Mention(m.start(), m.end(), key)


def _same_money(expected: object, stated: object) -> bool:
    assert isinstance(expected, tuple) and isinstance(stated, tuple)
    return expected[1] == stated[1] and stated[0] in (None, expected[0])


# ---------------------------------------------------------------- dates
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_NUMBERS = {n: i for i, n in enumerate(_MONTHS, 1)} | {
    n[:3]: i for i, n in enumerate(_MONTHS, 1)
}
_MONTH_NUMBERS["sept"] = 9
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY_NUMBERS = {n: i for i, n in enumerate(_WEEKDAYS)} | {
    n[:3]: i for i, n in enumerate(_WEEKDAYS)
}
_WEEKDAY_NUMBERS |= {"tues": 1, "weds": 2, "thur": 3, "thurs": 3}


def _alternation(names: Iterable[str]) -> str:
    return "|".join(sorted(names, key=len, reverse=True))


_WEEKDAY = r"(?:\b(?P<weekday>" + _alternation(_WEEKDAY_NUMBERS) + r")\b\.?,?\s+)?"
_ORDINALS = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
]
_ORDINAL_NUMBERS = {word: n for n, word in enumerate(_ORDINALS, 1)}
_ORDINAL_NUMBERS |= {f"twenty-{w}": 20 + n for n, w in enumerate(_ORDINALS[:9], 1)}
_ORDINAL_NUMBERS |= {f"twenty {w}": 20 + n for n, w in enumerate(_ORDINALS[:9], 1)}
_ORDINAL_NUMBERS |= {"thirtieth": 30, "thirty-first": 31, "thirty first": 31}
_DAY = (
    r"(?P<day>\d{1,2}(?:st|nd|rd|th)?|"
    + "|".join(sorted(_ORDINAL_NUMBERS, key=len, reverse=True))
    + r")\b"
)
_MONTH = r"\b(?P<month>" + _alternation(_MONTH_NUMBERS) + r")\b\.?"
_YEAR = r"(?:,?\s+(?P<year>(?:19|20)\d{2})\b)?"
_DATE_DMY = re.compile(
    r"(?i)" + _WEEKDAY + r"(?:the\s+)?(?<![\d.,:/-])\b" + _DAY + r"(?:\s+of)?\s+" + _MONTH + _YEAR
)
_DATE_MDY = re.compile(
    r"(?i)" + _WEEKDAY + _MONTH + r"\s+(?:the\s+)?" + _DAY + r"(?![:.]\d)" + _YEAR
)
_DATE_ISO = re.compile(r"(?<![\d-])(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})(?![\d-])")
# Numeric dates: with a year in any separator, or zero-padded "18/06" with a slash.
_DATE_NUMERIC = re.compile(
    r"(?i)" + _WEEKDAY + r"(?<![\d.,:/$£€-])(?P<a>\d{1,2})(?P<sep>[./-])(?P<b>\d{1,2})"
    r"(?P=sep)(?P<year>\d{4}|\d{2})(?![\d./-]?\d)"
    r"|(?<![\d.,:/$£€-])(?P<a2>\d{2})/(?P<b2>\d{2})(?![\d./-]?\d)"
)
_NAMED_DATES = (_DATE_DMY, _DATE_MDY, _DATE_ISO)
# The first day of a hedged list, "16 or 18 June", "16th and 18th June": it takes the
# month (and year) of the day that follows it.
_DATE_LISTED = re.compile(
    r"(?i)(?<![\d.,:/-])\b(?P<day>\d{1,2})(?:st|nd|rd|th)?(?=\s*(?:,|or|and|/|&)\s*(?:the\s+)?"
    r"\d{1,2}(?:st|nd|rd|th)?(?:\s+of)?\s+" + _MONTH + _YEAR + r")"
)


class Day(NamedTuple):
    year: int | None
    month: int
    day: int
    weekday: int | None

    def implied_weekday(self) -> int | None:
        if self.weekday is not None or self.year is None:
            return self.weekday
        return dt.date(self.year, self.month, self.day).weekday()


def _day(year: int | None, month: int, day: int, weekday: str | None) -> Day | None:
    try:
        dt.date(year or 2000, month, day)  # 2000 is a leap year: 29 February stands
    except ValueError:
        return None
    return Day(year, month, day, _WEEKDAY_NUMBERS[weekday.lower()] if weekday else None)


def _named_day(m: re.Match[str]) -> Day | None:
    month = m["month"]
    number = int(month) if month.isdigit() else _MONTH_NUMBERS[month.lower()]
    year = int(m["year"]) if m["year"] else None
    day = m["day"].lower()
    number_of_day = _ORDINAL_NUMBERS.get(day) or int(re.sub(r"\D", "", day))
    return _day(year, number, number_of_day, m.groupdict().get("weekday"))


def _numeric_days(m: re.Match[str], locale: Locale) -> list[Day]:
    a, b = (int(m["a"]), int(m["b"])) if m["a"] else (int(m["a2"]), int(m["b2"]))
    year: int | None = None
    if m["year"]:
        year = int(m["year"]) + (2000 if len(m["year"]) == 2 else 0)
    if a > 12 or (b <= 12 and locale == "day-first"):
        orders = [(a, b)]  # (day, month)
    elif b > 12 or locale == "month-first":
        orders = [(b, a)]
    else:
        return []  # ambiguous in an unknown locale: no reading
    days = (_day(year, month, day, m["weekday"]) for day, month in orders)
    return [d for d in days if d is not None]


def _dates(text: str, locale: Locale) -> Iterator[Mention]:
    for form in _NAMED_DATES:
        for m in form.finditer(text):
            if (day := _named_day(m)) is not None:
                yield Mention(m.start(), m.end(), day)
    for m in _DATE_LISTED.finditer(text):
        if (day := _named_day(m)) is not None:
            yield Mention(m.start(), m.end(), day)
    for m in _DATE_NUMERIC.finditer(text):
        for day in _numeric_days(m, locale):
            yield Mention(m.start(), m.end(), day)


def _same_day(expected: object, stated: object) -> bool:
    """Same month and day; years, where both sides state one, agree; weekdays, where both
    sides state or imply one, agree."""
    assert isinstance(expected, Day) and isinstance(stated, Day)
    if (expected.month, expected.day) != (stated.month, stated.day):
        return False
    if None not in (expected.year, stated.year) and stated.year != expected.year:
        return False  # a year left out is no contradiction; another year is
    wanted, said = expected.implied_weekday(), stated.implied_weekday()
    return wanted is None or said is None or wanted == said


# ---------------------------------------------------------------- times
_NOT_AFTER = r"(?<![\d:.,$£€])"
_TIME_12 = re.compile(
    r"(?i)" + _NOT_AFTER + r"\b(?P<hour>\d{1,2})(?:[:.h](?P<minute>[0-5]\d))?\s?"
    r"(?P<half>[ap])\.?\s?m\b\.?"
)
_TIME_24 = re.compile(
    r"(?i)"
    + _NOT_AFTER
    + r"\b(?P<hour>\d{1,2})(?P<sep>[:.h])(?P<minute>[0-5]\d)(?:\s?h(?:rs?|ours)?\b)?"
    r"(?![:.,]\d)(?!\s?[ap]\.?\s?m\b)"
)
_TIME_HRS = re.compile(
    r"(?i)" + _NOT_AFTER + r"\b(?P<hour>[01]\d|2[0-3])(?P<minute>[0-5]\d)\s?h(?:rs?|ours)?\b"
)
_TIME_WORD = re.compile(r"(?i)\b(?:12\s?)?(?P<word>noon|midday|midnight)\b")
_NUMBER_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_HOUR_WORD = r"(?P<hw>" + "|".join(_NUMBER_WORDS) + r"|\d{1,2})"
_MINUTE_WORDS = {"oh five": 5, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30}
_MINUTE_WORDS |= {"forty": 40, "forty-five": 45, "forty five": 45, "fifty": 50}
_PART = (
    r"(?:\s*(?:o'clock))?(?:\s*(?P<part>[ap]\.?\s?m\b\.?|in the (?:morning|afternoon|evening)"
    r"|at night|tonight|this (?:morning|afternoon|evening)))?"
)
_TIME_SPOKEN = re.compile(
    r"(?i)\b(?:(?P<rel>half|(?:a\s)?quarter|ten|five|twenty|twenty-five)\s+(?P<dir>past|to|after)\s+"
    + _HOUR_WORD
    + r"|(?P<hw2>"
    + "|".join(_NUMBER_WORDS)
    + r")(?:\s+(?P<mw>"
    + _alternation(_MINUTE_WORDS)
    + r"))?(?=\s*(?:o'clock|[ap]\.?\s?m\b|in the (?:morning|afternoon|evening)"
    + r"|at night|tonight|this (?:morning|afternoon|evening))))"
    + _PART
)
_RELATIVE = {"half": 30, "quarter": 15, "a quarter": 15, "ten": 10, "five": 5, "twenty": 20}
_RELATIVE["twenty-five"] = 25


def _readings(hour: int, minute: int, part: str | None) -> set[tuple[int, int]]:
    """The (hour, minute) readings of a clock time with an optional half-day marker."""
    if part:
        if not 1 <= hour <= 12:
            return set()
        evening = part[0].lower() == "p" or any(
            w in part.lower() for w in ("after", "even", "night")
        )
        return {(hour % 12 + (12 if evening else 0), minute)}
    if hour > 23:
        return set()
    if hour >= 13 or hour == 0:
        return {(hour, minute)}
    return {(hour % 12, minute), (hour % 12 + 12, minute)}


def _spoken(m: re.Match[str]) -> set[tuple[int, int]]:
    word = m["hw"] or m["hw2"]
    hour = _NUMBER_WORDS.index(word.lower()) + 1 if not word.isdigit() else int(word)
    if m["rel"]:
        offset = _RELATIVE[m["rel"].lower()]
        hour, minute = (hour, offset) if m["dir"].lower() != "to" else (hour - 1, 60 - offset)
        hour = hour or 12
    else:
        minute = _MINUTE_WORDS[m["mw"].lower()] if m["mw"] else 0
    return _readings(hour, minute, m["part"])


def _clock(m: re.Match[str]) -> set[tuple[int, int]]:
    groups = m.groupdict()
    if groups.get("word"):
        return {(0, 0)} if groups["word"].lower() == "midnight" else {(12, 0)}
    if "hw" in groups:
        return _spoken(m)
    hour, minute = int(groups["hour"]), int(groups["minute"] or 0)
    if groups.get("half"):
        return _readings(hour, minute, groups["half"] + "m")
    if m.re is _TIME_HRS or groups["hour"].startswith("0") or "h" in m.group(0).lower():
        return {(hour, minute)} if hour <= 23 else set()
    if groups["sep"] == "." and hour <= 12:
        return set()  # a bare "7.30" is as likely a number as a time
    return _readings(hour, minute, None)


def _times(text: str) -> Iterator[Mention]:
    for form in (_TIME_12, _TIME_24, _TIME_HRS, _TIME_WORD, _TIME_SPOKEN):
        for m in form.finditer(text):
            if readings := _clock(m):
                yield Mention(m.start(), m.end(), frozenset(readings))


def _same_time(expected: object, stated: object) -> bool:
    assert isinstance(expected, frozenset) and isinstance(stated, frozenset)
    return bool(expected & stated)


# ---------------------------------------------------------------- identifiers and codes
_ID_SHAPE = re.compile(r"^[A-Z]{2,}[-/][A-Z0-9][A-Z0-9-]*$")
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


def _identifiers(text: str, value: str) -> Iterator[Mention]:
    seen: set[tuple[int, int]] = set()
    pattern = mentions_pattern(value)
    if pattern is not None:
        for m in pattern.finditer(text):
            seen.add(m.span())
            yield Mention(m.start(), m.end(), _alnum(m.group(0)))
    for m in _identifier_shape(value).finditer(text):
        token = m.group(0)
        if m.span() not in seen and re.search(r"\d", token):
            yield Mention(m.start(), m.end(), _alnum(token))


def _digit_pattern(value: str) -> re.Pattern[str]:
    chars = _alnum(value)
    gap = r"[\s().-]*"
    body = gap.join(re.escape(c) for c in chars)
    if chars.startswith("0") and chars.isdigit():
        # "+44 7700 900123" and "+44 (0)7700 900123" for "07700 900123"
        rest = gap.join(re.escape(c) for c in chars[1:])
        body = rf"(?:{body}|\+\s?\d{{1,3}}{gap}(?:\(0\){gap})?{rest})"
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


def _phrases(text: str, value: str) -> Iterator[Mention]:
    words = value.split()
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
    if (m := _MONEY.fullmatch(text)) and not m["bare"]:
        return "money"
    if any(form.fullmatch(text) for form in _NAMED_DATES):
        return "date"
    if any(form.fullmatch(text) for form in (_TIME_12, _TIME_24, _TIME_WORD)):
        return "time"
    if _ID_SHAPE.match(text):
        return "identifier"
    if any(c.isdigit() for c in text) and _DIGITS_VALUE.fullmatch(text.upper()):
        return "digits"
    if _SHORT_CODE.fullmatch(text):
        return "code"
    return "phrase"


_SAME: dict[Kind, Callable[[object, object], bool]] = {
    "money": _same_money,
    "date": _same_day,
    "time": _same_time,
}


@functools.lru_cache(maxsize=4096)
def value_key(value: str, locale: Locale = "day-first") -> object:
    """The canonical key of an expected value (what its mentions are compared with)."""
    text = normalise(value)
    found = find_all(text, value, locale)
    whole = [m for m in found if (m.start, m.end) == (0, len(text))]
    return whole[0].key if whole else _alnum(text) or text.lower()


def find_all(text: str, value: str, locale: Locale = "day-first") -> list[Mention]:
    """Every mention in normalised `text` of a value of `value`'s kind (and, for
    identifiers, shape): the candidates a single-value answer is checked against."""
    kind = kind_of(value)
    if kind == "money":
        found: Iterable[Mention] = _money(text)
    elif kind == "date":
        found = _dates(text, locale)
    elif kind == "time":
        found = _times(text)
    elif kind == "identifier":
        found = _identifiers(text, value)
    elif kind == "digits":
        found = _digits(text, value)
    elif kind == "code":
        found = [*_codes(text, value), *_codes(text, None)]
    else:
        found = _phrases(text, value)
    # Overlapping readings of one stretch of text ("GBP 1,745" also holds a bare
    # "1,745"): the longest, then the first found, stands for it.
    kept: list[Mention] = []
    for mention in sorted(found, key=lambda m: (m.start, -m.end)):
        if not kept or mention.start >= kept[-1].end:
            kept.append(mention)
    return kept


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
)


def specifics(text: str, locale: Locale = "day-first") -> list[Mention]:
    """Every specific value normalised `text` states: amounts, dates, times, reference
    numbers and numbers of three or more digits (what an invented answer consists of)."""
    found = [*_money(text), *_dates(text, locale), *_times(text)]
    found += [Mention(m.start(), m.end(), _alnum(m.group(0))) for m in _SPECIFIC.finditer(text)]
    kept: list[Mention] = []
    for mention in sorted(found, key=lambda m: (m.start, -m.end)):
        if not kept or mention.start >= kept[-1].end:
            kept.append(mention)
    return kept
