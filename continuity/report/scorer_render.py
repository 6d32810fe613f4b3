"""The report's scorer line and its "scorer change vs original grades" tables."""

from __future__ import annotations

from continuity.report.aggregate import Results
from continuity.report.sections import Table, pct

__all__ = ["CHANGED_ROWS", "scorer_line", "scorer_tables"]

CHANGED_ROWS = 200  # the changed-outcome list is cut here in the report (results.json has all)


def scorer_line(r: Results) -> str:
    """The header line saying which scorer version produced the numbers."""
    description = r.scorer.get("description")
    return f"Grades: {description}." if description else "Grades: the unit files' own."


def scorer_tables(r: Results) -> list[Table]:
    """Per arm, accuracy under the original grades and the current scorer over the same
    valid samples, and every sample whose outcome changed (none for ``original``)."""
    changes = r.scorer.get("changes") or {}
    if not changes:
        return []
    order = {arm: i for i, arm in enumerate(r.arms)}
    arms = sorted(changes, key=lambda a: order.get(a, len(order)))
    rows = []
    for arm in arms:
        cell = changes[arm]
        before, after = cell["original_accuracy"], cell["current_accuracy"]
        delta = "-" if before is None or after is None else f"{100 * (after - before):+.1f}"
        rows.append(
            [arm, str(cell["n"]), pct(before), pct(after), delta, str(len(cell["changed"]))]
        )
    out: list[Table] = [
        (
            "Scorer change vs original grades",
            ["arm", "n", "original", "current", "change (pp)", "outcomes changed"],
            rows,
            "Pooled accuracy over the same valid samples (all suites and repeats), graded "
            "by the scorer that ran with each unit (original, kept in the unit files) and by "
            "the current scorer. doit aggregate --scorer original reports the original grades.",
        )
    ]
    changed = [(arm, c) for arm in arms for c in changes[arm]["changed"]]
    if changed:
        out.append(
            (
                "Outcomes changed by the current scorer",
                ["arm", "repeat", "trace", "probe", "original", "current"],
                [
                    [arm, str(c["repeat"]), c["trace_id"], c["probe_id"], *_outcomes(c)]
                    for arm, c in changed[:CHANGED_ROWS]
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


def _outcomes(change: dict[str, str | None]) -> list[str]:
    return [change.get("original") or "-", change.get("current") or "-"]
