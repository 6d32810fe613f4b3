"""Relative dates in human-written gold answers: the days they can mean.

Corpora that date their sessions (LoCoMo) write a temporal answer relative to a session
date when the speaker did: ``The week before 11 June 2028``, ``The Saturday before 14
August 2028``, ``The day after 3 May 2028``, ``The weekend of 22 August 2028``. A reader
that works the date out answers ``12 August 2028``. `gold_days` turns such a gold into
the set of calendar days it allows, so an answer that states one of them matches:

- ``day before D`` / ``day after D``: one day;
- ``<weekday> before D`` / ``<weekday> after D``: the nearest such weekday strictly
  before (after) D;
- ``week before D`` / ``week after D``: the seven days before (after) D;
- ``weekend before D`` / ``weekend after D``: the nearest Saturday and Sunday strictly
  before (after) D;
- ``week of D`` / ``weekend of D``: Monday to Sunday of D's week, or the Saturday and
  Sunday of D's weekend (D itself when it is one).

D is a date with a year (`continuity.probes.calendar.dates`); anything else gives None
and the gold is read as written.
"""

from __future__ import annotations

import datetime as dt
import re

from continuity.probes.calendar import WEEKDAY_NUMBERS, Day, Locale, dates

__all__ = ["gold_days", "states_one_of"]

_WEEKDAYS = "|".join(name for name in WEEKDAY_NUMBERS if name.endswith("day"))
_RELATIVE = re.compile(
    r"(?i)\b(?P<unit>day|week|weekend|" + _WEEKDAYS + r")\s+(?P<side>before|after|of)\s+$"
)


def _as_date(day: Day) -> dt.date | None:
    if day.year is None:
        return None
    return dt.date(day.year, day.month, day.day)


def _weekend(anchor: dt.date, step: int) -> set[dt.date]:
    """The nearest Saturday and Sunday strictly before (step -1) or after (step 1)."""
    found: set[dt.date] = set()
    day = anchor
    while len(found) < 2:
        day += dt.timedelta(days=step)
        if day.weekday() >= 5:
            found.add(day)
        elif found:
            break
    return found


def _days(unit: str, side: str, anchor: dt.date) -> set[dt.date]:
    step = -1 if side == "before" else 1
    if unit == "day":
        return {anchor + dt.timedelta(days=step)} if side != "of" else {anchor}
    if unit == "week":
        if side == "of":
            monday = anchor - dt.timedelta(days=anchor.weekday())
            return {monday + dt.timedelta(days=i) for i in range(7)}
        return {anchor + dt.timedelta(days=step * i) for i in range(1, 8)}
    if unit == "weekend":
        if side == "of":
            saturday = anchor + dt.timedelta(days=5 - anchor.weekday())
            if anchor.weekday() == 6:
                saturday = anchor - dt.timedelta(days=1)
            return {saturday, saturday + dt.timedelta(days=1)}
        return _weekend(anchor, step)
    weekday = WEEKDAY_NUMBERS[unit]
    if side == "of":
        return set()
    day = anchor + dt.timedelta(days=step)
    while day.weekday() != weekday:
        day += dt.timedelta(days=step)
    return {day}


def gold_days(gold: str, locale: Locale) -> tuple[tuple[int, int], set[dt.date]] | None:
    """The span of a gold's relative date phrase (its unit word to the end of its date)
    and the days it allows, or None when the gold holds no relative date."""
    for mention in dates(gold, locale):
        anchor = _as_date(mention.key) if isinstance(mention.key, Day) else None
        if anchor is None:
            continue
        phrase = _RELATIVE.search(gold[: mention.start])
        if phrase is None:
            continue
        days = _days(phrase["unit"].lower(), phrase["side"].lower(), anchor)
        if days:
            return (phrase.start(), mention.end), days
    return None


def states_one_of(text: str, days: set[dt.date], locale: Locale) -> list[tuple[int, int]]:
    """The spans where `text` states one of `days` (a date without a year matches by
    month and day; a stated weekday must agree)."""
    spans = []
    for mention in dates(text, locale):
        said = mention.key
        if not isinstance(said, Day) or said.month == 0:
            continue
        for day in days:
            if (said.month, said.day) != (day.month, day.day):
                continue
            if said.year not in (None, day.year):
                continue
            if said.weekday not in (None, day.weekday()):
                continue
            spans.append((mention.start, mention.end))
            break
    return spans
