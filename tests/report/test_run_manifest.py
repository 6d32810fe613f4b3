"""The run manifest (run.json): written by doit units, read by the report and doit runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pytest

from continuity.errors import AggregateError
from continuity.plan.plan import build_plan, plan_digest
from continuity.runner.manifest import (
    MANIFEST_SCHEMA,
    code_revision,
    read_run_manifest,
    write_run_manifest,
)
from tests.graph.test_dodo import doit

CHECKOUT = Path(__file__).resolve().parents[2]


def test_doit_units_writes_the_manifest_that_runs_and_the_report_show(tmp_path: Path) -> None:
    doit(
        tmp_path,
        "units",
        "--suite",
        "original",
        "--trace",
        "harbor-market-stall",
        "--arms",
        "native,cold-rebuild",
        "--probe-limit",
        "2",
        "--run",
        "m1",
    )
    run = tmp_path / "out" / "runs" / "m1"
    document = json.loads((run / "run.json").read_text())
    plan = build_plan("original", arms="native,cold-rebuild", probe_limit=2)
    assert document["schema"] == MANIFEST_SCHEMA
    assert document["plan_digest"] == plan_digest(plan)
    assert (document["suites"], document["traces"]) == (["original"], 1)
    assert document["arms"] == ["native", "cold-rebuild"] and document["repeats"] == 1
    assert (document["reader"], document["reader_effort"]) == (plan.reader, "low")
    assert document["alternate"] == plan.alternate and document["endpoint_kind"] == "scripted"
    head = subprocess.run(
        ["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert document["commit"] == (head or "unknown")
    assert document["started"] <= document["finished"]
    listed = doit(tmp_path, "runs").stdout
    row = next(line for line in listed.splitlines() if line.startswith("m1 "))
    assert document["plan_digest"][:12] in row
    assert document["started"][:10] in row
    doit(tmp_path, "aggregate", "--run", "m1")
    page = (run / "report.html").read_text()
    assert f"<dd>{document['plan_digest'][:16]}</dd>" in page
    assert f"<dd>{document['commit'][:12]}" in page
    assert "no run manifest" not in page


def test_a_malformed_manifest_is_refused_with_its_code(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    assert read_run_manifest(run) is None  # no manifest: a run from before manifests
    (run / "run.json").write_text("{not json")
    with pytest.raises(AggregateError) as caught:
        read_run_manifest(run)
    assert caught.value.code == "run_manifest_malformed"
    assert caught.value.location == str(run / "run.json")
    path = write_run_manifest(run, build_plan("original"), started="2026-01-01T00:00:00Z")
    other = json.loads(path.read_text()) | {"schema": "continuity-run-v0"}
    path.write_text(json.dumps(other))
    with pytest.raises(AggregateError) as caught:
        read_run_manifest(run)
    assert caught.value.code == "run_manifest_malformed"


def test_doit_runs_marks_an_unreadable_manifest_and_aggregate_names_its_code(
    tmp_path: Path,
) -> None:
    doit(
        tmp_path,
        "units",
        "--suite",
        "original",
        "--trace",
        "harbor-market-stall",
        "--arms",
        "native",
        "--probe-limit",
        "1",
        "--run",
        "broken",
    )
    manifest = tmp_path / "out" / "runs" / "broken" / "run.json"
    manifest.write_text("[]")
    row = next(line for line in doit(tmp_path, "runs").stdout.splitlines() if "broken" in line)
    assert row.split()[4:6] == ["?", "?"]
    failed = doit(tmp_path, "aggregate", "--run", "broken", check=False)
    assert failed.returncode != 0 and "run_manifest_malformed" in failed.stdout


def test_outside_a_git_checkout_the_commit_is_unknown_and_nothing_fails(tmp_path: Path) -> None:
    assert code_revision(tmp_path) == ("unknown", None)
    commit, dirty = code_revision(CHECKOUT)
    assert commit == "unknown" or (len(commit) == 40 and dirty in (True, False))


def test_the_manifest_started_time_defaults_to_when_plan_json_was_written(
    tmp_path: Path,
) -> None:
    import os

    (tmp_path / "plan.json").write_text("{}")
    os.utime(tmp_path / "plan.json", (1_700_000_000, 1_700_000_000))
    path = write_run_manifest(tmp_path, build_plan("original"))
    manifest = read_run_manifest(tmp_path)
    assert manifest is not None and manifest.started == "2023-11-14T22:13:20Z"
    assert manifest.traces == 0 and manifest.suites == []  # no units yet
    assert msgspec.json.decode(path.read_bytes())["run"] == tmp_path.name
