"""The judge section (per-category agreement, every disagreement, escaped) and the
lookup accounting rules (blocked slots, duplicate slots excluded, explicit Markdown)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from continuity.report.aggregate import combine
from continuity.report.collect import load_summaries
from continuity.report.lookup import LookupRow, lookup_table
from continuity.report.lookup_render import lookup_sections
from continuity.report.render import render_html, render_markdown
from continuity.report.results import DuplicateOccurrence, Rate
from continuity.report.summary import JudgeRow
from continuity.store import Store

HOSTILE = "It was <b>KLN-4471-QX</b> | or & maybe\nnot"


def test_every_disagreement_is_listed_and_escaped(mixed: tuple[Store, Path]) -> None:
    store, folder = mixed
    summaries, _ = load_summaries(store, folder / "units")
    target = next(s for s in summaries if s.arm == "cold-rebuild")
    row = next(r for r in target.rows if r.status == "valid")
    flipped = JudgeRow(
        row.probe_id,
        row.category,
        not bool(row.correct),
        bool(row.correct),
        row.outcome,
        "wrong_value",
        "names a different identifier",
        HOSTILE,
    )
    edited = [
        msgspec.structs.replace(
            s, judge=[flipped] + [j for j in s.judge if j.probe_id != row.probe_id]
        )
        if s is target
        else s
        for s in summaries
    ]
    results = combine(store, "judged", edited)
    j = results.judge
    mine = [d for d in j.disagreements if d.answer == HOSTILE]
    assert mine and mine[0].unit == f"r{target.repeat}/{target.trace_id}/cold-rebuild"
    assert mine[0].judge_outcome == "wrong_value" and mine[0].probe_id == row.probe_id
    assert mine[0].suite == target.family
    assert set(j.by_suite) == {s.family for s in edited if s.judge}  # one entry per suite
    for suite, table in j.by_suite.items():
        judged = [r for s in edited if s.family == suite for r in s.judge]
        for category, cell in table.by_category.items():
            rows = [r for r in judged if r.category == category and r.judge_outcome != "unreadable"]
            assert cell.pairs == len(rows)
            assert cell.agree == sum(1 for r in rows if r.passed == r.scorer_correct)
        assert table.overall.pairs == sum(c.pairs for c in table.by_category.values())
    assert j.pairs == sum(t.overall.pairs for t in j.by_suite.values())
    assert "next_action" in j.by_suite[target.family].by_category  # the old table's row
    page = render_html(results)
    assert "<b>KLN" not in page and "&lt;b&gt;KLN-4471-QX&lt;/b&gt; | or &amp; maybe" in page
    markdown = render_markdown(results)
    assert "It was <b>KLN-4471-QX</b> \\| or & maybe not" in markdown  # one cell, one row


def _row(probe: str, *, status: str = "valid", correct: bool = True, calls: int = 2) -> LookupRow:
    return LookupRow(
        probe,
        "tool_identifier",
        status,
        "inventory_infeasible" if status == "inventory_infeasible" else "",
        True,
        correct if status == "valid" else None,
        "absent",
        True,
        True,
        calls,
        100 * calls,
        0.5,
        None,
        None,
        "scripted:reader",
    )


def _slot(repeat: int, probe: str, disposition: str = "feasible") -> dict[str, object]:
    return {
        "repeat": repeat,
        "trace_id": "t",
        "arm": "native-lookup",
        "probe_id": probe,
        "category": "tool_identifier",
        "disposition": disposition,
    }


def test_duplicate_slots_are_excluded_and_counted_never_first_or_last_wins() -> None:
    units = [
        (1, "t", "native-lookup", [_row("p1", correct=True, calls=1), _row("p2", calls=3)]),
        # A second unit file for the same slots (two chunks): p2 again, answered wrong.
        (1, "t", "native-lookup", [_row("p2", correct=False, calls=7)]),
        (1, "t", "native-lookup", [_row("p2", correct=True, calls=5)]),
    ]
    cell = lookup_table(units, [_slot(1, "p1"), _slot(1, "p2")])["native-lookup"]
    assert cell.duplicate == 1 and cell.missing == 0
    assert cell.duplicate_occurrences == [
        DuplicateOccurrence(repeat=1, trace_id="t", probe_id="p2", occurrences=3)
    ]
    # Only p1 (observed once) counts: neither occurrence of p2 is chosen.
    assert cell.exact == Rate(correct=1, n=1, rate=1.0)
    assert (cell.calls, cell.bytes, cell.mean_calls) == (1, 100, 1.0)
    assert cell.slots_present == 1


def test_blocked_counts_unknown_slots_independently_of_observation() -> None:
    planned = [
        _slot(1, "p1"),
        _slot(1, "p2", "unknown"),  # blocked and never observed: also missing
        _slot(1, "p3", "unknown"),  # blocked yet observed twice: also duplicate
        _slot(1, "p4", "inventory_infeasible"),
    ]
    units = [
        (
            1,
            "t",
            "native-lookup",
            [_row("p1"), _row("p3"), _row("p4", status="inventory_infeasible")],
        ),
        (1, "t", "native-lookup", [_row("p3")]),
    ]
    cell = lookup_table(units, planned)["native-lookup"]
    assert (cell.blocked, cell.missing, cell.duplicate) == (2, 1, 1)
    assert cell.inventory_infeasible == 1 and cell.slots_planned == 4
    (coverage, _, duplicates) = lookup_sections({"native-lookup": cell})
    _, header, rows, _ = coverage
    assert {"missing", "skipped (inventory-infeasible)", "blocked (unknown feasibility)"} <= set(
        header
    )
    shown = dict(zip(header, rows[0], strict=True))
    assert shown["missing"] == "1" and shown["blocked (unknown feasibility)"] == "2"
    assert shown["skipped (inventory-infeasible)"] == "1" and shown["duplicate"] == "1"
    assert duplicates[2] == [["native-lookup", "r1", "t", "p3", "2"]]


@pytest.mark.parametrize("planned", [None, []])
def test_without_a_plan_the_observed_slots_are_the_planned_ones(
    planned: list[dict[str, object]] | None,
) -> None:
    cell = lookup_table([(1, "t", "native-lookup", [_row("p1")])], planned)["native-lookup"]
    assert (cell.slots_planned, cell.missing, cell.blocked) == (1, 0, 0)
