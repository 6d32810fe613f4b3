"""The unit worker's and probe child's boundaries: requests on stdin, failures coded, and
unit files written from the store's copy only."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from continuity.errors import CheckpointError, ObjectMissing
from continuity.runner.units import build as units_module
from continuity.runner.units.build import ProbeResult, UnitRecord
from continuity.runner.units.store import materialise
from continuity.runner.units.worker import decode_worker_reply
from continuity.sampling import child as probe_module
from continuity.sampling.worker import ProbeOutcome, ProbeSpec, UnitRequest, UnitWorkerResult
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


def test_a_worker_that_fails_raises_its_typed_error_with_its_code(tmp_path: Path) -> None:
    Store(tmp_path / "store")
    spec = ProbeSpec(0, "where?", ["needle"])  # its checkpoint tree is not in the store
    with pytest.raises(ObjectMissing) as err:
        units_module.run_worker(_request(tmp_path, [spec]), timeout=120)
    assert err.value.code == "object_missing" and "0" * 64 in err.value.location


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
        materialise(Store(tmp_path / "store"), folder, record)
    assert err.value.code == "object_missing"
    assert not (folder / units_module.unit_filename(record)).exists()


def test_a_worker_reply_decodes_into_its_outcomes(tmp_path: Path) -> None:
    specs = [ProbeSpec(0, "where?", []), ProbeSpec(2, "when?", [])]
    outcomes = [ProbeOutcome(0, None, "child_failed: x"), ProbeOutcome(2, None, "child_failed: y")]
    reply = msgspec.json.encode(UnitWorkerResult(worker_pid=1, outcomes=outcomes))
    assert decode_worker_reply(_request(tmp_path, specs), reply) == outcomes


@pytest.mark.parametrize(
    "reply",
    [
        b"",
        b"not json",
        b'{"worker_pid": 1}',
        b'{"worker_pid": 1, "outcomes": [{"index": "0", "evidence": null, "error": null}]}',
        b'{"worker_pid": 1, "outcomes": [["0", null, null]]}',
    ],
)
def test_a_malformed_worker_reply_is_child_failed(tmp_path: Path, reply: bytes) -> None:
    spec = ProbeSpec(0, "where?", [])
    with pytest.raises(CheckpointError) as err:
        decode_worker_reply(_request(tmp_path, [spec]), reply)
    assert err.value.code == "child_failed" and "printed no result" in err.value.message


@pytest.mark.parametrize("indexes", [[], [0], [0, 0], [2, 0], [0, 1], [0, 2, 3]])
def test_a_worker_reply_for_other_probes_is_child_failed(
    tmp_path: Path, indexes: list[int]
) -> None:
    specs = [ProbeSpec(0, "where?", []), ProbeSpec(2, "when?", [])]
    outcomes = [ProbeOutcome(i, None, "child_failed: x") for i in indexes]
    reply = msgspec.json.encode(UnitWorkerResult(worker_pid=1, outcomes=outcomes))
    with pytest.raises(CheckpointError) as err:
        decode_worker_reply(_request(tmp_path, specs), reply)
    assert err.value.code == "child_failed" and "it was asked for [0, 2]" in err.value.message


def test_a_probe_status_outside_the_vocabulary_does_not_decode() -> None:
    result = {
        "probe_id": "p1",
        "index": 0,
        "category": "recall",
        "design_role": None,
        "status": "valid",
        "reasons": [],
        "answer": "",
    }
    assert msgspec.convert(result, ProbeResult).status == "valid"
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({**result, "status": "passed"}, ProbeResult)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({**result, "outcome": "right"}, ProbeResult)


@pytest.mark.parametrize("stdin", [b"", b"{", b"[]", b'{"store_root": 1}'])
def test_a_worker_with_an_invalid_request_says_so_in_one_coded_line(stdin: bytes) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "continuity.sampling.worker"],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert err.startswith("error worker_request_invalid: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and result.stdout == b""
