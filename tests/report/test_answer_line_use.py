"""How value-probe replies ended, per suite and arm (probe protocol v3, issue 35): with a
value or UNKNOWN on the answer line, with lines that disagree, or with no line, when the
scorer falls back to the free text, and the report says how often.

The run is the shared scripted one; answers are edited in the unit files and the
store's copies (as a re-seal would) and the report regrades them with the current
scorer.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import msgspec

from continuity.probes.protocol import answer_form
from continuity.report.aggregate import aggregate_run
from continuity.report.scorer_render import ANSWER_LINE_NOTE
from continuity.runner.units.build import ProbeResult, UnitRecord, seal
from continuity.store import Store

# Replies to a value probe, by the kind of answer line each ends with.
REPLIES = {
    "missing": "I do not think that ever came up between us, so UNKNOWN.",
    "unknown": "Nothing in our conversation says.\nANSWER: unknown",
    "value": "It should be the one in the email.\n**Answer:** QX-55120",
    "conflict": "ANSWER: QX-55120\nActually no.\nANSWER: QX-55121",
}
ORDER = ("missing", "unknown", "value", "conflict")


def _edit(folder: Path, store: Store) -> Counter[tuple[str, str]]:
    """Give the valid value probes the replies of REPLIES in turn; the kinds by arm."""
    given: Counter[tuple[str, str]] = Counter()
    turn = 0
    for path in sorted((folder / "units").glob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        probes: list[ProbeResult] = []
        for probe in record.probes:
            if probe.status == "valid" and answer_form(probe.category) == "line":
                kind = ORDER[turn % len(ORDER)]
                turn += 1
                given[(record.arm, kind)] += 1
                probe = msgspec.structs.replace(probe, answer=REPLIES[kind])
            probes.append(probe)
        data = msgspec.json.encode(seal(msgspec.structs.replace(record, probes=probes, judge=[])))
        store.record_action(record.key, kind="unit", output=store.put_blob(data))
        path.write_bytes(data)
    return given


def test_the_scripted_readers_answer_on_the_line_the_protocol_asks_for(
    run: tuple[Store, Path],
) -> None:
    store, folder = run
    _, paths, _ = aggregate_run(store, folder)
    results = json.loads(paths["results"].read_text())
    units = [json.loads(p.read_text()) for p in sorted((folder / "units").glob("*.json"))]
    for arm, use in results["answer_line"]["original"].items():
        values = [
            p
            for u in units
            if u["arm"] == arm
            for p in u["probes"]
            if p["status"] == "valid" and answer_form(p["category"]) == "line"
        ]
        assert values and all(p["answer"] == "ANSWER: UNKNOWN" for p in values)
        assert use == {
            "samples": len(values),
            "value": 0,
            "unknown": len(values),
            "conflict": 0,
            "missing": 0,
            "missing_rate": 0.0,
        }
    # Free-text probes keep their plain decline: no line was asked of them.
    free = [p for u in units for p in u["probes"] if answer_form(p["category"]) == "text"]
    assert free and all(p["answer"] == "UNKNOWN" for p in free if p["status"] == "valid")


def test_the_report_counts_how_value_replies_ended_and_grades_a_missing_line_by_text(
    private_run: tuple[Store, Path],
) -> None:
    store, folder = private_run
    given = _edit(folder, store)
    _, paths, _ = aggregate_run(store, folder)
    results = json.loads(paths["results"].read_text())
    uses = results["answer_line"]["original"]
    assert set(uses) == {arm for arm, _ in given}
    for arm, use in uses.items():
        for kind in ORDER:
            assert use[kind] == given[(arm, kind)], (arm, kind)
        assert use["samples"] == sum(given[(arm, k)] for k in ORDER)
        assert use["missing_rate"] == given[(arm, "missing")] / use["samples"]
    # A reply without the line is still graded, from its free text: its plain decline,
    # like the line's UNKNOWN, is a right/wrong call (resolved), never unresolved.
    for arm, cells in results["accuracy"]["original"].items():
        declined = given[(arm, "missing")] + given[(arm, "unknown")]
        assert cells["overall"]["n"] >= declined > 0, arm
    summary = paths["summary"].read_text()
    assert "Answer line" in summary and ANSWER_LINE_NOTE[:60] in summary
    assert "missing rate" in summary
    assert "Answer line" in paths["report"].read_text()
