"""The accuracy gate read from a written results.json."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from continuity.errors import AggregateError, GateFailed
from continuity.report.aggregate import aggregate_run
from continuity.report.threshold import accuracy_findings, check_accuracy
from continuity.store import Store


@pytest.fixture
def results(run: tuple[Store, Path]) -> Path:
    store, run_dir = run
    _, paths, _ = aggregate_run(store, run_dir)
    return paths["results"]


def test_findings_are_each_arms_overall_accuracy_per_suite(results: Path) -> None:
    document = msgspec.json.decode(results.read_bytes())
    findings = accuracy_findings(results)
    assert {(f.suite, f.arm) for f in findings} == {
        ("original", arm) for arm in ("native", "cold-rebuild", "continuity-store")
    }
    for finding in findings:
        cell = document["accuracy"][finding.suite][finding.arm]["overall"]
        assert finding.percent == pytest.approx(100 * cell["mean"]) and finding.samples == cell["n"]


def test_the_gate_passes_at_the_lowest_accuracy_and_fails_just_above(results: Path) -> None:
    lowest = min(f.percent for f in accuracy_findings(results) if f.percent is not None)
    assert len(check_accuracy(results, lowest)) == 3
    with pytest.raises(GateFailed) as failed:
        check_accuracy(results, lowest + 0.01)
    assert failed.value.code == "accuracy_below_threshold"
    assert failed.value.location == "--fail-under"
    assert " in original: " in failed.value.message and "(n=" in failed.value.message


def test_an_arm_without_valid_samples_fails_the_gate(results: Path) -> None:
    document = msgspec.json.decode(results.read_bytes())
    document["accuracy"]["original"]["native"]["overall"]["mean"] = None
    results.write_bytes(msgspec.json.encode(document))
    with pytest.raises(GateFailed) as failed:
        check_accuracy(results, 0)
    assert "native in original: no valid sample" in failed.value.message


@pytest.mark.parametrize("content", [None, b"not json", b'{"accuracy": {}}', b"{}"])
def test_unreadable_or_empty_results_are_refused(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "results.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(AggregateError) as refused:
        check_accuracy(path, 50)
    assert refused.value.code == "results_unreadable"
