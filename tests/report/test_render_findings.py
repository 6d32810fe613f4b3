"""The key findings (continuity.report.findings and findings_render) and the report's
title, on small hand-made results: rows per suite and arm, the largest paired delta,
the sentence that reads them, the box and summary.md's section, and a readable title
for a real run whose directory is named by its plan digest."""

from __future__ import annotations

import re

import msgspec

from continuity.contract_headline import headline as contract_headline
from continuity.report.findings import findings, headline, is_real
from continuity.report.findings_render import findings_html, findings_markdown, largest_line
from continuity.report.html_tables import table_html
from continuity.report.render import render_markdown, report_title
from continuity.report.results import (
    AccuracyCell,
    AnswerLineUse,
    JudgeResults,
    Paired,
    ReportContext,
    Results,
    Spend,
)
from continuity.runner.manifest import Invocation, RunManifest

PLACES = {
    "hard": {
        "native": {"in_context": 10, "retrievable": 0, "absent": 0, "not_applicable": 2},
        "compaction-1": {"in_context": 1, "retrievable": 0, "absent": 9},
        "continuity-store": {"in_context": 2, "retrievable": 6, "absent": 2},
    },
    "original": {
        "native": {"in_context": 8, "retrievable": 0, "absent": 0},
        "compaction-1": {"in_context": 6, "retrievable": 0, "absent": 2},
    },
}


def _cell(mean: float, n: int = 20, valid: int = 25) -> AccuracyCell:
    return AccuracyCell(mean=mean, sd=None, n=n, per_repeat=[], valid=valid, coverage=n / valid)


def _paired(delta: float, low: float, high: float) -> Paired:
    return Paired(
        pairs=20,
        both_correct=0,
        arm_only=0,
        native_only=0,
        both_wrong=0,
        mcnemar_p=1.0,
        delta_pp=delta,
        ci_low=low,
        ci_high=high,
        by_category={},
    )


def _spend(calls: int) -> Spend:
    return Spend(
        input=0,
        cache_read=0,
        cache_write=0,
        output=0,
        model_calls=calls,
        cost_usd=None,
        cost_known_usd=0.0,
        unpriced_calls=0,
    )


def _unknown(samples: int, unknown: int) -> AnswerLineUse:
    return AnswerLineUse(
        samples=samples,
        value=samples - unknown,
        unknown=unknown,
        conflict=0,
        missing=0,
        missing_rate=0.0,
    )


def _results(*, real: bool = False, run: str = "mixed", flat: bool = True) -> Results:
    arms = ["native", "compaction-1", "continuity-store"]
    accuracy = {
        "original": {"native": {"overall": _cell(0.5)}, "compaction-1": {"overall": _cell(0.5)}},
        "hard": {
            "native": {"overall": _cell(0.4)},
            "compaction-1": {"overall": _cell(0.4 if flat else 0.1)},
            "continuity-store": {"overall": _cell(0.4 if flat else 0.35)},
        },
    }
    paired = {
        "original": {"compaction-1": _paired(0.0, 0.0, 0.0)},
        "hard": {
            "compaction-1": _paired(-30.0, -45.0, -15.0),
            "continuity-store": _paired(-5.0, -20.0, 10.0),
        },
    }
    lines = {s: {a: _unknown(8, 8) for a in by_arm} for s, by_arm in accuracy.items()}
    spend = {arm: _spend(3 if real else 0) for arm in [*arms, "judge"]}
    return Results(
        run=run,
        units=5,
        arms=arms,
        suites=["original", "hard"],
        repeats=[1],
        categories=[],
        probe_protocols=["probe-protocol-v3"],
        protocol_note=None,
        accuracy=accuracy,
        flip_rate={},
        outcomes={},
        tool_use={},
        excluded={},
        availability=PLACES,
        pressure={},
        judge=JudgeResults(pairs=0, unreadable=0, by_suite={}, disagreements=[]),
        spend=spend,
        paired=paired,
        answer_line=lines,
    )


def test_each_suite_has_a_row_per_arm_it_ran_with_accuracy_coverage_and_places() -> None:
    f = findings(_results())
    assert [s.suite for s in f.suites] == ["original", "hard"]  # the report's order
    original, hard = f.suites
    assert [a.arm for a in original.arms] == ["native", "compaction-1"]  # no store arm
    store = hard.arms[2]
    assert (store.arm, store.accuracy, store.resolved, store.valid) == (
        "continuity-store",
        0.4,
        20,
        25,
    )
    assert store.coverage == 0.8
    places = store.places
    assert (places.facts, places.in_context, places.retrievable, places.lost) == (10, 2, 6, 2)
    assert hard.arms[0].places.facts == 10  # not_applicable samples need no fact


def test_the_contract_reads_the_same_headline_the_report_does() -> None:
    assert contract_headline is headline  # moved down into the report, not copied
    by_suite = {s.suite: s for s in headline(PLACES, ["native", "compaction-1"])}
    assert [a.arm for a in by_suite["hard"].arms] == ["native", "compaction-1"]


def test_the_largest_paired_delta_is_the_largest_in_size_with_its_interval() -> None:
    original, hard = findings(_results()).suites
    assert hard.largest is not None and hard.largest.arm == "compaction-1"
    assert (hard.largest.delta_pp, hard.largest.baseline) == (-30.0, "native")
    assert hard.largest.excludes_zero
    assert largest_line(hard.largest) == (
        "Largest paired delta vs native: compaction-1, -30.0 pp "
        "(95% CI -45.0 to -15.0, excludes 0; 20 pairs)."
    )
    assert original.largest is not None and original.largest.delta_pp == 0
    assert (
        largest_line(original.largest)
        == "Paired delta vs native: 0.0 pp on every arm (no arm differs)."
    )
    assert "no baseline arm (native, or agent-native" in largest_line(None)
    assert largest_line(None, "native") == "No paired delta: no other arm was paired with native."
    assert [s.baseline for s in findings(_results()).suites] == ["native", "native"]
    bare = msgspec.structs.replace(_results(), paired={})
    assert all(s.largest is None for s in findings(bare).suites)


def test_offline_the_reading_says_accuracy_is_flat_and_where_facts_were() -> None:
    reading = findings(_results()).reading
    assert reading.startswith(  # no category cells here: no probe named
        "On the scripted reader every arm answers UNKNOWN, so accuracy is flat across arms "
        "(50.0% on original, 40.0% on hard); the boundary shows in where the facts were: "
    )
    # the largest share lost (compaction-1, 9 of 10 on hard) and kept retrievable
    assert "compaction-1 lost 90% of its facts on hard" in reading
    assert "continuity-store kept 60% retrievable on hard" in reading
    answered = msgspec.structs.replace(_results(), answer_line={"hard": {"native": _unknown(8, 2)}})
    assert findings(answered).reading.startswith(
        "On the scripted reader accuracy is the same on every arm"
    )
    moved = msgspec.structs.replace(_results(flat=False), answer_line={})
    assert "checks the pipeline, not the boundary" in findings(moved).reading


def _with_categories(r: Results, redaction: float = 1.0) -> Results:
    """`r` with category cells: UNKNOWN is right on abstention (and on redaction, at
    `redaction`), wrong on tool identifiers."""
    accuracy = {
        suite: {
            arm: {
                **cells,
                "abstention": _cell(1.0, n=4),
                "redaction": _cell(redaction, n=2),
                "tool_identifier": _cell(0.0, n=14),
            }
            for arm, cells in by_arm.items()
        }
        for suite, by_arm in r.accuracy.items()
    }
    categories = ["abstention", "redaction", "tool_identifier"]
    return msgspec.structs.replace(r, accuracy=accuracy, categories=categories)


def test_offline_the_reading_says_which_probes_unknown_is_right_on() -> None:
    """Flat accuracy beside a non-zero figure is no contradiction: the reading names the
    probes UNKNOWN is right on (read from the category cells) and gives the figure."""
    reading = findings(_with_categories(_results())).reading
    assert reading.startswith(
        "On the scripted reader every arm answers UNKNOWN, which is right only on the "
        "abstention probes (facts that never came up) and the redaction probes (secrets to "
        "withhold), so accuracy is flat across arms (50.0% on original, 40.0% on hard); "
    )
    partly = findings(_with_categories(_results(), redaction=0.5)).reading
    assert ", which is right on the abstention probes (facts that never came up), so " in partly
    moved = findings(_with_categories(_results(flat=False))).reading
    assert "only on the abstention probes" in moved
    assert "so an arm's accuracy is only the share of such probes among its samples" in moved
    one = msgspec.structs.replace(_with_categories(_results()), suites=["hard"])
    assert "so accuracy is flat across arms (40.0%); " in findings(one).reading


def test_a_real_run_is_read_by_its_largest_delta() -> None:
    f = findings(_results(real=True))
    assert f.real and is_real(_results(real=True)) and not is_real(_results())
    assert f.reading.startswith(
        "On the model's answers, the largest paired delta is compaction-1 vs native on hard, "
        "-30.0 pp (its 95% interval excludes 0)"
    )
    assert "mechanics" not in f.reading and "UNKNOWN" not in f.reading
    none = msgspec.structs.replace(_results(real=True), availability={})
    assert "no probe asked for a fact" in findings(none).reading


def test_the_box_carries_each_rows_counts_and_summary_md_leads_with_the_table() -> None:
    f = findings(_results())
    box = findings_html(f)
    assert box.startswith('<section id="findings"><h2>Key findings</h2>')
    rows = re.findall(
        r'<tr data-arm="([^"]+)" data-facts="(\d+)" data-in-context="(\d+)" '
        r'data-retrievable="(\d+)" data-lost="(\d+)">',
        box,
    )
    assert len(rows) == 5
    assert ("continuity-store", "10", "2", "6", "2") in rows
    assert "<td>60% (6)</td>" in box  # share and count
    lines = findings_markdown(f)
    assert lines[:3] == ["## Key findings", "", f.reading]
    assert (
        "| hard | continuity-store | 40.0% | 80.0% (20/25) | 10 | 20% (2) | 60% (6) | 20% (2) |"
        in lines
    )
    assert "- hard: " + largest_line(f.suites[1].largest) in lines


def test_a_real_runs_title_names_what_it_ran_not_its_digest() -> None:
    digest = "3f2a9c0d1e4b5a6c"
    invocation = Invocation(
        plan_digest=digest * 4,
        mode="real",
        suite="smoke",
        suites=["smoke"],
        arms=["native"],
        repeats=1,
        reader="local:SmolLM2-135M",
        reader_effort="none",
        alternate="local:SmolLM2-135M",
        judge=None,
        judge_effort=None,
        endpoint_kind="openai-chat",
        scorer_digest=None,
        commit="unknown",
        dirty=None,
        started="2026-12-06T10:00:00Z",
        finished="2026-12-06T10:05:00Z",
    )
    manifest = RunManifest(run=digest, suites=["smoke"], traces=1, invocations=[invocation])
    context = ReportContext(manifest=manifest, reader_models=[], history_models=[], samples=[])
    real = msgspec.structs.replace(_results(real=True, run=digest), suites=["smoke"])
    assert report_title(real, context) == (
        "SmolLM2-135M · smoke · native, compaction-1, continuity-store · 2026-12-06"
    )
    assert report_title(real) == "smoke · native, compaction-1, continuity-store"
    four = msgspec.structs.replace(real, arms=[*real.arms, "ceiling"])
    assert "native, compaction-1, continuity-store +1 arms" in report_title(four)
    assert report_title(_results(run="offline-contract")) == "offline-contract"  # a name
    assert report_title(_results(run=digest)) != digest  # offline, named by a digest
    summary = render_markdown(real, context)
    assert summary.startswith("# Results: SmolLM2-135M · smoke · ")
    assert f"(run {digest})" in summary.splitlines()[0]
    assert summary.index("## Key findings") < summary.index("## Accuracy per arm")


def test_a_collapsed_table_is_a_closed_details_titled_with_its_row_count() -> None:
    r = _results()
    table = ("Flip rate", ["arm", "flips"], [["native", "0"], ["ceiling", "1"]], "a note")
    closed = table_html(r, table, collapsed=True)
    assert closed.startswith('<details class="tbl"><summary><h3>Flip rate</h3>')
    assert '<span class="n">(2 rows)</span></summary>' in closed
    assert "<details open" not in closed and closed.endswith("</table></div></details>")
    assert '<div class="tw"><table>' in table_html(r, table)  # scrolls sideways, not squeezed
    empty = table_html(r, ("Flip rate", ["arm"], [], ""), collapsed=True)
    assert "(none)</span></summary>" in empty
