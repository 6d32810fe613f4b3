"""The unit worker's and probe child's boundaries: requests on stdin, failures coded, and
unit files written from the store's copy only."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from continuity.errors import CheckpointError, ObjectMissing
from continuity.probe import child as probe_module
from continuity.probe.worker import ProbeSpec, UnitRequest
from continuity.runner import units as units_module
from continuity.runner.units import UnitRecord
from continuity.store import Store


def _request(tmp_path: Path, probes: list[ProbeSpec]) -> UnitRequest:
    return UnitRequest(
        store_root=str(tmp_path / "store"),
        tree="0" * 64,
        workspace=str(tmp_path / "workspace"),
        arm="native",
        probes=probes,
    )


def test_the_worker_reads_its_request_on_stdin(tmp_path: Path) -> None:
    Store(tmp_path / "store")
    assert units_module.run_worker(_request(tmp_path, []), timeout=120) == []


def test_a_worker_that_fails_is_child_failed(tmp_path: Path) -> None:
    Store(tmp_path / "store")
    spec = ProbeSpec(0, "where?", ["needle"])  # its checkpoint tree is not in the store
    with pytest.raises(CheckpointError) as err:
        units_module.run_worker(_request(tmp_path, [spec]), timeout=120)
    assert err.value.code == "child_failed" and "exited 1" in err.value.message


def test_a_worker_past_its_timeout_is_killed_and_child_failed(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError) as err:
        units_module.run_worker(_request(tmp_path, []), timeout=0.001)
    assert err.value.code == "child_failed" and "timeout" in err.value.message


def test_a_probe_request_that_does_not_decode_is_probe_request_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{not json")))
    assert probe_module.main(["--workspace", str(tmp_path)]) == 3
    assert capsys.readouterr().out.startswith("error probe_request_invalid: ")


def test_a_unit_the_store_lost_is_never_materialised_from_memory(tmp_path: Path) -> None:
    record = UnitRecord(
        key="0" * 64,
        repeat=1,
        family="original",
        trace_id="harbor-market-stall",
        trace_key="1" * 64,
        arm="native",
        checkpoint="2" * 64,
        probe_ids=[],
        probes=[],
        judge=[],
    )
    folder = tmp_path / "units"
    with pytest.raises(ObjectMissing) as err:
        units_module._materialise(Store(tmp_path / "store"), folder, record)
    assert err.value.code == "object_missing"
    assert not (folder / units_module.unit_filename(record)).exists()
