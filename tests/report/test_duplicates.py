"""Duplicate lookup slots (seed 000; issue 10, item 13): two chunk folders each holding a
unit file for the same repeat x trace x arm are aggregated, every slot they share is a
duplicate with its occurrence count, and no occurrence enters accuracy or spend (never
first-wins or last-write-wins). Recall-only duplicates are still refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from continuity.errors import AggregateError
from continuity.messages import Usage
from continuity.report.aggregate import aggregate_run
from continuity.report.results import DuplicateOccurrence, Results
from continuity.runner.units.build import UnitRecord, build_units
from continuity.runner.units.execution import Execution
from continuity.store import Store
from continuity.traces.suites import build_suite
from tests.lookup.test_lookup_run import frozen_run

# One worker runs this module: its module fixture is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("duplicates")

TRACE = "brightline-return"
NATIVE = f"r1-{TRACE}-native-lookup.json"
COLD = f"r1-{TRACE}-continuity-pack-cold.json"


def _lookup_units(store: Store, run: Path, probes: int, binding: str = "default") -> Path:
    """A real offline lookup run of brightline-return (both lookup arms); its units dir."""
    _, folder, _ = build_units(
        store,
        "original",
        traces=TRACE,
        probe_limit=probes,
        run_dir=run,
        execution=Execution(lookup=frozen_run(binding=binding)),
    )
    return folder


def _chunked(run: Path, chunks: dict[str, list[Path]]) -> Path:
    """A run whose units dir holds the given unit files, one subfolder per chunk."""
    for name, files in chunks.items():
        (run / "units" / name).mkdir(parents=True)
        for file in files:
            shutil.copy(file, run / "units" / name / file.name)
    return run


def _record(path: Path) -> UnitRecord:
    return msgspec.json.decode(path.read_bytes(), type=UnitRecord)


def _spent(record: UnitRecord, probe_ids: set[str]) -> Usage:
    total = Usage()
    for probe in record.probes:
        if probe.probe_id in probe_ids:
            total = total + probe.usage + probe.compaction_usage
    return total


@pytest.fixture(scope="module")
def observations(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path, Path]:
    """One store; a two-probe run (default reader) and a one-probe re-run of the same
    trace under the alternate reader binding: a different observation of slot p01."""
    root = tmp_path_factory.mktemp("duplicates")
    store = Store(root / "store")
    return (
        store,
        _lookup_units(store, root / "first", 2),
        _lookup_units(store, root / "again", 1, binding="alternate"),
    )


def test_an_identical_copy_in_a_second_chunk_is_two_duplicate_slots(
    observations: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, first, _ = observations
    single = _chunked(tmp_path / "single" / "run", {"a": [first / NATIVE, first / COLD]})
    baseline, _, _ = aggregate_run(store, single)
    assert baseline.lookup["native-lookup"].exact.n == 2
    assert baseline.accuracy["original"]["native-lookup"]["overall"].n == 2
    assert baseline.spend["native-lookup"].input > 0

    run = _chunked(
        tmp_path / "copied" / "run", {"a": [first / NATIVE, first / COLD], "b": [first / NATIVE]}
    )
    results, paths, _ = aggregate_run(store, run)  # no unit_duplicate
    assert results.units == 3
    cell = results.lookup["native-lookup"]
    assert cell.duplicate == 2 and cell.slots_present == 0 and cell.missing == 0
    assert [(d.probe_id, d.occurrences) for d in cell.duplicate_occurrences] == [
        ("p01", 2),
        ("p02", 2),
    ]
    assert cell.exact.n == 0 and cell.exact_with_failures.n == 0
    assert cell.calls == 0 and cell.mean_latency_s is None
    # Neither copy is scored or costed anywhere: not twice, not once.
    native = results.accuracy["original"]["native-lookup"]["overall"]
    assert native.n == 0 and native.mean is None
    assert sum(results.outcomes["original"]["native-lookup"].values()) == 0
    spend = results.spend["native-lookup"]
    assert (spend.input, spend.output, spend.live_turns) == (0, 0, 0)
    # The other arm is untouched.
    assert (
        results.accuracy["original"]["continuity-pack-cold"]
        == (baseline.accuracy["original"]["continuity-pack-cold"])
    )
    assert results.spend["continuity-pack-cold"] == baseline.spend["continuity-pack-cold"]
    assert results.lookup["continuity-pack-cold"] == baseline.lookup["continuity-pack-cold"]
    # Shown explicitly: the coverage table's duplicate column and the duplicate list.
    summary = paths["summary"].read_text()
    assert "Lookup duplicate slots" in summary
    assert f"| native-lookup | r1 | {TRACE} | p01 | 2 |" in summary


def test_a_different_observation_excludes_only_the_shared_slot(
    observations: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, first, again = observations
    run = _chunked(
        tmp_path / "x" / "run", {"a": [first / NATIVE, first / COLD], "b": [again / NATIVE]}
    )
    results, _, _ = aggregate_run(store, run)
    cell = results.lookup["native-lookup"]
    # p01 was observed by both readers: ambiguous. p02 only by the first: scored.
    assert cell.duplicate == 1 and cell.slots_present == 1
    assert cell.duplicate_occurrences == [
        DuplicateOccurrence(repeat=1, trace_id=TRACE, probe_id="p01", occurrences=2)
    ]
    assert cell.exact.n == 1
    assert results.accuracy["original"]["native-lookup"]["overall"].n == 1
    assert sum(results.outcomes["original"]["native-lookup"].values()) == 1
    # The arm's spend is p02's alone: neither occurrence of p01 counts.
    p02 = _spent(_record(first / NATIVE), {"p02"})
    assert p02.input > 0
    spend = results.spend["native-lookup"]
    assert (spend.input, spend.cache_read, spend.output) == (
        p02.input,
        p02.cache_read,
        p02.output,
    )
    assert spend.live_turns == 1
    # Deterministic whatever the order of the files: the same files in swapped chunk
    # folders give byte-identical results.
    swapped = _chunked(
        tmp_path / "y" / "run", {"b": [first / NATIVE, first / COLD], "a": [again / NATIVE]}
    )
    aggregate_run(store, swapped)
    assert (swapped / "results.json").read_bytes() == (run / "results.json").read_bytes()
    assert (swapped / "summary.md").read_bytes() == (run / "summary.md").read_bytes()


def test_the_summary_cache_still_serves_duplicates(
    observations: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    _, first, again = observations
    store = _traces_only(tmp_path / "store")  # no summary cached yet
    run = _chunked(tmp_path / "run", {"a": [first / NATIVE, first / COLD]})
    assert aggregate_run(store, run)[2] == 2
    # A second chunk appears: only its new file is read; a copy of a file already
    # summarised (the same bytes) is served from the cache.
    _chunked(run, {"b": [again / NATIVE], "c": [first / COLD]})
    results, _, read = aggregate_run(store, run)
    assert read == 1
    assert results.lookup["continuity-pack-cold"].duplicate == 2
    assert results.lookup["native-lookup"].duplicate == 1
    again_results, _, read = aggregate_run(store, run)
    assert read == 0 and _plain(again_results) == _plain(results)
    # The cached answer is the answer of a full verification (the identical copy is
    # summarised once).
    fresh, _, read = aggregate_run(_traces_only(tmp_path / "empty"), run)
    assert read == 3 and _plain(fresh) == _plain(results)


def _traces_only(root: Path) -> Store:
    """A store holding the suite's traces (the current scorer reads them) and nothing else."""
    store = Store(root)
    build_suite(store, "original", out_dir=root / "out")
    return store


def _plain(results: Results) -> object:
    return msgspec.to_builtins(results)


def test_recall_only_duplicates_are_still_refused(
    observations: tuple[Store, Path, Path], tmp_path: Path
) -> None:
    store, first, _ = observations
    _, folder, _ = build_units(
        store,
        "original",
        traces=TRACE,
        arms="continuity-pack-cold",
        probe_limit=1,
        run_dir=tmp_path / "recall",
    )
    recall = folder / COLD
    assert _record(recall).binding is None
    run = _chunked(tmp_path / "twice", {"a": [recall], "b": [recall]})
    with pytest.raises(AggregateError) as caught:
        aggregate_run(store, run)
    assert caught.value.code == "unit_duplicate"
    # A recall-only unit beside a lookup unit for the same repeat, trace and arm is no
    # lookup duplicate either, in whichever order the files are met.
    orders = ({"a": [recall], "b": [first / COLD]}, {"a": [first / COLD], "b": [recall]})
    for i, chunks in enumerate(orders):
        mixed = _chunked(tmp_path / f"mixed-{i}", chunks)
        with pytest.raises(AggregateError) as caught:
            aggregate_run(store, mixed)
        assert caught.value.code == "unit_duplicate"
