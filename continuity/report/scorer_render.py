"""The report's scorer line, its "scorer change vs original grades" tables, and how
value-probe replies ended (the answer line the scorer reads first)."""

from __future__ import annotations

from msgspec import UNSET

from continuity.report.results import ChangedOutcome, Results, ScorerChange
from continuity.report.sections import Table, pct, suite_arm_rows

__all__ = ["ANSWER_LINE_NOTE", "CHANGED_ROWS", "answer_line_tables", "scorer_line", "scorer_tables"]

ANSWER_LINE_NOTE = (
    "Value probes (identifiers, current values, statuses, abstention) ask the reader to "
    "end its reply with one line ANSWER: <value>, or ANSWER: UNKNOWN (probe protocol "
    "v3). The scorer reads that line first; a reply without one (missing) is read from "
    "its free text, and one whose lines disagree (conflict) counts as no single answer. "
    "A high missing rate means the reader ignored the format and its grades rest on the "
    "free-text rules."
)

CHANGED_ROWS = 200  # the changed-outcome list is cut here in the report (results.json has all)


def scorer_line(r: Results) -> str:
    """The header line saying which scorer version produced the numbers."""
    description = r.scorer.description if r.scorer is not None else ""
    return f"Grades: {description}." if description else "Grades: the unit files' own."


def scorer_tables(r: Results) -> list[Table]:
    """Per suite and arm, accuracy under the original grades and the current scorer over
    the same valid samples, and every sample whose outcome changed (none for
    ``original``)."""
    changes: dict[str, dict[str, ScorerChange]] = r.scorer.changes if r.scorer is not None else {}
    if not changes:
        return []
    suites = {s: i for i, s in enumerate(r.suites)}
    arms = {a: i for i, a in enumerate(r.arms)}
    cells = [
        (suite, arm, changes[suite][arm])
        for suite in sorted(changes, key=lambda s: (suites.get(s, len(suites)), s))
        for arm in sorted(changes[suite], key=lambda a: (arms.get(a, len(arms)), a))
    ]
    rows = []
    for suite, arm, cell in cells:
        before, after = cell.original_accuracy, cell.current_accuracy
        delta = "-" if before is None or after is None else f"{100 * (after - before):+.1f}"
        rows.append(
            [suite, arm, str(cell.n), pct(before), pct(after), delta, str(len(cell.changed))]
        )
    out: list[Table] = [
        (
            "Scorer change vs original grades",
            ["suite", "arm", "n", "original", "current", "change (pp)", "outcomes changed"],
            rows,
            "Per suite and arm, accuracy over the same valid samples (repeats pooled, suites "
            "never), graded by the scorer that ran with each unit (original, kept in the unit "
            "files) and by the current scorer. doit aggregate --scorer original reports the "
            "original grades.",
        )
    ]
    changed = [(suite, arm, c) for suite, arm, cell in cells for c in cell.changed]
    if changed:
        out.append(
            (
                "Outcomes changed by the current scorer",
                ["suite", "arm", "repeat", "trace", "probe", "original", "current"],
                [
                    [suite, arm, str(c.repeat), c.trace_id, c.probe_id, *_outcomes(c)]
                    for suite, arm, c in changed[:CHANGED_ROWS]
                ],
                f"{len(changed)} samples"
                + (
                    f"; the first {CHANGED_ROWS} shown (results.json lists all)"
                    if len(changed) > CHANGED_ROWS
                    else ""
                )
                + ".",
            )
        )
    return out


def _outcomes(change: ChangedOutcome) -> list[str]:
    return [change.original or "-", change.current or "-"]


def answer_line_tables(r: Results) -> list[Table]:
    """Per suite and arm, how valid value-probe replies ended (none without any)."""
    if r.answer_line is UNSET:
        return []
    rows = [
        [
            suite,
            arm,
            str(c.samples),
            str(c.value),
            str(c.unknown),
            str(c.conflict),
            str(c.missing),
            pct(c.missing_rate),
        ]
        for suite, arm, c in suite_arm_rows(r, r.answer_line)
    ]
    header = [
        "suite",
        "arm",
        "value samples",
        "value",
        "UNKNOWN",
        "conflict",
        "missing",
        "missing rate",
    ]
    return [("Answer line", header, rows, ANSWER_LINE_NOTE)]
