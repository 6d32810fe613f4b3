"""The run manifest (run.json): written by doit units, read by the report and doit runs."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import msgspec
import pytest

from continuity.errors import AggregateError
from continuity.plan.plan import build_plan, plan_digest
from continuity.probes.scorer_version import scorer_digest
from continuity.report.render import _manifest_rows
from continuity.runner.manifest import (
    MANIFEST_SCHEMA,
    MANIFEST_SCHEMA_V1,
    code_revision,
    read_run_manifest,
    write_run_manifest,
)
from tests.graph.test_dodo import doit

CHECKOUT = Path(__file__).resolve().parents[2]
JUDGE = "openai-codex:gpt-6.1-sol"


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
    whole = json.loads((run / "run.json").read_text())
    plan = build_plan("original", arms="native,cold-rebuild", probe_limit=2)
    assert whole["schema"] == MANIFEST_SCHEMA
    assert (whole["suites"], whole["traces"]) == (["original"], 1)
    [document] = whole["invocations"]
    assert document["plan_digest"] == plan_digest(plan)
    assert (document["suite"], document["suites"]) == ("original", ["original"])
    assert document["arms"] == ["native", "cold-rebuild"] and document["repeats"] == 1
    assert (document["reader"], document["reader_effort"]) == (plan.reader, "low")
    assert document["alternate"] == plan.alternate and document["endpoint_kind"] == "scripted"
    assert document["scorer_digest"] == scorer_digest()
    head = subprocess.run(
        ["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert document["commit"] == (head or "unknown")
    assert document["started"] <= document["finished"]
    listed = doit(tmp_path, "runs").stdout
    row = next(line for line in listed.splitlines() if line.startswith("m1 "))
    assert document["plan_digest"][:12] in row and "plans" not in row
    assert document["started"][:10] in row
    doit(tmp_path, "aggregate", "--run", "m1")
    page = (run / "report.html").read_text()
    assert f"<dd>{document['plan_digest'][:16]}</dd>" in page
    assert f"<dd>{document['commit'][:12]}" in page
    assert "no run manifest" not in page and "invocations" not in page


def _header(page: str) -> dict[str, str]:
    """The report header's (label, value) pairs."""
    block = re.search(r'<dl class="meta">(.*?)</dl>', page)
    assert block is not None
    return {
        html.unescape(k): html.unescape(v)
        for k, v in re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", block.group(1))
    }


def test_a_run_built_by_two_units_calls_describes_both_in_header_and_runs(
    tmp_path: Path,
) -> None:
    """The review's reproduction at unit scale: a run made by one plan, then another
    plan's units added to the same run (another suite, a judge dropped), then the
    aggregate. The header names both plans with their suites and both judges, spans
    both invocations; doit runs shows the latest plan and the first start."""
    first = ("--suite", "original", "--trace", "harbor-market-stall", "--arms", "native")
    doit(tmp_path, "units", *first, "--probe-limit", "2", "--judge", JUDGE, "--run", "m2")
    second = ("--suite", "hard", "--seeds", "101", "--arms", "native", "--probe-limit", "2")
    doit(tmp_path, "units", *second, "--run", "m2")
    run = tmp_path / "out" / "runs" / "m2"
    manifest = read_run_manifest(run)
    assert manifest is not None and len(manifest.invocations) == 2
    one, two = manifest.invocations
    assert (one.suites, two.suites) == (["original"], ["hard"])
    assert (one.judge, two.judge) == (JUDGE, None)
    assert one.plan_digest != two.plan_digest and one.finished <= two.started
    assert (manifest.suites, manifest.traces) == (["hard", "original"], 2)
    assert (manifest.started, manifest.finished) == (one.started, two.finished)
    doit(tmp_path, "aggregate", "--run", "m2")
    header = _header((run / "report.html").read_text())
    assert header["plan digest"] == (
        f"2 plans: {one.plan_digest[:8]}… (original), {two.plan_digest[:8]}… (hard)"
    )
    assert header["judge"] == f"2 judges: {JUDGE} (effort low), no judge"
    assert header["reader"] == f"{one.reader} (effort low)"  # the same in both: once
    assert header["date (UTC)"] == f"{one.started} to {two.finished} (2 invocations)"
    row = next(line for line in doit(tmp_path, "runs").stdout.splitlines() if "m2 " in line)
    assert f"{two.plan_digest[:12]} (latest of 2 plans)" in row
    assert one.started[:16].replace("T", " ") in row


def test_invocations_append_and_differences_reach_the_header(tmp_path: Path) -> None:
    """Through the real functions: three invocations keep their order; the header
    lists every distinct reader and commit (commits and dirty flags set by editing the
    stored file) and says dirty when any invocation was."""
    run = tmp_path / "run"
    write_run_manifest(run, build_plan("original"), started="2026-01-01T00:00:00Z")
    write_run_manifest(
        run,
        build_plan("hard", reader="openai:gpt-4.1", reader_effort="high"),
        started="2026-01-02T00:00:00Z",
    )
    write_run_manifest(run, build_plan("original"), started="2026-01-03T00:00:00Z")
    manifest = read_run_manifest(run)
    assert manifest is not None
    assert [i.started for i in manifest.invocations] == [
        "2026-01-01T00:00:00Z",
        "2026-01-02T00:00:00Z",
        "2026-01-03T00:00:00Z",
    ]
    assert [suites for _, suites in manifest.plans()] == [["original"], ["hard"]]
    stored = json.loads((run / "run.json").read_text())
    stored["invocations"][0] |= {"commit": "a" * 40, "dirty": False}
    stored["invocations"][1] |= {"commit": "b" * 40, "dirty": True}
    stored["invocations"][2] |= {"commit": "a" * 40, "dirty": False}
    (run / "run.json").write_text(json.dumps(stored))
    reread = read_run_manifest(run)
    assert reread is not None
    rows = _manifest_rows(reread)
    assert rows["reader"] == (
        f"2 readers: {manifest.latest.reader} (effort low), openai:gpt-4.1 (effort high)"
    )
    assert rows["commit"] == f"2 commits: {'a' * 12}, {'b' * 12} (dirty checkout)"
    assert rows["date (UTC)"].startswith("2026-01-01T00:00:00Z to ")
    assert rows["date (UTC)"].endswith("(3 invocations)")


def test_a_malformed_manifest_is_refused_with_its_code(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    assert read_run_manifest(run) is None  # no manifest: a run from before manifests
    (run / "run.json").write_text("{not json")
    with pytest.raises(AggregateError) as caught:
        read_run_manifest(run)
    assert caught.value.code == "run_manifest_malformed"
    assert caught.value.location == str(run / "run.json")
    (run / "run.json").unlink()
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


def test_a_v1_manifest_reads_as_one_invocation_and_the_next_write_keeps_it(
    tmp_path: Path,
) -> None:
    v1 = {
        "schema": MANIFEST_SCHEMA_V1,
        "run": "old",
        "mode": "offline",
        "suite": "original",
        "suites": ["original"],
        "traces": 1,
        "arms": ["native"],
        "repeats": 1,
        "reader": "openai-codex:gpt-6-luna",
        "reader_effort": "low",
        "alternate": "openai-codex:gpt-6.1-sol",
        "judge": None,
        "judge_effort": None,
        "endpoint_kind": "scripted",
        "plan_digest": "0" * 64,
        "commit": "c" * 40,
        "dirty": False,
        "started": "2025-05-01T00:00:00Z",
        "finished": "2025-05-01T00:01:00Z",
    }
    run = tmp_path / "old"
    run.mkdir()
    (run / "run.json").write_text(json.dumps(v1))
    manifest = read_run_manifest(run)
    assert manifest is not None and manifest.schema == MANIFEST_SCHEMA
    [only] = manifest.invocations
    assert (only.plan_digest, only.commit, only.scorer_digest) == ("0" * 64, "c" * 40, None)
    assert (only.suites, only.started, manifest.traces) == (["original"], v1["started"], 1)
    write_run_manifest(run, build_plan("hard"), started="2026-01-01T00:00:00Z")
    stored = json.loads((run / "run.json").read_text())
    assert stored["schema"] == MANIFEST_SCHEMA
    assert [i["plan_digest"] for i in stored["invocations"]] == [
        "0" * 64,
        plan_digest(build_plan("hard")),
    ]
    assert stored["invocations"][0]["scorer_digest"] is None


def test_a_manifest_without_invocations_is_malformed_and_a_write_leaves_it(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    empty = {"schema": MANIFEST_SCHEMA, "run": "run", "suites": [], "traces": 0}
    (run / "run.json").write_text(json.dumps(empty | {"invocations": []}))
    with pytest.raises(AggregateError) as caught:
        read_run_manifest(run)
    assert caught.value.code == "run_manifest_malformed"
    with pytest.raises(AggregateError) as caught:
        write_run_manifest(run, build_plan("original"), started="2026-01-01T00:00:00Z")
    assert caught.value.code == "run_manifest_malformed"
    assert json.loads((run / "run.json").read_text())["invocations"] == []  # untouched
