"""Slot receipts, their aggregation's refusals, the partial-view counts and validity."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.errors import SpendError
from continuity.spend.receipts import (
    RECEIPT_SCHEMA,
    InFlight,
    PilotCounts,
    ScheduledSlot,
    SlotReceipt,
    aggregate,
    invalid_stop,
    receipt_digest,
    write_receipt,
)

RUN = "run-1"
SCHEDULE = [ScheduledSlot(slot_id=f"s{i}", eligible=i != 5) for i in range(6)]


def receipt(slot: str, terminal: str = "completed", **fields: Any) -> SlotReceipt:
    admitted = terminal in ("completed", "incomplete", "invalid")
    values: dict[str, Any] = {
        "schema": RECEIPT_SCHEMA,
        "run_id": RUN,
        "epoch": "e1",
        "slot_id": slot,
        "terminal": terminal,
        "admitted_requests": 1 if admitted else 0,
        "cost_usd": "0.0125" if admitted else "0",
    }
    if terminal == "invalid":
        values["code"] = "pilot_empty_final_output"
    if terminal == "completed":
        values["answer_sha256"] = "a" * 64
    values.update(fields)
    return SlotReceipt(**values)


def test_a_written_receipt_is_private_synced_and_journaled(tmp_path: Path) -> None:
    folder = tmp_path / "receipts"
    digest = write_receipt(folder, receipt("s0"))
    path = folder / "s0.json"
    assert digest == receipt_digest(path.read_bytes())
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    data = msgspec.json.decode(path.read_bytes())
    assert set(data) <= set(SlotReceipt.__struct_fields__)  # ids, hash, code, numbers
    with pytest.raises(SpendError) as caught:
        write_receipt(folder, receipt("s0", "incomplete"))
    assert caught.value.code == "lookup_receipt_duplicate"
    assert path.read_bytes() == msgspec.json.encode(receipt("s0"))  # never replaced


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"terminal": "completed", "admitted_requests": 0}, "admission"),
        ({"terminal": "unadmitted", "admitted_requests": 2}, "admission"),
        ({"admitted_requests": 11}, "admission"),
        ({"code": "something went wrong at /home/me"}, "fixed tables"),
        ({"terminal": "invalid", "code": None, "answer_sha256": None}, "empty output"),
        ({"cost_usd": "1e3"}, "numbers"),
        ({"output_tokens": -1}, "numbers"),
        ({"answer_sha256": "not a hash"}, "answer hash"),
        ({"slot_id": "../escape"}, "slot_id"),
        ({"schema": "other"}, "schema"),
    ],
)
def test_an_inconsistent_receipt_is_never_written(
    tmp_path: Path, fields: dict[str, Any], why: str
) -> None:
    with pytest.raises(SpendError) as caught:
        write_receipt(tmp_path / "r", receipt("s1", **fields))
    assert caught.value.code == "lookup_receipt_invalid"
    assert why in caught.value.message
    assert not list((tmp_path / "r").glob("*")) if (tmp_path / "r").exists() else True


def written(tmp_path: Path, *receipts: SlotReceipt) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "receipts"
    tmp_path.mkdir(parents=True, exist_ok=True)
    journal = {r.slot_id: write_receipt(folder, r) for r in receipts}
    return folder, journal


def test_a_partial_view_counts_visited_slots_only(tmp_path: Path) -> None:
    folder, journal = written(
        tmp_path,
        receipt("s0"),
        receipt("s1", "invalid", cost_usd="0.01"),
        receipt("s2", "skipped"),
    )
    # s3 is in flight (admitted), s4 and s5 were never reached
    counts, receipts = aggregate(
        folder,
        SCHEDULE,
        visited=4,
        journal=journal,
        run_id=RUN,
        in_flight=InFlight(slot_id="s3", admitted=True),
    )
    assert [r.slot_id for r in receipts] == ["s0", "s1", "s2"]
    assert counts == PilotCounts(
        planned=6,
        eligible=5,
        visited=4,
        truncated=2,
        skipped=1,
        unadmitted=0,
        admitted=3,
        completed=1,
        incomplete=1,
        invalid=1,
        missing=0,
    )
    before, _ = aggregate(
        folder,
        SCHEDULE,
        visited=4,
        journal=journal,
        run_id=RUN,
        in_flight=InFlight(slot_id="s3", admitted=False),
    )
    assert (before.unadmitted, before.incomplete, before.admitted) == (1, 0, 2)
    lost, _ = aggregate(folder, SCHEDULE, visited=4, journal=journal, run_id=RUN)
    assert (lost.missing, lost.admitted) == (1, 2)  # no in-flight slot: s3 is missing


def test_a_changed_receipt_is_refused(tmp_path: Path) -> None:
    folder, journal = written(tmp_path, receipt("s0"))
    path = folder / "s0.json"
    data = path.read_bytes().replace(b"0.0125", b"0.0001")
    os.chmod(path, 0o600)
    path.unlink()
    path.write_bytes(data)
    path.chmod(0o600)
    with pytest.raises(SpendError) as caught:
        aggregate(folder, SCHEDULE, visited=1, journal=journal, run_id=RUN)
    assert caught.value.code == "lookup_receipt_changed"
    assert caught.value.outcome == "integrity_stop"


def test_unplanned_unvisited_duplicate_and_foreign_receipts_are_refused(tmp_path: Path) -> None:
    folder, journal = written(tmp_path, receipt("s0"), receipt("x9"))
    with pytest.raises(SpendError) as caught:
        aggregate(folder, SCHEDULE, visited=6, journal=journal, run_id=RUN)
    assert caught.value.code == "lookup_receipt_unplanned"

    folder, journal = written(tmp_path / "b", receipt("s0"), receipt("s3"))
    with pytest.raises(SpendError) as caught:
        aggregate(folder, SCHEDULE, visited=2, journal=journal, run_id=RUN)
    assert caught.value.code == "lookup_receipt_unvisited"

    folder, journal = written(tmp_path / "c", receipt("s0"))
    copy = folder / "s0-copy.json"
    copy.write_bytes((folder / "s0.json").read_bytes())
    copy.chmod(0o600)
    with pytest.raises(SpendError) as caught:
        aggregate(folder, SCHEDULE, visited=1, journal=journal, run_id=RUN)
    assert caught.value.code == "lookup_receipt_duplicate"

    folder, journal = written(tmp_path / "d", receipt("s0", run_id="run-2"))
    with pytest.raises(SpendError) as caught:
        aggregate(folder, SCHEDULE, visited=1, journal=journal, run_id=RUN)
    assert caught.value.code == "lookup_receipt_invalid"


def test_an_alias_or_a_link_is_not_a_receipt(tmp_path: Path) -> None:
    folder, journal = written(tmp_path, receipt("s0"))
    os.link(folder / "s0.json", tmp_path / "alias.json")  # two links: an alias
    with pytest.raises(SpendError) as caught:
        aggregate(folder, SCHEDULE, visited=1, journal=journal, run_id=RUN)
    assert caught.value.code == "lookup_receipt_invalid"
    (tmp_path / "alias.json").unlink()
    (folder / "s1.json").symlink_to(folder / "s0.json")
    with pytest.raises(SpendError) as caught:
        aggregate(folder, SCHEDULE, visited=2, journal=journal, run_id=RUN)
    assert caught.value.code == "lookup_receipt_invalid"


def counts(admitted: int, invalid: int) -> PilotCounts:
    return PilotCounts(
        planned=admitted,
        eligible=admitted,
        visited=admitted,
        truncated=0,
        skipped=0,
        unadmitted=0,
        admitted=admitted,
        completed=admitted - invalid,
        incomplete=0,
        invalid=invalid,
        missing=0,
    )


def test_validity_stops_strictly_above_ten_percent() -> None:
    assert invalid_stop(counts(10, 1)) is None  # exactly 10 %: goes on
    assert invalid_stop(counts(10, 2)) == "lookup_invalid_slots"
    assert invalid_stop(counts(9, 1)) == "lookup_invalid_slots"  # 11.1 %
    assert invalid_stop(counts(0, 0)) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10_000), st.integers(0, 10_000))
def test_validity_matches_exact_arithmetic(admitted: int, invalid: int) -> None:
    invalid = min(invalid, admitted)
    stopped = invalid_stop(counts(admitted, invalid)) is not None
    assert stopped == (invalid / admitted > 0.1 and invalid * 10 != admitted)
