"""Re-scoring never overwrites: `doit score` writes score artifacts beside byte-identical
unit files, and `doit aggregate` chooses the grades (current scorer or original)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import msgspec
import pytest

from continuity.errors import AggregateError, UsageError
from continuity.probes.scoring import Score
from continuity.report.aggregate import aggregate_run
from continuity.report.rescore import rescore_run
from continuity.report.results import Results
from continuity.report.scores import ScoreRecord, score_key, scorer_digest
from continuity.runner.units.build import UnitRecord
from continuity.store import Store

FIXED = "f" * 64  # the "corrected" scorer's version in these tests


def hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*.json"))
    }


def numbers(results: Results) -> dict[str, object]:
    """Everything a report states, except which scorer stated it."""
    data: dict[str, object] = msgspec.to_builtins(results)
    data.pop("scorer")
    return data


@pytest.fixture
def private(run: tuple[Store, Path], tmp_path: Path) -> tuple[Store, Path]:
    """The shared run with a private store (re-scoring writes into it)."""
    store, folder = run
    return Store(shutil.copytree(store.root, tmp_path / "store")), folder


@pytest.fixture
def fixed_scorer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A "corrected" scorer: every answer correct, under a new scorer version."""
    monkeypatch.setattr(
        "continuity.runner.units.grading.score_answer",  # what score_result calls
        lambda expectation, answer, **_: Score("correct", True, "patched"),
    )
    for where in ("continuity.report.scores", "continuity.report.rescore"):
        monkeypatch.setattr(f"{where}.scorer_digest", lambda: FIXED)


def test_an_unchanged_scorer_reproduces_the_original_grades(private: tuple[Store, Path]) -> None:
    store, folder = private
    original, _, _ = aggregate_run(store, folder, scorer="original")
    current, paths, _ = aggregate_run(store, folder)
    assert numbers(current) == numbers(original)
    assert current.scorer is not None and original.scorer is not None
    assert current.scorer.digest == scorer_digest() and original.scorer.digest is None
    changes = current.scorer.changes
    assert set(changes) == set(current.suites)  # keyed by suite, then arm
    cells = [cell for arms in changes.values() for cell in arms.values()]
    assert cells and all(not c.changed for c in cells)
    assert all(c.original_accuracy == c.current_accuracy for c in cells)
    summary = paths["summary"].read_text()
    assert f"Grades: current scorer {scorer_digest()[:16]}" in summary
    assert "Scorer change vs original grades" in summary


def test_score_writes_artifacts_and_leaves_every_unit_byte_identical(
    private: tuple[Store, Path], fixed_scorer: None
) -> None:
    store, folder = private
    before_units = hashes(folder / "units")
    first = rescore_run(store, folder)
    assert hashes(folder / "units") == before_units
    artifacts = sorted((folder / "scores" / FIXED[:16]).glob("*.json"))
    assert first.units == len(artifacts) == len(before_units) and first.written == len(artifacts)
    assert first.scorer == FIXED and first.folder == str(folder / "scores" / FIXED[:16])
    for path in artifacts:
        unit = msgspec.json.decode((folder / "units" / path.name).read_bytes(), type=UnitRecord)
        scores = msgspec.json.decode(path.read_bytes(), type=ScoreRecord)
        assert scores.key == score_key(unit.key, unit.content_digest, FIXED)
        assert scores.unit == unit.key and scores.scorer == FIXED
        assert [s.probe_id for s in scores.probes] == [
            p.probe_id for p in unit.probes if p.status == "valid"
        ]
        assert all(s.correct for s in scores.probes)
        assert store.load_output(scores.key) is not None  # in the store too
    valid = sum(
        1
        for p in (folder / "units").glob("*.json")
        for probe in msgspec.json.decode(p.read_bytes(), type=UnitRecord).probes
        if probe.status == "valid" and not probe.correct
    )
    assert first.probes_changed == valid > 0
    again = rescore_run(store, folder)  # the same scorer: nothing new to write
    assert again.written == 0 and hashes(folder / "units") == before_units


def test_aggregate_uses_the_newest_scorer_and_original_reproduces_the_old_numbers(
    private: tuple[Store, Path], fixed_scorer: None, tmp_path: Path
) -> None:
    store, folder = private
    # Before any re-score, under the scorer the units were graded with.
    before, _, _ = aggregate_run(store, folder, scorer="original")
    rescore_run(store, folder)
    current, paths, _ = aggregate_run(store, folder)
    assert current.scorer is not None and current.scorer.digest == FIXED
    for suite in current.accuracy.values():
        for cell in suite.values():
            assert cell["overall"].mean in (1.0, None)
    changes = current.scorer.changes
    native = changes["original"]["native"]
    assert native.current_accuracy == 1.0
    assert native.original_accuracy == pytest.approx(
        before.accuracy["original"]["native"]["overall"].mean
    )
    assert native.changed and all(c.current == "correct" for c in native.changed)
    summary = paths["summary"].read_text()
    assert "Outcomes changed by the current scorer" in summary and FIXED[:16] in summary
    # --scorer original: exactly the numbers reported before the re-score.
    original, _, _ = aggregate_run(store, folder, scorer="original")
    assert numbers(original) == numbers(before)
    assert json.loads((folder / "results.json").read_text())["scorer"]["scorer"] == "original"
    # Without doit score, the current scorer grades the recorded answers the same way.
    bare = tmp_path / "bare"
    shutil.copytree(folder / "units", bare / "units")
    computed, _, _ = aggregate_run(store, bare)
    assert numbers(computed) == numbers(current) | {"run": "bare"}


def test_a_tampered_score_artifact_is_refused(
    private: tuple[Store, Path], fixed_scorer: None
) -> None:
    store, folder = private
    rescore_run(store, folder)
    target = sorted((folder / "scores" / FIXED[:16]).glob("*.json"))[0]
    record = msgspec.json.decode(target.read_bytes(), type=ScoreRecord)
    forged = msgspec.structs.replace(
        record,
        probes=[
            msgspec.structs.replace(p, correct=False, outcome="fabricated") for p in record.probes
        ],
    )
    target.write_bytes(msgspec.json.encode(forged))  # digest no longer matches
    with pytest.raises(AggregateError) as err:
        aggregate_run(store, folder)
    assert err.value.code == "score_tampered" and err.value.location == str(target)
    from continuity.report.scores import _seal

    target.write_bytes(msgspec.json.encode(_seal(forged)))  # resealed: the store disagrees
    with pytest.raises(AggregateError) as err:
        aggregate_run(store, folder)
    assert err.value.code == "score_tampered"


def test_an_unknown_scorer_is_refused(private: tuple[Store, Path]) -> None:
    store, folder = private
    with pytest.raises(UsageError) as err:
        aggregate_run(store, folder, scorer="newest")
    assert (err.value.code, err.value.location) == ("scorer_unknown", "--scorer")


def test_the_scorer_change_is_split_by_suite(mixed: tuple[Store, Path]) -> None:
    """Two suites in one run: one scorer-change row per suite and arm, each over that
    suite's valid samples only (never pooled across trace families)."""
    store, folder = mixed
    current, paths, _ = aggregate_run(store, folder)
    assert current.scorer is not None
    changes = current.scorer.changes
    assert set(changes) == {"original", "hard"}
    assert set(changes["hard"]) == {"native", "ceiling"}
    for suite, arms in changes.items():
        for arm, cell in arms.items():
            assert cell.n == current.accuracy[suite][arm]["overall"].n
    summary = paths["summary"].read_text()
    assert "| suite | arm | n | original | current |" in summary
