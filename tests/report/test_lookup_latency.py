"""Lookup latency lives beside the unit, not in it: the report reads it from the probes'
`ProcessReceipt`s in the unit's action entry, and a unit sealed while the witness still
held a wall time (``elapsed_seconds``) still decodes and verifies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.digest import value_digest
from continuity.errors import ContinuityError
from continuity.report.collect import load_summaries
from continuity.report.lookup import lookup_table
from continuity.report.results import LookupArm
from continuity.report.verify import decode_unit
from continuity.runner.units.build import UnitRecord, build_units
from continuity.runner.units.execution import Execution
from continuity.sampling.receipts import ProcessReceipt
from continuity.store import Store
from tests.lookup.test_lookup_run import frozen_run


@pytest.fixture(scope="module")
def lookup_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path]:
    root = tmp_path_factory.mktemp("latency")
    store = Store(root / "store")
    run = root / "out" / "runs" / "lookup"
    build_units(
        store,
        "original",
        traces="brightline-return",
        probe_limit=2,
        run_dir=run,
        execution=Execution(lookup=frozen_run()),
    )
    return store, run


def _table(store: Store, run: Path) -> dict[str, LookupArm]:
    summaries, _ = load_summaries(store, run / "units")
    return lookup_table(((s.repeat, s.trace_id, s.arm, s.lookup_rows) for s in summaries), None)


def test_latency_comes_from_the_process_receipts_beside_the_unit(
    lookup_run: tuple[Store, Path],
) -> None:
    store, run = lookup_run
    expected: dict[str, float] = {}
    for path in sorted((run / "units").glob("*.json")):
        record = msgspec.json.decode(path.read_bytes(), type=UnitRecord)
        for probe in record.probes:
            assert probe.evidence is not None and probe.evidence.lookup is not None
            assert b"elapsed" not in msgspec.json.encode(probe.evidence.lookup)
        entry = store.get_action(record.key)
        assert entry is not None
        receipts = msgspec.convert(entry.meta["processes"], list[ProcessReceipt])
        assert [r.probe_index for r in receipts] == [p.index for p in record.probes]
        expected[record.arm] = sum(r.elapsed_seconds for r in receipts) / len(receipts)
    table = _table(store, run)
    assert {arm: cell.mean_latency_s for arm, cell in table.items()} == pytest.approx(expected)
    assert all(cell.latency_unknown == 0 for cell in table.values())
    # The receipts change (another build of the same units): the cached summaries are
    # reused, and the latency follows the receipts, never the cache.
    for path in sorted((run / "units").glob("*.json")):
        key = msgspec.json.decode(path.read_bytes(), type=UnitRecord).key
        entry = store.get_action(key)
        assert entry is not None
        slower = [
            msgspec.structs.replace(r, elapsed_seconds=r.elapsed_seconds + 10.0)
            for r in msgspec.convert(entry.meta["processes"], list[ProcessReceipt])
        ]
        meta = {**entry.meta, "processes": msgspec.to_builtins(slower)}
        store.record_action(key, kind="unit", output=entry.output, inputs=entry.inputs, meta=meta)
    _, read = load_summaries(store, run / "units")
    assert read == 0  # every summary came from the cache
    table = _table(store, run)
    assert {a: c.mean_latency_s for a, c in table.items()} == pytest.approx(
        {arm: mean + 10.0 for arm, mean in expected.items()}
    )


def test_a_unit_without_receipts_has_unknown_latency_never_zero(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    run = tmp_path / "out" / "runs" / "lookup"
    records, _, _ = build_units(
        store,
        "original",
        traces="brightline-return",
        arms="native-lookup",
        probe_limit=2,
        run_dir=run,
        execution=Execution(lookup=frozen_run()),
    )
    (record,) = records
    entry = store.get_action(record.key)
    assert entry is not None
    meta = {k: v for k, v in entry.meta.items() if k != "processes"}
    store.record_action(
        record.key, kind="unit", output=entry.output, inputs=entry.inputs, meta=meta
    )
    cell = _table(store, run)["native-lookup"]
    assert cell.mean_latency_s is None and cell.latency_unknown == 2
    assert cell.mean_calls is not None  # the rest of the report is unaffected


def _reseal(raw: dict[str, Any]) -> bytes:
    """A unit file as an earlier schema sealed it: its digest over its own JSON."""
    raw["content_digest"] = ""
    raw["content_digest"] = value_digest(("continuity-unit", msgspec.json.encode(raw)))
    return msgspec.json.format(msgspec.json.encode(raw)) + b"\n"


def test_a_unit_sealed_with_witness_times_still_decodes_and_verifies(
    lookup_run: tuple[Store, Path], tmp_path: Path
) -> None:
    _, run = lookup_run
    path = next(iter(sorted((run / "units").glob("*.json"))))
    current = decode_unit(path, path.read_bytes())
    raw = msgspec.json.decode(path.read_bytes())
    for probe in raw["probes"]:
        probe["evidence"]["lookup"]["elapsed_seconds"] = 1.25
    old = tmp_path / path.name
    old.write_bytes(_reseal(raw))
    record = decode_unit(old, old.read_bytes())
    assert record.content_digest != current.content_digest
    assert msgspec.structs.replace(record, content_digest="") == msgspec.structs.replace(
        current, content_digest=""
    )
    # An edit is still refused: the file's own bytes no longer give its digest.
    old.write_bytes(old.read_bytes().replace(b"1.25", b"1.5", 1))
    with pytest.raises(ContinuityError) as refused:
        decode_unit(old, old.read_bytes())
    assert refused.value.code == "unit_tampered"
