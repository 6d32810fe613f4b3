"""The aggregate stamp: which changes make a run's reports stale, read without units."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec
import pytest

from continuity.errors import PricingError
from continuity.plan import pricing
from continuity.plan.pricing import default_catalog_path, load_catalog
from continuity.report import freshness
from continuity.report.aggregate import aggregate_run
from continuity.report.freshness import (
    STAMP_NAME,
    aggregate_key,
    current_stamp,
    forget_stamp,
    read_stamp,
    write_stamp,
)
from continuity.report.scores import SCORER_DATA, SCORER_MODULES
from continuity.store import Store

# The store a key names (the aggregate below reads the shared run's real store; the key
# only has to name one store consistently).
STORE_ROOT = Path("/srv/continuity-store")


@pytest.fixture
def stamped(run: tuple[Store, Path], tmp_path: Path) -> tuple[Path, Path]:
    """An aggregated copy of the shared run, stamped as `doit aggregate` stamps it, and
    a private pricing catalog."""
    store, run_dir = run
    catalog = Path(shutil.copy(default_catalog_path(), tmp_path / "catalog.json"))
    key = aggregate_key(run_dir, "current", catalog, STORE_ROOT)
    results, paths, _ = aggregate_run(store, run_dir, load_catalog(catalog), "current")
    write_stamp(run_dir, key, results.units, paths)
    return run_dir, catalog


def _fresh(run_dir: Path, catalog: Path, scorer: str = "current") -> bool:
    return current_stamp(run_dir, aggregate_key(run_dir, scorer, catalog, STORE_ROOT)) is not None


def test_a_stamped_run_is_current_until_its_unit_set_changes(stamped: tuple[Path, Path]) -> None:
    run_dir, catalog = stamped
    stamp = read_stamp(run_dir)
    assert (
        stamp is not None
        and stamp.units == 6
        and set(stamp.outputs)
        == {
            "results",
            "summary",
            "report",
        }
    )
    assert _fresh(run_dir, catalog)
    units = sorted((run_dir / "units").glob("*.json"))
    # Changed: the same bytes written again by atomic replace (as units are written).
    data = units[0].read_bytes()
    replacement = units[0].with_suffix(".tmp")
    replacement.write_bytes(data)
    os.replace(replacement, units[0])
    assert not _fresh(run_dir, catalog)


def test_a_new_or_removed_unit_makes_it_stale(stamped: tuple[Path, Path]) -> None:
    run_dir, catalog = stamped
    extra = run_dir / "units" / "nested" / "r9-extra.json"
    extra.parent.mkdir()
    extra.write_bytes(b"{}")
    assert not _fresh(run_dir, catalog)
    extra.unlink()
    assert _fresh(run_dir, catalog)  # the listing is back to what was stamped
    next(iter(sorted((run_dir / "units").glob("*.json")))).unlink()
    assert not _fresh(run_dir, catalog)


def test_the_scorer_pricing_and_lookup_slots_are_in_the_key(stamped: tuple[Path, Path]) -> None:
    run_dir, catalog = stamped
    assert not _fresh(run_dir, catalog, scorer="original")
    other = catalog.with_name("other.json")
    shutil.copy(catalog, other)
    assert not _fresh(run_dir, other)  # another catalog file, even with the same bytes
    document = msgspec.json.decode(catalog.read_bytes())
    document["note"] += " (edited)"
    catalog.write_bytes(msgspec.json.encode(document))
    assert not _fresh(run_dir, catalog)
    before = aggregate_key(run_dir, "current", other, STORE_ROOT)
    (run_dir / "lookup-slots.json").write_bytes(b'{"slots": []}')
    assert aggregate_key(run_dir, "current", other, STORE_ROOT) != before


def test_another_store_is_another_key(stamped: tuple[Path, Path]) -> None:
    """The drill-down quotes the store's traces: reading another store re-renders."""
    run_dir, catalog = stamped
    assert _fresh(run_dir, catalog)
    other = aggregate_key(run_dir, "current", catalog, STORE_ROOT.with_name("other-store"))
    assert current_stamp(run_dir, other) is None


def test_the_run_manifest_is_in_the_key_and_the_outputs_are_not(
    stamped: tuple[Path, Path],
) -> None:
    """run.json (the report header's source) is an input; the aggregate's own outputs and
    stamp are not, or writing them would make every run stale."""
    run_dir, catalog = stamped
    assert {p.name for p in run_dir.iterdir() if p.suffix == ".json"} == {
        "results.json",
        STAMP_NAME,
    }
    manifest = run_dir / "run.json"
    manifest.write_bytes(b"{}")
    assert not _fresh(run_dir, catalog)
    manifest.unlink()
    assert _fresh(run_dir, catalog)


def test_the_code_and_the_price_source_are_in_the_key(
    stamped: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, catalog = stamped
    assert _fresh(run_dir, catalog)
    monkeypatch.setattr(freshness, "AGGREGATE_CODE", ("continuity.report",))
    assert not _fresh(run_dir, catalog)
    monkeypatch.undo()
    monkeypatch.setattr(pricing, "library_version", lambda: "0.0.0-other")
    assert not _fresh(run_dir, catalog)


def test_an_unreadable_catalog_is_refused_with_its_code(stamped: tuple[Path, Path]) -> None:
    run_dir, catalog = stamped
    with pytest.raises(PricingError) as refused:
        aggregate_key(run_dir, "current", catalog.with_name("none.json"), STORE_ROOT)
    assert refused.value.code == "pricing_invalid"


def test_the_key_covers_every_scorer_module_and_its_data() -> None:
    covered = set(freshness.AGGREGATE_CODE)
    for module in SCORER_MODULES:
        assert any(module == c or module.startswith(c + ".") for c in covered), module
    assert set(SCORER_DATA) == set(freshness.SCORER_DATA_PACKAGES)


@pytest.mark.parametrize("output", ["report.html", "results.json", "summary.md"])
def test_a_deleted_or_altered_output_makes_it_stale(
    stamped: tuple[Path, Path], output: str
) -> None:
    run_dir, catalog = stamped
    path = run_dir / output
    data = path.read_bytes()
    path.write_bytes(data[:-1] + (b"X" if data[-1:] != b"X" else b"Y"))  # same size
    assert not _fresh(run_dir, catalog)
    path.write_bytes(data)
    assert _fresh(run_dir, catalog)
    path.unlink()
    assert not _fresh(run_dir, catalog)


def test_a_missing_foreign_or_forgotten_stamp_is_not_current(stamped: tuple[Path, Path]) -> None:
    run_dir, catalog = stamped
    stamp_path = run_dir / STAMP_NAME
    good = stamp_path.read_bytes()
    stamp_path.write_bytes(good.replace(b"continuity-aggregate-stamp-v1", b"other-stamp-v9"))
    assert read_stamp(run_dir) is None and not _fresh(run_dir, catalog)
    stamp_path.write_bytes(b"not json")
    assert not _fresh(run_dir, catalog)
    stamp_path.write_bytes(good)
    assert _fresh(run_dir, catalog)
    forget_stamp(run_dir)
    assert not stamp_path.exists() and not _fresh(run_dir, catalog)
    forget_stamp(run_dir)  # nothing to forget: no error


def test_the_key_reads_no_unit_file(stamped: tuple[Path, Path], opened_files: list[str]) -> None:
    run_dir, catalog = stamped
    assert _fresh(run_dir, catalog)
    assert not [p for p in opened_files if "/units/" in p]


def test_write_stamp_refuses_a_missing_output(stamped: tuple[Path, Path]) -> None:
    run_dir, _ = stamped
    with pytest.raises(FileNotFoundError):
        write_stamp(run_dir, "k", 1, {"report": run_dir / "none.html"})
