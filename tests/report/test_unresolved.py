"""Unresolved samples: never counted right or wrong, counted in coverage, and decided by
the judge where one gave a readable verdict (issue 35).

The run is the shared scripted one; answers are edited in the unit files and the
store's copies (as a re-seal would) and the report regrades them with the current
scorer, or reads the grades the units hold (``--scorer original``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path

import msgspec

from continuity.probes.judge import JudgeVerdict
from continuity.report.aggregate import aggregate_run
from continuity.runner.units.build import ProbeResult, UnitRecord, seal
from continuity.runner.units.grading import decide
from continuity.store import Store

# No value, status word, term or decline the scorer reads.
UNREADABLE = "Thanks, that is all sorted on my side."
VALUE_CATEGORIES = ("tool_identifier", "superseded_current")


def _edit(folder: Path, store: Store, edit: Callable[[ProbeResult], ProbeResult]) -> None:
    for path in sorted((folder / "units").glob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        probes = [edit(p) if p.status == "valid" else p for p in record.probes]
        # No judge verdicts: those the unit holds were given on the answers replaced here.
        data = msgspec.json.encode(seal(msgspec.structs.replace(record, probes=probes, judge=[])))
        store.record_action(record.key, kind="unit", output=store.put_blob(data))
        path.write_bytes(data)


def _unreadable(probe: ProbeResult) -> ProbeResult:
    if probe.category in VALUE_CATEGORIES:
        return msgspec.structs.replace(probe, answer=UNREADABLE)
    return probe


def test_an_unresolved_sample_is_out_of_accuracy_and_in_coverage(
    private_run: tuple[Store, Path],
) -> None:
    store, folder = private_run
    _edit(folder, store, _unreadable)
    _, paths, _ = aggregate_run(store, folder)  # the current scorer regrades the answers
    units = [json.loads(p.read_text()) for p in sorted((folder / "units").glob("*.json"))]
    results = json.loads(paths["results"].read_text())
    seen_unresolved = 0
    for unit in units:
        assert unit["family"] == "original"
    for arm, cells in results["accuracy"]["original"].items():
        valid = [p for u in units if u["arm"] == arm for p in u["probes"] if p["status"] == "valid"]
        unresolved = [p for p in valid if p["answer"] == UNREADABLE]
        kept = [p for p in valid if p["answer"] != UNREADABLE]
        seen_unresolved += len(unresolved)
        overall = cells["overall"]
        assert (overall["valid"], overall["n"]) == (len(valid), len(kept)), arm
        assert overall["coverage"] == len(kept) / len(valid)
        # Accuracy over the resolved samples alone: the unresolved ones are neither.
        right = sum(1 for p in kept if p["correct"])
        per = overall["per_repeat"]
        assert sum(r["correct"] for r in per) == right and sum(r["n"] for r in per) == len(kept)
        for category in VALUE_CATEGORIES:
            cell = cells[category]
            left = sum(1 for p in unresolved if p["category"] == category)
            assert cell["valid"] - cell["n"] == left
    assert seen_unresolved > 0, "the edit left some answers unresolved"
    summary = paths["summary"].read_text()
    assert "coverage" in summary and "resolved ÷ valid" in summary
    assert "unresolved (no right/wrong call)" in paths["report"].read_text()
    outcomes = results["outcomes"]["original"]
    assert sum(cells.get("unresolved", 0) for cells in outcomes.values()) == seen_unresolved


def _judge_decided(probe: ProbeResult) -> ProbeResult:
    if probe.category in VALUE_CATEGORIES:
        return msgspec.structs.replace(
            probe, outcome="correct", correct=True, score_reason="judge: ok", decided_by="judge"
        )
    return probe


def test_judge_decided_samples_count_and_are_labelled(
    private_run: tuple[Store, Path],
) -> None:
    store, folder = private_run
    _edit(folder, store, _judge_decided)
    _, paths, _ = aggregate_run(store, folder, scorer="original")  # the grades units hold
    results = json.loads(paths["results"].read_text())
    for cells in results["accuracy"]["original"].values():
        overall = cells["overall"]
        assert overall["coverage"] == 1.0 and overall["judge_decided"] > 0
        assert cells["superseded_current"]["judge_decided"] <= cells["superseded_current"]["n"]
    assert html.escape("(correct, the judge's call)") in paths["report"].read_text()


def _result(probe_id: str, outcome: str, correct: bool | None) -> ProbeResult:
    return ProbeResult(
        probe_id=probe_id,
        index=0,
        category="superseded_current",
        design_role=None,
        status="valid",
        reasons=[],
        answer="",
        outcome=outcome,  # type: ignore[arg-type]
        correct=correct,
        score_reason="scorer",
    )


def test_the_judge_decides_unresolved_samples_only() -> None:
    results = [
        _result("a", "unresolved", None),
        _result("b", "unresolved", None),
        _result("c", "unresolved", None),
        _result("d", "fabricated", False),
        _result("e", "unresolved", None),
    ]
    verdicts = [
        JudgeVerdict("a", True, "j", "correct", "states it"),
        JudgeVerdict("b", False, "j", "stale", "the old one"),
        JudgeVerdict("c", False, "j", "unreadable", ""),
        JudgeVerdict("d", True, "j", "correct", "the judge disagrees"),
        JudgeVerdict("e", False, "j", "incorrect", ""),
    ]
    a, b, c, d, e = decide(results, verdicts)
    assert (a.outcome, a.correct, a.decided_by) == ("correct", True, "judge")
    assert (b.outcome, b.correct, b.decided_by) == ("stale", False, "judge")
    assert (c.outcome, c.correct) == ("unresolved", None)  # no readable verdict: stays
    assert d == results[3]  # the scorer's call stands; the judge is only a check there
    assert (e.outcome, e.correct) == ("fabricated", False)
    assert a.score_reason == "judge: states it"
