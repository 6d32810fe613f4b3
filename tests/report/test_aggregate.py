"""Aggregation: outputs, verification of unit files, incremental re-aggregation."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import msgspec
import pytest

from continuity.errors import AggregateError
from continuity.report.aggregate import aggregate_run
from continuity.report.html_context import SCRIPT
from continuity.runner.units.build import UnitRecord, seal
from continuity.store import Store


def _no_summaries(directory: str, names: list[str]) -> list[str]:
    """copytree filter: copy the store without its action entries (no cached summaries)."""
    return [n for n in names if n == "actions"] if Path(directory).name == "store" else []


def _units(run: Path) -> list[Path]:
    return sorted((run / "units").rglob("*.json"))


def test_outputs_exist_and_the_html_is_self_contained(
    run: tuple[Store, Path], tmp_path: Path
) -> None:
    shared, folder = run
    # A private store: the shared one may already cache these units' summaries.
    store = Store(shutil.copytree(shared.root, tmp_path / "store", ignore=_no_summaries))
    # The unit files' own grades (the current scorer would need the traces' store entries).
    results, paths, read = aggregate_run(store, folder, scorer="original")
    assert results.units == 6 and read == 6
    assert results.arms == ["native", "cold-rebuild", "continuity-store"]
    assert results.repeats == [1, 2]
    for path in paths.values():
        assert path.is_file() and path.parent == folder
    data = json.loads(paths["results"].read_text())
    assert data["accuracy"]["original"]["native"]["overall"]["n"] == 26
    assert data["suites"] == ["original"] and data["schema"] == "continuity-results-v2"
    page = paths["report"].read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert not re.search(r"<link|<img|\bsrc=|@import|url\(", page, re.I)
    assert page.count("<script") == 1 and SCRIPT in page  # the drill-down's own
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    assert "Paired comparison with native" in paths["summary"].read_text()


def test_reaggregating_reads_only_what_changed(run: tuple[Store, Path], tmp_path: Path) -> None:
    shared, folder = run
    store = Store(shutil.copytree(shared.root, tmp_path / "store"))  # this test writes to it
    aggregate_run(store, folder)
    assert aggregate_run(store, folder)[2] == 0
    path = _units(folder)[0]
    record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
    changed = seal(
        msgspec.structs.replace(
            record,
            probes=[msgspec.structs.replace(p, answer="something else") for p in record.probes],
        )
    )
    # A legitimate change (as `doit score` makes): the file and the store's copy agree.
    data = msgspec.json.encode(changed)
    store.record_action(record.key, kind="unit", output=store.put_blob(data))
    path.write_bytes(data)
    assert aggregate_run(store, folder)[2] == 1


def test_another_run_with_the_same_unit_files_reuses_their_summaries(
    run: tuple[Store, Path], tmp_path: Path
) -> None:
    shared, folder = run
    store = Store(shutil.copytree(shared.root, tmp_path / "store"))
    aggregate_run(store, folder)
    # A second run directory (its own summary index is empty): every unit's summary
    # comes from the per-unit cache, keyed by the file's digest.
    other = tmp_path / "runs" / "other"
    shutil.copytree(folder / "units", other / "units")
    results, _, read = aggregate_run(store, other)
    assert read == 0 and results.units == 6
    assert aggregate_run(store, other)[2] == 0  # and now from its own index


def _reseal_as_other_trace(path: Path) -> None:
    record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
    forged = seal(msgspec.structs.replace(record, trace_id="brightline-return"))
    path.unlink()
    path.with_name(f"r{forged.repeat}-brightline-return-{forged.arm}.json").write_bytes(
        msgspec.json.encode(forged)
    )


@pytest.mark.parametrize(
    "forge",
    [
        # Every probe marked correct, then resealed: the digest matches, the store's
        # copy of this unit does not.
        lambda p: _edit(
            p,
            lambda r: seal(
                msgspec.structs.replace(
                    r,
                    probes=[
                        msgspec.structs.replace(x, correct=True, outcome="correct")
                        for x in r.probes
                    ],
                )
            ),
        ),
        # Probe ids rewritten, then resealed: not the probes the key binds.
        lambda p: _edit(
            p,
            lambda r: seal(
                msgspec.structs.replace(
                    r,
                    probes=[
                        msgspec.structs.replace(x, probe_id=f"x{i}") for i, x in enumerate(r.probes)
                    ],
                )
            ),
        ),
        # Relabelled as another trace (renamed to match), then resealed.
        _reseal_as_other_trace,
    ],
    ids=["resealed-scores", "resealed-probe-ids", "resealed-trace-id"],
)
def test_a_resealed_edit_is_refused(run: tuple[Store, Path], forge: object) -> None:
    store, folder = run
    assert callable(forge)
    forge(_units(folder)[2])
    with pytest.raises(AggregateError) as err:
        aggregate_run(store, folder)
    assert err.value.code == "unit_tampered"
    assert not (folder / "results.json").exists()


def _edit(path: Path, change: object) -> None:
    record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
    assert callable(change)
    path.write_bytes(msgspec.json.encode(change(record)))


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda p: p.write_text("{not a unit"), "unit_malformed"),
        (lambda p: p.write_text(json.dumps({"schema": "continuity-unit-v1"})), "unit_malformed"),
        (
            lambda p: _edit(
                p,
                lambda r: msgspec.structs.replace(
                    r,
                    probes=[
                        msgspec.structs.replace(x, correct=True, outcome="correct")
                        for x in r.probes
                    ],
                ),
            ),
            "unit_tampered",
        ),
        (
            lambda p: _edit(p, lambda r: seal(msgspec.structs.replace(r, repeat=r.repeat + 7))),
            "unit_key_mismatch",
        ),
        (
            lambda p: _edit(p, lambda r: seal(msgspec.structs.replace(r, key="ab" * 32))),
            "unit_key_mismatch",
        ),
        (lambda p: p.rename(p.with_name("r9-" + p.name[3:])), "unit_key_mismatch"),
    ],
    ids=["not-json", "not-a-unit", "tampered", "relabelled-repeat", "foreign-key", "renamed"],
)
def test_bad_unit_files_are_refused(run: tuple[Store, Path], damage: object, code: str) -> None:
    store, folder = run
    target = _units(folder)[2]
    assert callable(damage)
    damage(target)
    with pytest.raises(AggregateError) as err:
        aggregate_run(store, folder)
    assert err.value.code == code
    assert not (folder / "results.json").exists()


def test_a_duplicate_unit_is_refused(run: tuple[Store, Path]) -> None:
    store, folder = run
    chunk = folder / "units" / "chunk-b"
    chunk.mkdir()
    shutil.copy(_units(folder)[0], chunk)
    with pytest.raises(AggregateError) as err:
        aggregate_run(store, folder)
    assert err.value.code == "unit_duplicate"


def test_an_empty_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "units").mkdir()
    with pytest.raises(AggregateError) as err:
        aggregate_run(Store(tmp_path / "store"), tmp_path)
    assert err.value.code == "run_empty"
