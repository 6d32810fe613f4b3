"""The scorer calibration suite: labelled answers, and any grader's agreement with them.

`fixtures/calibration/answers-v1.jsonl` holds one case a line: a probe question, its
expectation (encoded as in trace probes), an answer a real model might write and the
verdict a careful human reader gives, labelled from the category definitions and the
trace schema, not from any scorer's code.

`agreement` is grader-agnostic: the deterministic scorer here, a judge model in
`doit calibrate`. ``python3 -m continuity.probes.calibration --record`` is the one way
`fixtures/calibration/scorer-agreement.json` and `docs/validity.md` change; a test fails
when they are out of date or the scorer's agreement drops below the record.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec

from continuity.errors import ContinuityError
from continuity.traces.schema import Expectation

__all__ = [
    "CATEGORIES",
    "VERDICTS",
    "Agreement",
    "AgreementRecord",
    "AgreementRow",
    "CalibrationCase",
    "CalibrationInvalid",
    "agreement",
    "default_cases_path",
    "default_doc_path",
    "default_record_path",
    "load_cases",
    "load_record",
    "record",
    "render_table",
    "render_validity_doc",
    "scorer_verdicts",
]

Verdict = Literal[
    "correct", "stale", "conflicted", "abstained", "violation", "fabricated", "leaked"
]
VERDICTS: tuple[str, ...] = get_args(Verdict)
# A pass/fail grader's "not correct".
INCORRECT = "incorrect"
# Table order: the order of the schema's Expectation union.
CATEGORIES: tuple[str, ...] = tuple(
    str(member.__struct_config__.tag) for member in get_args(Expectation)
)
SCORER_NAME = "continuity.probes.scoring.score_answer"

_ROOT = Path(__file__).resolve().parents[2]


def default_cases_path() -> Path:
    """The labelled suite in this checkout."""
    return _ROOT / "fixtures" / "calibration" / "answers-v1.jsonl"


def default_record_path() -> Path:
    """The deterministic scorer's recorded agreement."""
    return _ROOT / "fixtures" / "calibration" / "scorer-agreement.json"


def default_doc_path() -> Path:
    return _ROOT / "docs" / "validity.md"


class CalibrationInvalid(ContinuityError):
    """A malformed calibration line, or a grader verdict outside the vocabulary."""

    default_code = "calibration_case_invalid"


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
    locale: Literal["day-first"] | None = None
    note: str | None = None


def _category_of(expectation: Expectation) -> str:
    return str(type(expectation).__struct_config__.tag)


def load_cases(path: Path | None = None) -> tuple[CalibrationCase, ...]:
    """Every case of a JSONL suite, in file order. Raises `CalibrationInvalid`
    (``calibration_case_invalid``, located ``file:line``) for a line that does not decode,
    whose ``category`` disagrees with its expectation, or whose id repeats."""
    path = path or default_cases_path()
    decoder = msgspec.json.Decoder(CalibrationCase)
    cases: list[CalibrationCase] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(path.read_bytes().splitlines(), 1):
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
    grader."""

    category: str
    n: int
    missing: int
    outcome_agree: int | None
    binary_agree: int

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
    binary = sum((verdict == "correct") == (case.verdict == "correct") for case, verdict in judged)
    exact = sum(verdict == case.verdict for case, verdict in judged) if outcomes else None
    return AgreementRow(
        category=category,
        n=len(judged),
        missing=len(pairs) - len(judged),
        outcome_agree=exact,
        binary_agree=binary,
    )


def agreement(
    cases: Iterable[CalibrationCase],
    verdicts: Mapping[str, str],
    *,
    outcomes: bool = True,
    grader: str = "grader",
) -> Agreement:
    """Agreement of `verdicts` (case id to verdict) with the labels, per category.

    With ``outcomes=True`` every verdict must be one of `VERDICTS`; with
    ``outcomes=False`` (a pass/fail grader) it may also be ``incorrect``, and only the
    correct/incorrect call is compared. A case without a verdict counts as missing, not
    as a disagreement. Raises `CalibrationInvalid` (``calibration_verdict_invalid``)
    for a verdict outside the vocabulary."""
    allowed = set(VERDICTS) if outcomes else {*VERDICTS, INCORRECT}
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
            if outcomes
            else (verdict == "correct") != (case.verdict == "correct")
        )
    )
    return Agreement(
        grader=grader,
        rows=rows,
        overall=_row("overall", pairs, outcomes),
        misjudged=tuple(misjudged),
    )


def _fraction(agree: int | None, n: int) -> str:
    if agree is None or not n:
        return "-"
    return f"{agree}/{n} ({100 * agree / n:.1f}%)"


def render_table(result: Agreement) -> str:
    """The per-category agreement as a Markdown table (a ``no verdict`` column appears
    only when some case has none)."""
    with_missing = any(row.missing for row in (*result.rows, result.overall))
    head = "| category | n | outcome agreement | correct/incorrect agreement |"
    rule = "|---|---:|---:|---:|"
    if with_missing:
        head, rule = head + " no verdict |", rule + "---:|"
    lines = [head, rule]
    for row in (*result.rows, result.overall):
        name = f"**{row.category}**" if row is result.overall else row.category
        cells = [
            name,
            str(row.n),
            _fraction(row.outcome_agree, row.n),
            _fraction(row.binary_agree, row.n),
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


class AgreementRecord(msgspec.Struct, frozen=True, kw_only=True):
    """`fixtures/calibration/scorer-agreement.json`: the suite it was measured on (by
    digest), the figures, and the ids the scorer misjudges."""

    suite: str
    suite_sha256: str
    cases: int
    agreement: Agreement


def _suite_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_record(path: Path | None = None) -> AgreementRecord:
    return msgspec.json.decode((path or default_record_path()).read_bytes(), type=AgreementRecord)


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


_DOC_HEAD = """\
# Validity: how far the deterministic scorer agrees with a careful human reader

<!-- Generated by `python3 -m continuity.probes.calibration --record`; do not edit by hand. -->

Every accuracy `continuity` reports comes from the deterministic scorer
(`continuity/probes/scoring.py`). This page measures that scorer against an independent
yardstick: **{n} labelled answers** in `{suite}` (sha256 `{digest_short}`), one JSON
object a line.

## What the suite is

Each case is a realistic probe question, the probe's expectation encoded exactly as in a
trace, an answer a real model might write, and the verdict a careful human reader gives:
one of the scorer's seven outcomes. The cases cover every probe category and every class
of answer issue 10 lists (identifiers with spaces, Unicode dashes or full-width digits;
prefixes and superstrings; negations; explicit supersessions and bare mentions of both
values; candidate lists; ordinary declines and declines that still invent a value; status
answers that are negated, list every option or echo the question; times, numeric dates,
decimal commas, phone numbers and postcodes written differently; secrets split by
zero-width characters), plus plain correct answers in long, chatty and Markdown phrasing.
The class table below counts them. Values and scenarios are fictional.

## How it was labelled

Labels were written by hand from the category definitions (the scorer's category table
and the trace schema: expectation types, commitment and artifact statuses) and issue 10,
without reading the scorer's implementation. Where a human reader and the scorer's
documented rules differ (a secret half pasted, a year left out of an otherwise right
date, "password" for "passwords"), the label follows the human reader and a note says
why. A decline on a probe whose answer was available is `abstained` (a false
abstention); a decline on an abstention probe is `correct`; an answer that declines and
still offers a value is `fabricated`.

The suite lives in the repository, so a scorer revised after it was written has seen
these answers: read its agreement here as an upper bound for answers it has not seen
(the scorer may not special-case strings, and `doit calibrate` gives a judge model's
agreement on the same cases as a second opinion).

Outcomes by label: {verdict_counts}.

## Agreement of the deterministic scorer

*Outcome agreement*: the scorer gives the labelled outcome. *Correct/incorrect
agreement*: both call the answer correct, or both do not.

"""

_DOC_TAIL = """
The test `tests/probes/test_calibration.py` fails when any category's agreement drops
below these figures, and every case the scorer misjudges is a strict xfail, so a case
the scorer learns forces the record to be updated.

## Reproduce

```
python3 -m continuity.probes.calibration            # print the table, write nothing
python3 -m continuity.probes.calibration --record   # rewrite the record and this page
```

`--record` scores every case with the current scorer, writes
`fixtures/calibration/scorer-agreement.json` (these figures and the sorted ids the
scorer misjudges) and regenerates this page. `doit calibrate` runs a judge model over
the same suite with the same arithmetic (`continuity.probes.calibration.agreement`).
"""


def _classes_table(cases: Sequence[CalibrationCase], misjudged: set[str]) -> str:
    totals = Counter(case.case_class for case in cases)
    wrong = Counter(case.case_class for case in cases if case.id in misjudged)
    lines = ["| class | cases | misjudged |", "|---|---:|---:|"]
    lines += [
        f"| {name} | {totals[name]} | {wrong[name]} |"
        for name in sorted(totals, key=lambda c: (-wrong[c], c))
    ]
    return "\n".join(lines) + "\n"


def _misjudged_list(cases: Sequence[CalibrationCase], verdicts: Mapping[str, str]) -> str:
    by_id = {case.id: case for case in cases}
    lines = []
    for case_id in sorted(i for i in verdicts if verdicts[i] != by_id[i].verdict):
        case = by_id[case_id]
        answer = case.answer.replace("\n", " ")
        answer = answer if len(answer) <= 90 else answer[:87] + "..."
        answer = answer.replace("|", "\\|").replace("`", "'")
        lines.append(
            f"| {case_id} | {case.case_class} | `{answer}` | {case.verdict} | {verdicts[case_id]} |"
        )
    if not lines:
        return "None.\n"
    head = ["| case | class | answer | label | scorer |", "|---|---|---|---|---|"]
    return "\n".join(head + lines) + "\n"


def render_validity_doc(
    result: AgreementRecord, cases: Sequence[CalibrationCase], verdicts: Mapping[str, str]
) -> str:
    """docs/validity.md for a recorded agreement."""
    counts: Counter[str] = Counter(case.verdict for case in cases)
    verdict_counts = ", ".join(f"{v} {counts[v]}" for v in VERDICTS if counts[v])
    head = _DOC_HEAD.format(
        n=result.cases,
        suite=result.suite,
        digest_short=result.suite_sha256[:12],
        verdict_counts=verdict_counts,
    )
    misjudged = set(result.agreement.misjudged)
    return (
        head
        + render_table(result.agreement)
        + "\n### By class\n\n"
        + _classes_table(cases, misjudged)
        + f"\n### The {len(misjudged)} misjudged cases\n\n"
        + _misjudged_list(cases, verdicts)
        + _DOC_TAIL
    )


def record(
    cases_path: Path | None = None,
    record_path: Path | None = None,
    doc_path: Path | None = None,
) -> AgreementRecord:
    """Score the suite with the current scorer; write the record and the validity page."""
    cases_path = cases_path or default_cases_path()
    cases = load_cases(cases_path)
    verdicts = scorer_verdicts(cases)
    result = AgreementRecord(
        suite=_relative(cases_path),
        suite_sha256=_suite_digest(cases_path),
        cases=len(cases),
        agreement=agreement(cases, verdicts, grader=SCORER_NAME),
    )
    record_path = record_path or default_record_path()
    record_path.write_bytes(msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n")
    doc_path = doc_path or default_doc_path()
    doc_path.parent.mkdir(parents=True, exist_ok=True)
    doc_path.write_text(render_validity_doc(result, cases, verdicts), encoding="utf-8")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m continuity.probes.calibration",
        description="The deterministic scorer's agreement with the labelled calibration suite.",
    )
    parser.add_argument("--record", action="store_true", help="rewrite the record and the doc")
    parser.add_argument("--cases", type=Path, default=None, help="the suite (JSONL)")
    parser.add_argument("--record-path", type=Path, default=None)
    parser.add_argument("--doc", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.record:
        result = record(args.cases, args.record_path, args.doc).agreement
    else:
        cases = load_cases(args.cases)
        result = agreement(cases, scorer_verdicts(cases), grader=SCORER_NAME)
    sys.stdout.write(render_table(result))
    sys.stdout.write(f"misjudged: {len(result.misjudged)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
