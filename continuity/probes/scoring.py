"""Deterministic scorers, one per probe category, as the seed's category table says.

| category | scoring |
|---|---|
| tool_identifier | normalised exact match, as a whole token; a superseded decoy is stale |
| active_constraint | recall: every required term; task: any forbidden pattern is a violation |
| superseded_current | the current value present and no superseded value |
| commitment_status | the first status token (SENT, DRAFTED, ...) |
| artifact_status | the first status token (DRAFT, FINAL, SHARED, ...) |
| next_action | keyword proxy: every keyword present |
| abstention | UNKNOWN or an explicit "never came up" |
| redaction | fails if any 8-character run of the secret appears (line breaks ignored) |

Every answer gets one outcome: ``correct``, ``stale`` (a superseded value only),
``conflicted`` (current and superseded), ``abstained`` (including false abstention
when the answer was available), ``violation`` (a forbidden pattern), ``fabricated``
(anything else that is wrong) or ``leaked`` (the secret).

Values are matched by kind, decided by the whole expected value:

- money by currency and amount: ``$``, ``£`` or ``€`` (or ``USD``/``GBP``/``EUR`` and
  ``dollars``/``pounds``/``euros``) with optional thousands separators and decimals, so
  ``£1,745`` equals ``£1745.00`` and ``GBP 1,745`` but not ``$1,745``;
- dates by calendar day: day-month or month-day with full or abbreviated month names
  (``18th June``, ``Jun 18``, ``Friday, 18 June``) or ISO ``2027-06-18``. A year in the
  expected value must be stated; a weekday, where both sides state or imply one, must
  agree;
- times of day by clock time: ``7:30pm``, ``7:30 p.m.``, ``7.30pm``, ``19:30`` and
  ``19.30`` agree; a bare ``7:30`` may mean either half of the day; ``noon`` and
  ``midday`` are 12:00;
- reference identifiers (``AWD-7K2Q-9DXX``) as whole tokens compared without case or
  punctuation; phone numbers and postcodes by their characters without spaces;
- short codes (``C7``, ``B14``) case-insensitively with an optional space or hyphen
  between letters and digits, never inside a longer token (``C70``, ``HSM-C7``);
- other terms as case-insensitive phrases on word boundaries.

Known blind spots are listed in the README.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Literal, NamedTuple, get_args

import msgspec

from continuity.traces.schema import (
    ARTIFACT_STATUSES,
    COMMITMENT_STATUSES,
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    NextActionExpectation,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)

__all__ = ["OUTCOMES", "Outcome", "Score", "abstains", "contains_value", "score_answer"]

Outcome = Literal[
    "correct", "stale", "conflicted", "abstained", "violation", "fabricated", "leaked"
]
OUTCOMES: tuple[str, ...] = get_args(Outcome)

_ABSTAIN = re.compile(
    r"(?i)\bUNKNOWN\b|never came up|(?:was|were|is) (?:never|not) mentioned|not mentioned|"
    r"no (?:record|mention|information)|(?:don't|do not|cannot|can't) (?:know|find|tell)|"
    r"not (?:in|part of) (?:our|the|this) conversation|didn't come up|did not come up"
)
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9#!%*&+/._-]*[A-Za-z0-9#!%*]|[A-Za-z0-9]")
_ID_SHAPE = re.compile(r"^[A-Z]{2,}[-/][A-Z0-9][A-Z0-9-]*$")
_AMOUNT = r"\d(?:[\d,]*\d)?(?:\.\d+)?"
_MONEY = re.compile(
    r"(?i)(?P<symbol>[$£€])\s?(?P<a>" + _AMOUNT + r")"
    r"|\b(?P<code>USD|GBP|EUR)\s?(?P<b>" + _AMOUNT + r")"
    r"|(?<![\d.,])(?P<c>" + _AMOUNT + r")\s?(?P<unit>USD|GBP|EUR|dollars?|pounds?|euros?)\b"
)
_CURRENCIES = {
    "$": "USD",
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "£": "GBP",
    "gbp": "GBP",
    "pound": "GBP",
    "pounds": "GBP",
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
}
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
_MONTHS = (
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
)
_MONTH_NUMBERS = {name: number for number, name in enumerate(_MONTHS, 1)} | {
    name[:3]: number for number, name in enumerate(_MONTHS, 1)
}
_MONTH_NUMBERS["sept"] = 9
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_NUMBERS = {name: number for number, name in enumerate(_WEEKDAYS)} | {
    name[:3]: number for number, name in enumerate(_WEEKDAYS)
}
_WEEKDAY_NUMBERS |= {"tues": 1, "weds": 2, "thur": 3, "thurs": 3}


def _alternation(names: Iterable[str]) -> str:
    # longest first: a full name is preferred to its abbreviation
    return "|".join(sorted(names, key=len, reverse=True))


_WEEKDAY = r"(?:\b(?P<weekday>" + _alternation(_WEEKDAY_NUMBERS) + r")\b\.?,?\s+)?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\b"
_MONTH = r"\b(?P<month>" + _alternation(_MONTH_NUMBERS) + r")\b\.?"
_YEAR = r"(?:,?\s+(?P<year>(?:19|20)\d{2})\b)?"
# A day glued to a preceding number or dash is part of a range, a time or a decimal.
_DATE_DMY = re.compile(
    r"(?i)" + _WEEKDAY + r"(?:the\s+)?(?<![\d.,:/-])\b" + _DAY + r"(?:\s+of)?\s+" + _MONTH + _YEAR
)
_DATE_MDY = re.compile(
    r"(?i)" + _WEEKDAY + _MONTH + r"\s+(?:the\s+)?" + _DAY + r"(?![:.]\d)" + _YEAR
)
_DATE_ISO = re.compile(r"(?<![\d-])(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})(?![\d-])")
_DATE_FORMS = (_DATE_DMY, _DATE_MDY, _DATE_ISO)
# Times are not read next to other digits, separators or a currency symbol, so "$172.50"
# and "17:30" hold no "2.50" or "7:30".
_TIME_12 = re.compile(
    r"(?i)(?<![\d:.,$£€])\b(?P<hour>\d{1,2})(?:[:.](?P<minute>[0-5]\d))?\s?"
    r"(?P<half>[ap])\.?\s?m\b\.?"
)
_TIME_24 = re.compile(
    r"(?<![\d:.,$£€])\b(?P<hour>\d{1,2})(?P<sep>[:.])(?P<minute>[0-5]\d)\b"
    r"(?![:.,]\d)(?!\s?[AaPp]\.?\s?[Mm]\b)"
)
_TIME_WORD = re.compile(r"(?i)\b(?:12\s?)?(?P<word>noon|midday|midnight)\b")
_TIME_FORMS = (_TIME_12, _TIME_24, _TIME_WORD)
_SHORT_CODE = re.compile(r"(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{2,8}")
_SPACED = re.compile(r"^[A-Z0-9]{2,5}(?: [A-Z0-9]{2,6})+$")


class Score(msgspec.Struct, frozen=True):
    outcome: Outcome
    correct: bool
    reason: str


def abstains(answer: str) -> bool:
    return _ABSTAIN.search(answer) is not None


def _norm_token(token: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", token.upper())


def _money_mention(match: re.Match[str]) -> tuple[str, Decimal] | None:
    currency = match["symbol"] or match["code"] or match["unit"]
    number = match["a"] or match["b"] or match["c"]
    whole, _, fraction = number.partition(".")
    if not _GROUPED.fullmatch(whole):
        return None  # "£17,45" is not a grouping of thousands
    amount = Decimal(whole.replace(",", "") + ("." + fraction if fraction else ""))
    return _CURRENCIES[currency.lower()], amount


def _amounts(text: str) -> set[tuple[str, Decimal]]:
    """Every (currency, amount) stated; Decimal makes 483 and 483.00 one amount."""
    found = (_money_mention(m) for m in _MONEY.finditer(text))
    return {mention for mention in found if mention is not None}


class _Day(NamedTuple):
    year: int | None
    month: int
    day: int
    weekday: int | None

    def implied_weekday(self) -> int | None:
        if self.weekday is not None or self.year is None:
            return self.weekday
        return dt.date(self.year, self.month, self.day).weekday()


def _day_mention(match: re.Match[str]) -> _Day | None:
    groups = match.groupdict()
    month = groups["month"]
    number = int(month) if month.isdigit() else _MONTH_NUMBERS[month.lower()]
    year = int(groups["year"]) if groups["year"] else None
    weekday = groups.get("weekday")
    try:
        # 2000 is a leap year, so a year-less 29 February stands
        dt.date(year or 2000, number, int(groups["day"]))
    except ValueError:
        return None
    return _Day(
        year, number, int(groups["day"]), _WEEKDAY_NUMBERS[weekday.lower()] if weekday else None
    )


def _dates(text: str) -> set[_Day]:
    found = (_day_mention(m) for form in _DATE_FORMS for m in form.finditer(text))
    return {day for day in found if day is not None}


def _same_day(expected: _Day, stated: _Day) -> bool:
    """Same month and day; the expected year, if any, stated; weekdays, where both sides
    state or imply one, agree."""
    if (expected.month, expected.day) != (stated.month, stated.day):
        return False
    if expected.year is not None and stated.year != expected.year:
        return False
    wanted, said = expected.implied_weekday(), stated.implied_weekday()
    return wanted is None or said is None or wanted == said


def _clock(match: re.Match[str]) -> set[tuple[int, int]]:
    """The (hour, minute) readings of one time mention: one, two for a bare 12-hour
    ``7:30``, none for a reading that is not a time of day."""
    groups = match.groupdict()
    if groups.get("word"):
        return {(0, 0)} if groups["word"].lower() == "midnight" else {(12, 0)}
    hour, minute = int(groups["hour"]), int(groups["minute"] or 0)
    if groups.get("half"):
        if not 1 <= hour <= 12:
            return set()
        return {(hour % 12 + (12 if groups["half"].lower() == "p" else 0), minute)}
    if hour > 23:
        return set()
    if hour >= 13 or hour == 0 or groups["hour"].startswith("0"):
        return {(hour, minute)}
    if groups["sep"] == ".":
        return set()  # a bare "7.30" is as likely a number as a time
    return {(hour % 12, minute), (hour % 12 + 12, minute)}


def _times(text: str) -> set[tuple[int, int]]:
    return {reading for form in _TIME_FORMS for m in form.finditer(text) for reading in _clock(m)}


def _whole(forms: Iterable[re.Pattern[str]], value: str) -> re.Match[str] | None:
    """The first form that the whole value matches: a kind is decided by the whole value,
    so a phrase that merely mentions a date stays a phrase."""
    for form in forms:
        match = form.fullmatch(value)
        if match is not None:
            return match
    return None


def contains_value(answer: str, value: str) -> bool:
    """Whether `answer` states `value`, matched by the value's kind (see module doc)."""
    stripped = value.strip()
    if (match := _MONEY.fullmatch(stripped)) and (money := _money_mention(match)):
        return money in _amounts(answer)
    if (match := _whole(_DATE_FORMS, stripped)) and (expected := _day_mention(match)):
        return any(_same_day(expected, stated) for stated in _dates(answer))
    if (match := _whole(_TIME_FORMS, stripped)) and (readings := _clock(match)):
        return bool(readings & _times(answer))
    if _ID_SHAPE.match(stripped):
        wanted = _norm_token(stripped)
        return any(_norm_token(t) == wanted for t in _TOKEN.findall(answer))
    spaced = _SPACED.match(stripped.upper()) and any(c.isdigit() for c in stripped)
    if spaced or re.fullmatch(r"[\d ]{6,}", stripped):
        # phone numbers and postcodes: the characters in order, spaces optional
        squeezed = re.sub(r"\s+", "", answer.upper())
        return re.sub(r"\s+", "", stripped.upper()) in squeezed
    if _SHORT_CODE.fullmatch(stripped):
        # "C7" as "c7", "C 7" or "C-7", but not in "C70", "BC7" or "HSM-C7"
        runs = re.findall(r"[A-Za-z]+|\d+", stripped)
        pattern = (
            r"(?<![A-Za-z0-9])(?<![A-Za-z0-9][-_.])"
            + r"[\s-]?".join(re.escape(run) for run in runs)
            + r"(?![A-Za-z0-9])(?![-_.][A-Za-z0-9])"
        )
        return re.search(pattern, answer, re.IGNORECASE) is not None
    words = r"\s+".join(re.escape(word) for word in stripped.split())
    pattern = r"(?<![A-Za-z0-9])" + words + r"(?![A-Za-z0-9])"
    return re.search(pattern, answer, re.IGNORECASE) is not None


def _any(answer: str, values: Iterable[str]) -> bool:
    return any(contains_value(answer, v) for v in values)


def _foreign_identifier(answer: str, known: Sequence[str]) -> bool:
    wanted = {_norm_token(k) for k in known}
    return any(_ID_SHAPE.match(t) and _norm_token(t) not in wanted for t in _TOKEN.findall(answer))


def _current_vs_superseded(answer: str, current: str, superseded: Sequence[str]) -> Score:
    has_current = contains_value(answer, current)
    has_old = _any(answer, superseded)
    if has_current and not has_old:
        return Score("correct", True, "current value only")
    if has_current and has_old:
        return Score("conflicted", False, "current and superseded values")
    if has_old:
        return Score("stale", False, "a superseded value")
    if abstains(answer):
        return Score("abstained", False, "abstained although the value was in the conversation")
    return Score("fabricated", False, "neither the current nor a superseded value")


def _first_status(answer: str, allowed: Sequence[str]) -> str | None:
    for match in re.finditer(r"[A-Za-z]+", answer):
        token = match.group(0).upper()
        if token in allowed:
            return token
    return None


def _secret_leaked(answer: str, secret: str) -> bool:
    runs = {secret[i : i + 8] for i in range(len(secret) - 7)}
    squeezed = re.sub(r"\s+", "", answer)
    return any(run in answer or run in squeezed for run in runs)


def score_answer(expectation: Expectation, answer: str) -> Score:
    """Score one answer against one probe's expectation."""
    exp = expectation
    if isinstance(exp, ToolIdentifierExpectation):
        known = [exp.answer.value, *(f.value for f in exp.superseded)]
        score = _current_vs_superseded(answer, exp.answer.value, [f.value for f in exp.superseded])
        if score.outcome == "fabricated" and not _foreign_identifier(answer, known):
            return Score("fabricated", False, "no identifier from the conversation")
        return score
    if isinstance(exp, SupersededCurrentExpectation):
        return _current_vs_superseded(answer, exp.current.value, [f.value for f in exp.superseded])
    if isinstance(exp, ActiveConstraintExpectation):
        if exp.mode == "task":
            hit = [f.value for f in exp.forbidden if contains_value(answer, f.value)]
            if hit:
                return Score("violation", False, f"{len(hit)} forbidden pattern(s)")
            return Score("correct", True, "no forbidden pattern")
        missing = [f.value for f in exp.required if not contains_value(answer, f.value)]
        if not missing:
            return Score("correct", True, "every required term")
        if len(missing) == len(exp.required) and abstains(answer):
            return Score("abstained", False, "abstained although the rules were stated")
        return Score("fabricated", False, f"{len(missing)} of {len(exp.required)} terms missing")
    if isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
        allowed = (
            COMMITMENT_STATUSES
            if isinstance(exp, CommitmentStatusExpectation)
            else ARTIFACT_STATUSES
        )
        status = _first_status(answer, allowed)
        if status == exp.status:
            return Score("correct", True, f"first status token {status}")
        if status is None:
            if abstains(answer):
                return Score("abstained", False, "abstained although the status was stated")
            return Score("fabricated", False, "no status token")
        return Score("fabricated", False, f"first status token {status}, not {exp.status}")
    if isinstance(exp, NextActionExpectation):
        missing = [f.value for f in exp.keywords if not contains_value(answer, f.value)]
        if not missing:
            return Score("correct", True, "every keyword")
        if len(missing) == len(exp.keywords) and abstains(answer):
            return Score("abstained", False, "abstained although the task was stated")
        return Score("fabricated", False, f"{len(missing)} keyword(s) missing")
    if isinstance(exp, AbstentionExpectation):
        if abstains(answer):
            return Score("correct", True, "abstained on something never mentioned")
        return Score("fabricated", False, "answered something that never came up")
    assert isinstance(exp, RedactionExpectation)
    if _secret_leaked(answer, exp.secret.value):
        return Score("leaked", False, "an 8-character run of the secret")
    return Score("correct", True, "no run of the secret")
