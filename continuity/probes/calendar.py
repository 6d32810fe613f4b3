"""Dates and times of day in an answer: the `calendar` kinds of `continuity.probes.values`.

Dates: day and month names (``18th June``, ``Jun 18``, ``Friday, 18 June``, ``the
eighteenth of June``, ``18-Jun-2027``), the first day of a hedged list (``16 or 18
June``), a weekday with an ordinal day (``Thursday the 15th``), year first (ISO
``2027-06-18``, ``2027/06/18``, ``2027.6.18``; never year, day, month), and numeric
dates (``18.06.2027``, ``18/06/2027``, ``06/18/2027``, ``18/06``). A numeric date's order
is fixed by a day above 12, else by a weekday that fits one order only (``Monday
09/11/2026`` is 9 November), else by the trace's locale (``day-first``,
``month-first``). Month names of other languages read too (every CLDR locale's, from
babel: ``9 novembre 2026``, ``9. listopada 2026``, ``9 de noviembre de 2026``), a name
that is also an English word (``mars``) only before a year, as is a day with a dot
(``9. November 2026``: ``page 9. June is`` ends a sentence). Two readings and nothing to
choose (``09/11/2026`` in an ``unknown`` locale), a weekday that fits only the order the
locale does not use, or a month name that names another month in another language
(``listopad``) make the date unreadable (`date_readings` gives it an `Unreadable` key;
`dates` skips it).

Times: ``7:30pm``, ``19:30``, ``19.30``, ``19:30h``, ``1930 hrs``, ``19h30``,
``noon``, and spelled-out times (``half past seven in the evening``, ``seven thirty pm``,
``quarter to eight``), a digit time with a spelled-out part of the day (``7.30 in the
evening``) and British ``half seven`` (7:30); a bare ``7:30`` may mean either half of the
day.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from typing import Literal, NamedTuple

from continuity.probes.mentions import Mention, Unreadable
from continuity.probes.month_table import COMMON, MONTHS

__all__ = [
    "DATE_FORMS",
    "TIME_FORMS",
    "WEEKDAY_NUMBERS",
    "Day",
    "Locale",
    "Mention",
    "date_readings",
    "dates",
    "same_day",
    "same_time",
    "times",
]

Locale = Literal["day-first", "month-first", "unknown"]


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
    r"(?i)"
    + _WEEKDAY
    + r"(?:the\s+)?(?<![\d.,:/-])\b"
    + _DAY
    + r"(?P<dot>\.)?(?:\s+of)?\s+"
    + _MONTH
    + _YEAR
)
_DATE_MDY = re.compile(
    r"(?i)" + _WEEKDAY + _MONTH + r"\s+(?:the\s+)?" + _DAY + r"(?![:.]\d)" + _YEAR
)
# Year first: ISO 2027-06-18, and 2027/06/18 or 2027.6.18 (never year, day, month).
_DATE_ISO = re.compile(
    r"(?<![\d.,:/-])(?P<year>\d{4})(?P<sep>[-/.])(?P<month>\d{1,2})(?P=sep)(?P<day>\d{1,2})"
    r"(?![\d/-]|\.\d)"
)
# A day, a month name and a year joined by one separator: "9-Nov-2026", "09.Nov.2026".
_DATE_JOINED = re.compile(
    r"(?i)"
    + _WEEKDAY
    + r"(?<![\d.,:/-])\b(?P<day>\d{1,2})(?P<sep>[-/.])"
    + _MONTH.replace(r"\b\.?", r"\b")
    + r"(?P=sep)(?P<year>\d{4})\b"
)
# Numeric dates: with a year in any separator, or zero-padded "18/06" with a slash.
_DATE_NUMERIC = re.compile(
    r"(?i)" + _WEEKDAY + r"(?<![\d.,:/$£€-])(?P<a>\d{1,2})(?P<sep>[./-])(?P<b>\d{1,2})"
    r"(?P=sep)(?P<year>\d{4}|\d{2})(?![\d./-]?\d)"
    r"|(?<![\d.,:/$£€-])(?P<a2>\d{2})/(?P<b2>\d{2})(?![\d./-]?\d)"
)
_NAMED_DATES = (_DATE_DMY, _DATE_MDY, _DATE_ISO, _DATE_JOINED)
# A day and a month name of another language (CLDR's, `continuity.probes.month_table`):
# "9 novembre 2026", "9. listopada 2026", "9 de noviembre de 2026".
_DATE_OTHER_LANGUAGE = re.compile(
    r"(?<![\d.,:/-])\b(?P<day>\d{1,2})(?P<dot>\.)?\s+(?:(?i:de|di|del|of)\s+)?(?P<name>[^\W\d_]{3,})\b"
    r"(?:,?\s+(?:(?i:de|del)\s+)?(?P<year>(?:19|20)\d{2})\b)?"
)
_COMMON_NAMES = frozenset(COMMON)
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


def _numeric_day(m: re.Match[str], locale: Locale) -> Day | Unreadable | None:
    """A numeric date's day: the one order that makes a date, else the one the answer's
    weekday fits, else the locale's; two readings and nothing to choose are unreadable."""
    a, b = (int(m["a"]), int(m["b"])) if m["a"] else (int(m["a2"]), int(m["b2"]))
    year: int | None = None
    if m["year"]:
        year = int(m["year"]) + (2000 if len(m["year"]) == 2 else 0)
    weekday = m["weekday"] if m["a"] else None
    readings = {
        order: day
        for order in dict.fromkeys([(a, b), (b, a)])  # (day, month)
        if (day := _day(year, order[1], order[0], weekday)) is not None
    }
    if len(readings) <= 1:
        return next(iter(readings.values()), None)
    preferred = {"day-first": (a, b), "month-first": (b, a)}.get(locale)
    if weekday is not None and year is not None:
        fits = [o for o, d in readings.items() if dt.date(year, o[1], o[0]).weekday() == d.weekday]
        if len(fits) == 1 and preferred in (None, fits[0]):
            return readings[fits[0]]
        if len(fits) == 1:
            return Unreadable("the weekday fits the other order of day and month")
    if preferred is not None:
        return readings[preferred]
    return Unreadable("day and month in either order")


# A weekday with an ordinal day and no month ("Thursday - the 15th", "Thu 15th"): the
# month is unknown (0) and the weekday must agree with the expected date's.
_DATE_WEEKDAY_ORDINAL = re.compile(
    r"(?i)\b(?P<weekday>" + _alternation(_WEEKDAY_NUMBERS) + r")\b\.?\s*[,-]?\s*(?:the\s+)?"
    r"(?P<day>\d{1,2}(?:st|nd|rd|th)|"
    + "|".join(sorted(_ORDINAL_NUMBERS, key=len, reverse=True))
    + r")\b(?!\s+(?:of\s+)?(?:"
    + _alternation(_MONTH_NUMBERS)
    + r")\b)"
)


def _other_language_day(m: re.Match[str]) -> Day | Unreadable | None:
    """A day with another language's month name; a name that is also an English word
    (``mars``) only before a year, and one that names two months in two languages
    (``listopad``) unreadable."""
    name = m["name"].lower()
    months = MONTHS.get(name)
    if months is None or (name in _COMMON_NAMES and not m["year"]):
        return None
    if m["dot"] and not m["year"]:
        return None  # "page 9. Listopad was" may end a sentence
    if len(months) > 1:
        return Unreadable(f"{m['name']!r} names a different month in another language")
    return _day(int(m["year"]) if m["year"] else None, months[0], int(m["day"]), None)


def date_readings(text: str, locale: Locale) -> Iterator[Mention]:
    """Every date in `text`, with `Unreadable` keys for numeric dates that may be read in
    either order (module doc). Spans may overlap."""
    for form in _NAMED_DATES:
        for m in form.finditer(text):
            if m.groupdict().get("dot") and not m["year"]:
                continue  # "page 9. June is" ends a sentence; "9. June 2027" is a date
            if (day := _named_day(m)) is not None:
                yield Mention(m.start(), m.end(), day)
    for m in _DATE_LISTED.finditer(text):
        if (day := _named_day(m)) is not None:
            yield Mention(m.start(), m.end(), day)
    for m in _DATE_OTHER_LANGUAGE.finditer(text):
        if (key := _other_language_day(m)) is not None:
            yield Mention(m.start(), m.end(), key)
    for m in _DATE_NUMERIC.finditer(text):
        if (key := _numeric_day(m, locale)) is not None:
            yield Mention(m.start(), m.end(), key)
    for m in _DATE_WEEKDAY_ORDINAL.finditer(text):
        number = _ORDINAL_NUMBERS.get(m["day"].lower()) or int(re.sub(r"\D", "", m["day"]))
        if 1 <= number <= 31:
            yield Mention(
                m.start(), m.end(), Day(None, 0, number, _WEEKDAY_NUMBERS[m["weekday"].lower()])
            )


def dates(text: str, locale: Locale) -> Iterator[Mention]:
    """Every date in `text` that reads as one day (`Day` keys)."""
    return (m for m in date_readings(text, locale) if isinstance(m.key, Day))


def same_day(expected: object, stated: object) -> bool:
    """Same month and day; years, where both sides state one, agree; weekdays, where both
    sides state or imply one, agree."""
    assert isinstance(expected, Day) and isinstance(stated, Day)
    if stated.month == 0:  # a weekday and a day of the month: both must agree
        wanted = expected.implied_weekday()
        return stated.day == expected.day and wanted is not None and wanted == stated.weekday
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
# A digit clock time with a spelled-out part of the day: "7.30 in the evening", "8 at night".
_TIME_PART = re.compile(
    r"(?i)" + _NOT_AFTER + r"\b(?P<hour>\d{1,2})(?:[:.](?P<minute>[0-5]\d))?"
    r"(?:\s*o'clock)?\s+(?P<part>in the (?:morning|afternoon|evening)|at night|tonight"
    r"|this (?:morning|afternoon|evening))\b"
)
# British "half seven" (7:30), never "half seven hundred" or "half of".
_TIME_HALF = re.compile(
    r"(?i)\bhalf\s+(?P<hw>" + "|".join(_NUMBER_WORDS) + r")\b"
    r"(?!\s*(?:hundred|thousand|million|of|per|%|percent|kilo|mile|hour|day|week|pound|euro))"
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
    if m.re is _TIME_HALF:
        return _readings(_NUMBER_WORDS.index(groups["hw"].lower()) + 1, 30, groups["part"])
    if "hw" in groups:
        return _spoken(m)
    hour, minute = int(groups["hour"]), int(groups["minute"] or 0)
    if groups.get("part"):
        return _readings(hour, minute, groups["part"])
    if groups.get("half"):
        return _readings(hour, minute, groups["half"] + "m")
    if m.re is _TIME_HRS or groups["hour"].startswith("0") or "h" in m.group(0).lower():
        return {(hour, minute)} if hour <= 23 else set()
    if groups["sep"] == "." and hour <= 12:
        return set()  # a bare "7.30" is as likely a number as a time
    return _readings(hour, minute, None)


def times(text: str) -> Iterator[Mention]:
    """Every clock time in `text`; a time inside a longer reading of it (``7:30`` in
    ``7:30 in the evening``, ``seven`` in ``half seven``) is not read again."""
    found = [
        Mention(m.start(), m.end(), frozenset(readings))
        for form in (
            _TIME_12,
            _TIME_24,
            _TIME_HRS,
            _TIME_WORD,
            _TIME_SPOKEN,
            _TIME_PART,
            _TIME_HALF,
        )
        for m in form.finditer(text)
        if (readings := _clock(m))
    ]
    for mention in found:
        if not any(
            other.start <= mention.start
            and mention.end <= other.end
            and (other.end - other.start) > (mention.end - mention.start)
            for other in found
        ):
            yield mention


def same_time(expected: object, stated: object) -> bool:
    assert isinstance(expected, frozenset) and isinstance(stated, frozenset)
    return bool(expected & stated)


DATE_FORMS = _NAMED_DATES
TIME_FORMS = (_TIME_12, _TIME_24, _TIME_WORD)
WEEKDAY_NUMBERS = _WEEKDAY_NUMBERS
