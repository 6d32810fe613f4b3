"""`doit ledger_smoke`: the ledger arm's mechanism proof, and that its checks can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.errors import ContinuityError
from continuity.runner.ledger_smoke import BURIED, CORRECTED, mechanism_trace, run_smoke
from continuity.traces.schema import ToolResult, iter_turns


def test_the_buried_id_and_the_corrected_amount_reach_upkeep_and_the_cold_reader(
    tmp_path: Path,
) -> None:
    report, path = run_smoke(tmp_path, fail_upkeep=False)
    assert report.passed and all(report.checks.values())
    assert report.stage_outcomes == ["published", "analysis_only", "published"]
    assert report.extraction_requests == 3 and report.reader_requests == 3
    assert json.loads(path.read_text())["mode"] == "mechanism"
    assert not list((tmp_path / "ledger-smoke").glob(".work-*"))  # its store is removed


def test_failed_upkeep_leaves_the_fallback_and_a_content_free_gap(tmp_path: Path) -> None:
    report, _ = run_smoke(tmp_path, fail_upkeep=True)
    assert report.passed
    assert report.stage_outcomes == ["validation_or_publication"] * 3
    assert report.committed_generation == 0 and report.coverage_gap > 0
    assert report.extraction_requests == 3  # no repair call


def test_the_checks_fail_when_the_id_never_reaches_the_ledger(tmp_path: Path) -> None:
    with pytest.raises(ContinuityError) as failed:
        run_smoke(tmp_path, fail_upkeep=False, script="excerpt")
    assert failed.value.code == "ledger_smoke_failed"
    assert "buried_id_in_the_reader_ledger" in failed.value.message
    report = json.loads((tmp_path / "ledger-smoke" / "mechanism.json").read_text())
    assert report["passed"] is False


def test_the_fixture_buries_the_id_away_from_the_result_head() -> None:
    [email] = [t for _, _, t in iter_turns(mechanism_trace()) if isinstance(t, ToolResult)][:1]
    assert BURIED in email.output and BURIED not in email.output[:3_000]
    owner = " ".join(getattr(t, "text", "") for _, _, t in iter_turns(mechanism_trace()))
    assert CORRECTED in owner
