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

Values are matched by kind: identifiers as whole tokens compared without case or
punctuation; money by amount (``$4,820`` equals ``$4,820.00``); dates by calendar day
(``14 March 2027``, ``March 14, 2027`` and ``2027-03-14`` agree); phone numbers and
postcodes by their characters without spaces; other terms as case-insensitive phrases on
word boundaries. Known blind spots are listed in the README.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import Literal, get_args

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
_MONEY = re.compile(r"^\$\s?\d[\d,]*(?:\.\d+)?$")
_MONEY_IN = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
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
_DATE_DMY = re.compile(
    r"(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(" + "|".join(_MONTHS) + r")\.?,?\s+(\d{4})\b"
)
_DATE_MDY = re.compile(
    r"(?i)\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+"
    r"(\d{4})\b"
)
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_SPACED = re.compile(r"^[A-Z0-9]{2,5}(?: [A-Z0-9]{2,6})+$")


class Score(msgspec.Struct, frozen=True):
    outcome: Outcome
    correct: bool
    reason: str


def abstains(answer: str) -> bool:
    return _ABSTAIN.search(answer) is not None


def _norm_token(token: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", token.upper())


def _dates(text: str) -> set[dt.date]:
    found = set()
    for day, month, year in _DATE_DMY.findall(text):
        found.add((int(year), _MONTHS.index(month.lower()) + 1, int(day)))
    for month, day, year in _DATE_MDY.findall(text):
        found.add((int(year), _MONTHS.index(month.lower()) + 1, int(day)))
    for year, month, day in _DATE_ISO.findall(text):
        found.add((int(year), int(month), int(day)))
    dates = set()
    for year, month, day in found:
        try:
            dates.add(dt.date(year, month, day))
        except ValueError:
            continue
    return dates


def _amounts(text: str) -> set[float]:
    return {float(m.replace(",", "")) for m in _MONEY_IN.findall(text)}


def contains_value(answer: str, value: str) -> bool:
    """Whether `answer` states `value`, matched by the value's kind (see module doc)."""
    stripped = value.strip()
    if _MONEY.match(stripped):
        return float(re.sub(r"[$,\s]", "", stripped)) in _amounts(answer)
    value_dates = _dates(stripped)
    if value_dates:
        return bool(value_dates & _dates(answer))
    if _ID_SHAPE.match(stripped):
        wanted = _norm_token(stripped)
        return any(_norm_token(t) == wanted for t in _TOKEN.findall(answer))
    if _SPACED.match(stripped.upper()) or re.fullmatch(r"[\d ]{6,}", stripped):
        # phone numbers and postcodes: the characters in order, spaces optional
        squeezed = re.sub(r"\s+", "", answer.upper())
        return re.sub(r"\s+", "", stripped.upper()) in squeezed
    pattern = r"(?<![A-Za-z0-9])" + re.escape(stripped) + r"(?![A-Za-z0-9])"
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
