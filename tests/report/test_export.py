"""``doit export``: every sample of a run as JSON Lines or CSV, round-tripped against the
unit files, results.json and the stored reader contexts; bad input (a bad ``--output``
among it, refused before the run is read and leaving nothing behind) refused with its
code and location."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.graph.test_dodo import doit

ARMS = "native,cold-rebuild,continuity-store"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke suite over three arms, aggregated; its tmp folder (store/, out/)."""
    root = tmp_path_factory.mktemp("export")
    doit(root, "units", "--suite", "smoke", "--arms", ARMS)
    doit(root, "aggregate")
    return root


def _samples(run_dir: Path) -> list[tuple[str, str, str]]:
    """(arm, probe id, status) of every sample in the run's unit files."""
    found = []
    for path in sorted((run_dir / "units").rglob("*.json")):
        unit = json.loads(path.read_text())
        found += [(unit["arm"], p["probe_id"], p["status"]) for p in unit["probes"]]
    return found


def _outcomes(rows: list[dict[str, object]]) -> dict[tuple[str, str], Counter[str]]:
    counts: dict[tuple[str, str], Counter[str]] = {}
    for row in rows:
        if row["status"] == "valid":
            key = (str(row["suite"]), str(row["arm"]))
            counts.setdefault(key, Counter())[str(row["outcome"])] += 1
    return counts


def _context_refs(run_dir: Path) -> dict[tuple[str, str], str]:
    """(unit file, probe id) -> the reader-context tree its evidence names."""
    refs = {}
    for path in sorted((run_dir / "units").rglob("*.json")):
        for probe in json.loads(path.read_text())["probes"]:
            context = (probe.get("evidence") or {}).get("context")
            if context:
                refs[(path.relative_to(run_dir).as_posix(), probe["probe_id"])] = context["digest"]
    return refs


def _check_what_the_reader_saw(run: Path, rows: list[dict[str, object]]) -> None:
    """Each row's context is its unit's stored tree; its tool calls are the probe turn's,
    each with its result; needles and superseded values are the evaluator's, from what
    the scorer expected."""
    from continuity.sampling.context import load_context
    from continuity.store import ObjectRef, Store

    store = Store(run / "store")
    refs = _context_refs(run / "out" / "runs" / "offline")
    assert len(refs) == len(rows)
    calls = 0
    for row in rows:
        assert row["context"] == refs[(str(row["unit_file"]), str(row["probe_id"]))]
        assert row["context_note"] == ""
        seen = load_context(store, ObjectRef("tree", str(row["context"]), 0))
        results = {m.call_id: m for m in seen.turn.messages if m.role == "tool"}
        assert row["probe_tool_calls"] == [
            {"name": c.name, "arguments": c.arguments,
             "result": results[c.call_id].text, "is_error": results[c.call_id].is_error}
            for c in seen.tool_calls()
        ]  # fmt: skip
        calls += len(seen.tool_calls())
        needles, superseded = row["needles"], row["superseded"]
        assert isinstance(needles, list) and isinstance(superseded, list)
        assert all(str(v) in str(row["expected"]) for v in needles + superseded)
    assert calls > 0  # continuity-store looks the fact up at the probe
    assert any(r["needles"] for r in rows) and any(r["superseded"] for r in rows)


def test_every_sample_round_trips_through_jsonl_and_csv(run: Path) -> None:
    run_dir = run / "out" / "runs" / "offline"
    line = doit(run, "export").stdout
    jsonl = run_dir / "export" / "samples.jsonl"
    assert f"written to {jsonl}" in line
    rows = [json.loads(text) for text in jsonl.read_text().splitlines()]
    samples = _samples(run_dir)
    assert len(rows) == len(samples) > 0 and f"export: {len(rows)} samples" in line
    assert sorted((r["arm"], r["probe_id"], r["status"]) for r in rows) == sorted(samples)
    results = json.loads((run_dir / "results.json").read_text())
    expected = {
        (suite, arm): Counter({k: v for k, v in counts.items() if v})
        for suite, by_arm in results["outcomes"].items()
        for arm, counts in by_arm.items()
    }
    assert _outcomes(rows) == expected  # the aggregate's scorer graded both
    first = rows[0]
    assert first["question"] and first["expected"] and first["boundary"]
    assert (run_dir / first["unit_file"]).is_file() and first["report_anchor"] == "s1"
    assert first["reader_model"] and first["cost_usd"] is None  # offline: no real call
    assert {r["fact"] for r in rows} <= {"in_context", "retrievable", "absent", "not_applicable"}
    _check_what_the_reader_saw(run, rows)

    csv_path = run / "samples.csv"
    doit(run, "export", "--format", "csv", "--output", str(csv_path))
    with csv_path.open(newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert [r["probe_id"] for r in table] == [r["probe_id"] for r in rows]
    assert [r["outcome"] or None for r in table] == [r["outcome"] for r in rows]
    assert [r["correct"] for r in table] == [
        "" if r["correct"] is None else str(r["correct"]).lower() for r in rows
    ]
    assert [r["needles"] for r in table] == ["; ".join(r["needles"]) for r in rows]
    assert [json.loads(r["probe_tool_calls"] or "[]") for r in table] == [
        r["probe_tool_calls"] for r in rows
    ]
    again = doit(run, "export").stdout  # the same run exports the same bytes
    assert "written to" in again and jsonl.read_text() == "".join(
        json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in rows
    )


def _have_inspect() -> bool:
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        return "CI" in os.environ  # CI installs the extra: a missing one fails there
    return True


_INSPECT = pytest.mark.skipif(not _have_inspect(), reason="inspect_ai is not installed")


@pytest.mark.parametrize(
    ("args", "code", "location"),
    [
        (["--format", "parquet"], "export_format_unknown", "--format"),
        (["--scorer", "newest"], "scorer_unknown", "--scorer"),
        (["--run", "no-such-run"], "run_unknown", "--run"),
        (["--run-dir", "{tmp}/nowhere"], "run_unknown", "--run-dir"),
        (["--run", "no-units"], "run_empty", "--run"),  # a run directory without units/
        (["--run", "no-samples"], "run_empty", "--run"),  # a units folder without a unit
        (["--output", "{tmp}/a-dir"], "export_output_invalid", "{tmp}/a-dir"),
        (["--format", "csv", "--output", "{tmp}/a-dir"], "export_output_invalid", "{tmp}/a-dir"),
        (["--output", "{tmp}/a-file/x.jsonl"], "export_output_invalid", "{tmp}/a-file/x.jsonl"),
        (["--output", "/proc/nope/x.jsonl"], "export_output_invalid", "/proc/nope/x.jsonl"),
        pytest.param(
            ["--format", "inspect", "--output", "{tmp}/a-file"],
            "export_output_invalid",
            "{tmp}/a-file",
            marks=_INSPECT,
        ),
        pytest.param(
            ["--format", "inspect", "--output", "/proc/nope"],
            "export_output_invalid",
            "/proc/nope",
            marks=_INSPECT,
        ),
        # --output is checked before the run is read: its refusal comes first
        (
            ["--run", "no-such-run", "--output", "{tmp}/a-dir"],
            "export_output_invalid",
            "{tmp}/a-dir",
        ),
    ],
)
def test_bad_export_input_is_refused_with_its_code(
    run: Path, tmp_path: Path, args: list[str], code: str, location: str
) -> None:
    (run / "out" / "runs" / "no-samples" / "units").mkdir(parents=True, exist_ok=True)
    (run / "out" / "runs" / "no-units").mkdir(parents=True, exist_ok=True)
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    before = sorted((run / "out").rglob("*")) + sorted(tmp_path.rglob("*"))
    result = doit(run, "export", *(a.format(tmp=tmp_path) for a in args), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output
    found = re.search(rf"^{code}: .* \(at (.+)\)$", output, re.MULTILINE)
    assert found is not None, output
    assert found.group(1) == location.format(tmp=tmp_path)
    # Nothing written, nothing half-written, no folder left behind.
    assert sorted((run / "out").rglob("*")) + sorted(tmp_path.rglob("*")) == before
    assert not Path("/proc/nope").exists()


def test_a_real_samples_cost_is_its_calls_list_price_and_unknown_when_unpriced() -> None:
    from continuity.messages import Usage
    from continuity.plan.pricing import call_cost, load_catalog
    from continuity.report.export import sample_cost
    from continuity.report.results import Sample

    catalog = load_catalog()
    calls = [Usage(input=12_000, cache_read=3_000, output=400), Usage(input=500, output=20)]
    fields: dict[str, object] = {
        "anchor": "s1", "suite": "original", "arm": "native", "trace_id": "t", "repeat": 1,
        "probe_id": "p1", "category": "tool_identifier", "question": "q", "expected": "e",
        "answer": "a", "status": "valid", "reasons": [], "outcome": "correct",
        "correct": True, "score_reason": None, "fact": "in_context",
        "superseded_present": False, "loss": None, "boundary": "b", "judge": None,
        "path": "units/u.json",
    }  # fmt: skip
    model = "openai-codex:gpt-6-mini"
    priced = Sample(**fields, billed_as=model, billed_calls=calls)  # type: ignore[arg-type]
    each = [call_cost(catalog, model, usage) for usage in calls]
    assert None not in each
    assert sample_cost(catalog, priced) == pytest.approx(sum(c for c in each if c))
    unpriced = Sample(**fields, billed_as="local:nobody-prices-this", billed_calls=calls)  # type: ignore[arg-type]
    assert sample_cost(catalog, unpriced) is None
    offline = Sample(**fields)  # type: ignore[arg-type]
    assert sample_cost(catalog, offline) is None


def test_csv_quotes_line_breaks_quotes_and_commas_so_every_cell_reads_back() -> None:
    from continuity.report.export import ExportRow, ExportToolCall, export_bytes

    tricky = 'a lone\rreturn, a\nnewline, a "quote" and =SUM(A1)'
    fields: dict[str, object] = {name: 0 for name in ExportRow.__struct_fields__}
    fields |= {n: "x" for n in ("suite", "arm", "trace_id", "probe_id", "category",
                                "question", "expected", "status", "boundary", "unit_file",
                                "report_anchor")}  # fmt: skip
    fields |= {"answer": tricky, "reasons": ["one", "two"], "outcome": None, "correct": True}
    for name in ("score_reason", "decided_by", "judge", "fact", "superseded_present", "loss",
                 "reader_model", "cost_usd", "context"):  # fmt: skip
        fields[name] = None
    call = ExportToolCall(
        name="ConversationHistory", arguments={"query": 'a "b", c'}, result="x\ny", is_error=False
    )
    fields |= {
        "needles": ["TSO-1"],
        "superseded": [],
        "context_note": "",
        "probe_tool_calls": [call],
    }
    row = ExportRow(**fields)  # type: ignore[arg-type]
    text = export_bytes([row, row], "csv").decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == 2 and rows[0]["answer"] == tricky
    assert (rows[0]["reasons"], rows[0]["outcome"], rows[0]["correct"]) == ("one; two", "", "true")
    assert (rows[0]["needles"], rows[0]["superseded"], rows[0]["context"]) == ("TSO-1", "", "")
    assert json.loads(rows[0]["probe_tool_calls"]) == [
        {"name": "ConversationHistory", "arguments": {"query": 'a "b", c'}, "result": "x\ny",
         "is_error": False}
    ]  # fmt: skip
