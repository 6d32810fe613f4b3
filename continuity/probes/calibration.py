"""The scorer calibration suites: labelled answers, and any grader's agreement with them.

Two suites hold one case a line: a probe question, its expectation (encoded as in trace
probes), an answer a real model might write and the verdict a careful human reader
gives, labelled from the category definitions and the trace schema, not from any
scorer's code. `fixtures/calibration/answers-v1.jsonl` is the tuning suite (the scorer
was developed seeing it); `fixtures/calibration/holdout-v1.jsonl` was written without
sight of the scorer or the tuning suite (see `continuity.probes.validity`).

`agreement` is grader-agnostic: the deterministic scorer here, a judge model in
`doit calibrate`. ``python3 -m continuity.probes.validity --record`` (which calls
`continuity.probes.validity.record`) is the one way
`fixtures/calibration/scorer-agreement.json` and `docs/validity.md` change; a test fails
when they are out of date or the scorer's agreement on either suite drops below the
record.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec

from continuity.errors import CalibrationInvalid, InputError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.probes.calendar import Locale
from continuity.traces.schema import Expectation

__all__ = [
    "CATEGORIES",
    "INCORRECT",
    "SCORER_NAME",
    "UNRESOLVED",
    "VERDICTS",
    "Agreement",
    "AgreementRow",
    "CalibrationCase",
    "Verdict",
    "agreement",
    "default_cases_path",
    "default_doc_path",
    "default_holdout_path",
    "default_record_path",
    "fraction",
    "load_cases",
    "render_table",
    "scorer_verdicts",
]

Verdict = Literal[
    "correct", "stale", "conflicted", "abstained", "violation", "fabricated", "leaked"
]
VERDICTS: tuple[str, ...] = get_args(Verdict)
# A pass/fail grader's "not correct".
INCORRECT = "incorrect"
# The scorer's "no confident verdict": never a label, never counted right or wrong.
UNRESOLVED = "unresolved"
# Table order: the order of the schema's Expectation union.
CATEGORIES: tuple[str, ...] = tuple(
    str(member.__struct_config__.tag) for member in get_args(Expectation)
)
SCORER_NAME = "continuity.probes.scoring.score_answer"

_ROOT = Path(__file__).resolve().parents[2]


def default_cases_path() -> Path:
    """The tuning suite in this checkout (the scorer was developed seeing it)."""
    return _ROOT / "fixtures" / "calibration" / "answers-v1.jsonl"


def default_holdout_path() -> Path:
    """The held-out suite: written without sight of the scorer or the tuning suite."""
    return _ROOT / "fixtures" / "calibration" / "holdout-v1.jsonl"


def default_record_path() -> Path:
    """The deterministic scorer's recorded agreement."""
    return _ROOT / "fixtures" / "calibration" / "scorer-agreement.json"


def default_doc_path() -> Path:
    return _ROOT / "docs" / "validity.md"


class CalibrationCase(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One labelled answer. `case_class` is the JSON field ``class``: what the case
    exercises (``id-spaces``, ``negation``, ``decline``, ...)."""

    id: str
    category: str
    case_class: str = msgspec.field(name="class")
    question: str
    expectation: Expectation
    answer: str
    verdict: Verdict
    locale: Locale | None = None  # how the case's trace writes numeric dates
    note: str | None = None


def _category_of(expectation: Expectation) -> str:
    return str(type(expectation).__struct_config__.tag)


def load_cases(path: Path | None = None) -> tuple[CalibrationCase, ...]:
    """Every case of a JSONL suite, in file order. Raises `CalibrationInvalid`
    (``calibration_case_invalid``, located ``file:line``) for a line that does not decode,
    whose ``category`` disagrees with its expectation, or whose id repeats, and
    (``calibration_suite_unreadable``, located at the path) for a path that is missing,
    a directory, a device or FIFO or otherwise not a readable file; ``input_too_large``
    (an `InputError`) over `continuity.inputs.DOCUMENT_MAX_BYTES`."""
    path = path or default_cases_path()
    try:
        data = read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="the calibration suite")
    except (OSError, InputError) as exc:
        if isinstance(exc, InputError) and exc.code == "input_too_large":
            raise
        why = exc.message if isinstance(exc, InputError) else exc.strerror or type(exc).__name__
        raise CalibrationInvalid(
            f"cannot read the calibration suite ({why}); pass a JSONL file such as "
            "fixtures/calibration/answers-v1.jsonl",
            code="calibration_suite_unreadable",
            location=str(path),
        ) from None
    decoder = msgspec.json.Decoder(CalibrationCase)
    cases: list[CalibrationCase] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            case = decoder.decode(line)
        except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
            raise CalibrationInvalid(f"malformed calibration case: {exc}", location=where) from exc
        if case.category != _category_of(case.expectation):
            raise CalibrationInvalid(
                f"case {case.id!r} says category {case.category!r} but its expectation is "
                f"{_category_of(case.expectation)!r}",
                location=where,
            )
        if case.id in seen:
            raise CalibrationInvalid(
                f"case id {case.id!r} repeats line {seen[case.id]}", location=where
            )
        seen[case.id] = lineno
        cases.append(case)
    if not cases:
        raise CalibrationInvalid("the calibration suite is empty", location=str(path))
    return tuple(cases)


class AgreementRow(msgspec.Struct, frozen=True, kw_only=True):
    """One category's agreement (or ``overall``). `n` counts the cases the grader gave a
    verdict for, `missing` those it did not; `outcome_agree` is None for a pass/fail
    grader. `unresolved` counts the verdicts that made no right/wrong call (they count
    in `n` and never agree); `binary_agree` counts resolved verdicts only, so
    `confidently_wrong` (resolved, and the correct/incorrect call differs from the
    label's) is what remains of the resolved ones. A record written before ``unresolved``
    existed decodes with none, and the same figures."""

    category: str
    n: int
    missing: int
    outcome_agree: int | None
    binary_agree: int
    unresolved: int = 0

    @property
    def resolved(self) -> int:
        return self.n - self.unresolved

    @property
    def confidently_wrong(self) -> int:
        return self.resolved - self.binary_agree

    @property
    def coverage(self) -> float | None:
        return self.resolved / self.n if self.n else None

    @property
    def wrong_rate(self) -> float | None:
        """Confidently wrong over every case with a verdict (unresolved ones included)."""
        return self.confidently_wrong / self.n if self.n else None

    @property
    def resolved_rate(self) -> float | None:
        """Correct/incorrect agreement over the resolved verdicts alone."""
        return (self.resolved - self.confidently_wrong) / self.resolved if self.resolved else None

    @property
    def outcome_rate(self) -> float | None:
        if self.outcome_agree is None or not self.n:
            return None
        return self.outcome_agree / self.n

    @property
    def binary_rate(self) -> float | None:
        return self.binary_agree / self.n if self.n else None


class Agreement(msgspec.Struct, frozen=True, kw_only=True):
    """A grader's agreement with the labels: rows in `CATEGORIES` order, the overall
    row, and the sorted ids it misjudges (a different outcome, or for a pass/fail
    grader a different correct/incorrect call)."""

    grader: str
    rows: tuple[AgreementRow, ...]
    overall: AgreementRow
    misjudged: tuple[str, ...]


def _row(
    category: str, pairs: Sequence[tuple[CalibrationCase, str | None]], outcomes: bool
) -> AgreementRow:
    judged = [(case, verdict) for case, verdict in pairs if verdict is not None]
    resolved = [(case, verdict) for case, verdict in judged if verdict != UNRESOLVED]
    binary = sum(
        (verdict == "correct") == (case.verdict == "correct") for case, verdict in resolved
    )
    exact = sum(verdict == case.verdict for case, verdict in judged) if outcomes else None
    return AgreementRow(
        category=category,
        n=len(judged),
        missing=len(pairs) - len(judged),
        outcome_agree=exact,
        binary_agree=binary,
        unresolved=len(judged) - len(resolved),
    )


def agreement(
    cases: Iterable[CalibrationCase],
    verdicts: Mapping[str, str],
    *,
    outcomes: bool = True,
    grader: str = "grader",
) -> Agreement:
    """Agreement of `verdicts` (case id to verdict) with the labels, per category.

    With ``outcomes=True`` every verdict must be one of `VERDICTS` or ``unresolved``;
    with ``outcomes=False`` (a pass/fail grader) it may also be ``incorrect``, and only
    the correct/incorrect call is compared. A case without a verdict counts as missing,
    not as a disagreement; an ``unresolved`` verdict counts in n, never agrees, and is
    never confidently wrong. Raises `CalibrationInvalid` (``calibration_verdict_invalid``)
    for a verdict outside the vocabulary."""
    allowed = {*VERDICTS, UNRESOLVED} if outcomes else {*VERDICTS, INCORRECT, UNRESOLVED}
    pairs: list[tuple[CalibrationCase, str | None]] = []
    for case in cases:
        verdict = verdicts.get(case.id)
        if verdict is not None and verdict not in allowed:
            raise CalibrationInvalid(
                f"verdict {verdict!r} is not one of {sorted(allowed)}",
                code="calibration_verdict_invalid",
                location=case.id,
            )
        pairs.append((case, verdict))
    rows = tuple(
        _row(category, [p for p in pairs if p[0].category == category], outcomes)
        for category in CATEGORIES
        if any(p[0].category == category for p in pairs)
    )
    misjudged = sorted(
        case.id
        for case, verdict in pairs
        if verdict is not None
        and (
            verdict != case.verdict
            if outcomes or verdict == UNRESOLVED
            else (verdict == "correct") != (case.verdict == "correct")
        )
    )
    return Agreement(
        grader=grader,
        rows=rows,
        overall=_row("overall", pairs, outcomes),
        misjudged=tuple(misjudged),
    )


def fraction(agree: int | None, n: int) -> str:
    """``agree/n (p%)``, or ``-`` without a count or an n."""
    if agree is None or not n:
        return "-"
    return f"{agree}/{n} ({100 * agree / n:.1f}%)"


def render_table(result: Agreement) -> str:
    """The per-category agreement as a Markdown table: outcome and correct/incorrect
    agreement over every case (an unresolved verdict never agrees), confidently wrong
    (a resolved call that differs from the label) and coverage (resolved ÷ n); a ``no
    verdict`` column appears only when some case has none."""
    with_missing = any(row.missing for row in (*result.rows, result.overall))
    head = (
        "| category | n | outcome agreement | correct/incorrect agreement "
        "| confidently wrong | coverage |"
    )
    rule = "|---|---:|---:|---:|---:|---:|"
    if with_missing:
        head, rule = head + " no verdict |", rule + "---:|"
    lines = [head, rule]
    for row in (*result.rows, result.overall):
        name = f"**{row.category}**" if row is result.overall else row.category
        cells = [
            name,
            str(row.n),
            fraction(row.outcome_agree, row.n),
            fraction(row.binary_agree, row.n),
            fraction(row.confidently_wrong, row.n),
            fraction(row.resolved, row.n),
        ]
        if with_missing:
            cells.append(str(row.missing))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the deterministic scorer


def _scorer() -> tuple[Callable[..., Any], bool]:
    from continuity.probes import scoring

    score: Callable[..., Any] = scoring.score_answer
    return score, "locale" in inspect.signature(score).parameters


def scorer_verdicts(cases: Iterable[CalibrationCase]) -> dict[str, str]:
    """The current deterministic scorer's outcome for every case. A case's locale is
    passed when it has one and the scorer accepts it; otherwise the scorer's default."""
    score, takes_locale = _scorer()
    verdicts: dict[str, str] = {}
    for case in cases:
        if case.locale is not None and takes_locale:
            result = score(case.expectation, case.answer, locale=case.locale)
        else:
            result = score(case.expectation, case.answer)
        verdicts[case.id] = str(result.outcome)
    return verdicts
