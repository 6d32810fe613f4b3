"""Ledger preparation end to end: three stages in three fresh child processes over a
real replayed checkpoint, degradations that continue, integrity failures that
invalidate, a lost acknowledgement that keeps its reservation."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.arms import ARMS, LEDGER_ARM, replay_config_for
from continuity.harness.checkpoints import CheckpointResult, build_checkpoint, fork
from continuity.harness.session import DurableSession
from continuity.harness.workspace import Workspace
from continuity.memory.ledger_store import LedgerStore
from continuity.plan.pricing import load_catalog
from continuity.preparation.prepare import Prepared, prepare_checkpoint
from continuity.preparation.receipts import Fault
from continuity.report.upkeep import stage_charge, upkeep_row
from continuity.runner.ledger_run import ledger_run
from continuity.store import Store, utc_now
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace

A, R = "openai-codex:gpt-6.1-sol", "openai-codex:gpt-6-luna"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, CheckpointResult]:
    root = tmp_path_factory.mktemp("prepare")
    store = Store(root / "store")
    item = build_suite(store, "original", out_dir=root / "out").items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    checkpoint = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(ARMS[LEDGER_ARM]),
    )
    return store, checkpoint


def _prepare(
    base: tuple[Store, CheckpointResult],
    faults: dict[int, Fault] | None = None,
    **change: Any,
) -> Prepared:
    store, checkpoint = base
    binding = ledger_run(faults=faults).binding
    fields: dict[str, Any] = {
        "arm": LEDGER_ARM,
        "binding": binding,
        "repeat": change.pop("repeat", 1),
        "enforcement": "scripted_cap",
        "timeout": 60.0,
    }
    return prepare_checkpoint(store, checkpoint, **{**fields, **change})


def _journal(store: Store, prepared: Prepared) -> list[tuple[str, str, str | None]]:
    assert prepared.checkpoint is not None
    with fork(store, prepared.key) as root:
        ledger = LedgerStore.open(Workspace(root).ledger_path, owner=None, readonly=True)
        try:
            return [(op.kind, op.state, op.outcome) for op in ledger.operations()]
        finally:
            ledger.close()


def test_three_stages_answer_a_r_a_in_three_fresh_processes(
    base: tuple[Store, CheckpointResult],
) -> None:
    store, _ = base
    prepared = _prepare(base)
    receipt = prepared.receipt
    assert receipt.valid, receipt.integrity
    assert [(s.from_model, s.to_model) for s in receipt.stages] == [(R, A), (A, R), (R, A)]
    assert all(s.operations == ["model_change"] and s.fresh_process for s in receipt.stages)
    processes = store.get_action(prepared.key).meta["processes"]  # type: ignore[union-attr]
    pids = {p["child_pid"] for p in processes}
    assert len(pids) == 3 and processes[0]["parent_pid"] not in pids
    first, second, third = (s.upkeep for s in receipt.stages)
    assert (first.kind, first.outcome) == ("bootstrap", "published")
    assert (second.kind, second.outcome) == ("incremental", "analysis_only")  # the empty delta
    assert second.generation_after == second.generation_before
    assert (third.kind, third.outcome) == ("incremental", "published")
    assert receipt.final == third.generation_after
    assert _journal(store, prepared) == [
        ("bootstrap", "settled", "published"),
        ("incremental", "settled", "analysis_only"),
        ("incremental", "settled", "published"),
    ]
    again = _prepare(base)
    assert (again.status, again.receipt) == ("cached", receipt)  # never prepared twice


def test_a_degraded_stage_continues_the_preparation(base: tuple[Store, CheckpointResult]) -> None:
    prepared = _prepare(base, {1: "invalid_json"})
    receipt = prepared.receipt
    assert receipt.valid and receipt.degradations == ["p1:validation_or_publication"]
    assert [s.upkeep.outcome for s in receipt.stages] == [
        "validation_or_publication",
        "analysis_only",
        "published",
    ]
    # The failed bootstrap consumed its admission and its offer: the gap is content-free.
    coverage = receipt.stages[0].upkeep.coverage
    assert coverage is not None and coverage.gap == receipt.stages[0].upkeep.offer.spans  # type: ignore[union-attr]


def test_failed_output_everywhere_leaves_the_empty_ledger_and_no_repair(
    base: tuple[Store, CheckpointResult],
) -> None:
    store, _ = base
    prepared = _prepare(base, {1: "invalid_json", 2: "invalid_json", 3: "invalid_json"})
    receipt = prepared.receipt
    assert receipt.valid and receipt.final is not None and receipt.final.number == 0
    assert len(_journal(store, prepared)) == 3  # three extractions, never a repair call


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [
        ("empty_output", "empty_output"),
        ("output_overrun", "output_overrun"),
        ("input_overrun", "input_overrun"),
        ("stream_overrun", "output_aborted"),
        ("unavailable", "unavailable"),
    ],
)
def test_every_provider_degradation_is_allowlisted(
    base: tuple[Store, CheckpointResult], fault: Fault, outcome: str
) -> None:
    receipt = _prepare(base, {3: fault}).receipt
    assert receipt.valid, receipt.integrity
    assert receipt.degradations == [f"p3:{outcome}"]


def test_a_lost_acknowledgement_keeps_its_reservation_and_invalidates(
    base: tuple[Store, CheckpointResult],
) -> None:
    store, _ = base
    prepared = _prepare(base, {1: "hang"}, timeout=4.0)
    receipt = prepared.receipt
    assert prepared.checkpoint is None and not receipt.valid
    assert "p1:upkeep_uncertain" in receipt.integrity and "p1:child_failed" in receipt.integrity
    [stage] = receipt.stages  # nothing more is paid for an invalid treatment
    assert (stage.upkeep.state, stage.upkeep.outcome, stage.upkeep.usage) == (
        "dispatched",
        "uncertain",
        None,
    )
    charge = stage_charge(load_catalog(), R, upkeep_row_for(prepared).stages[0], priced=True)
    assert (charge.kind, charge.usage.input, charge.usage.output) == (
        "conservative",
        128_000,
        4_096,
    )
    assert charge.cost_usd is not None and charge.cost_usd > 0
    again = _prepare(base, {1: "hang"}, timeout=4.0)
    assert again.status == "cached" and again.receipt == receipt  # never re-dispatched
    with pytest.raises(Exception) as missing, fork(store, prepared.key):
        pass
    assert "checkpoint_missing" in str(missing.value)


def upkeep_row_for(prepared: Prepared) -> Any:
    from continuity.runner.units.record import UnitRecord

    record = UnitRecord(
        key="k",
        repeat=1,
        family="original",
        trace_id="t",
        trace_key="tk",
        arm=LEDGER_ARM,
        checkpoint=prepared.key,
        probe_ids=[],
        probes=[],
        judge=[],
        binding={"reader": {}},
        upkeep=prepared.receipt,
    )
    row = upkeep_row(record)
    assert row is not None
    return row


def test_a_configuration_skip_is_an_integrity_failure(
    base: tuple[Store, CheckpointResult],
) -> None:
    store, checkpoint = base
    binding = msgspec.structs.replace(ledger_run().binding, require_request_cap=True)
    prepared = prepare_checkpoint(
        store, checkpoint, arm=LEDGER_ARM, binding=binding, repeat=1, enforcement="advisory_cap"
    )
    assert not prepared.receipt.valid
    assert prepared.receipt.integrity == ["p1:config_skip:request_cap_unsupported"]
    assert prepared.receipt.stages[0].upkeep.state == "none"  # skipped before dispatch


def test_a_journal_changed_between_stages_is_caught(base: tuple[Store, CheckpointResult]) -> None:
    def tamper(stage: int, root: Path) -> None:
        if stage == 1:
            with sqlite3.connect(Workspace(root).ledger_path) as db:
                db.execute("DELETE FROM offers WHERE rowid = (SELECT MIN(rowid) FROM offers)")

    receipt = _prepare(base, repeat=2, between=tamper).receipt
    assert receipt.integrity == ["p2:journal_changed_between_stages"]


def test_an_unverified_model_change_is_caught(base: tuple[Store, CheckpointResult]) -> None:
    def switch(stage: int, root: Path) -> None:
        if stage == 1:
            session = DurableSession.load(Workspace(root).session_path, clock=utc_now)
            session.append_model_change("openai-codex", "gpt-6-other", reason="not the plan's")
            session.close()

    receipt = _prepare(base, repeat=3, between=switch).receipt
    assert "p2:model_change_unverified" in receipt.integrity


def test_a_corrupt_ledger_store_fails_closed(base: tuple[Store, CheckpointResult]) -> None:
    def corrupt(stage: int, root: Path) -> None:
        if stage == 2:
            with sqlite3.connect(Workspace(root).ledger_path) as db:
                db.execute("UPDATE generations SET ledger = 'garbage' WHERE number = 1")

    receipt = _prepare(base, repeat=4, between=corrupt).receipt
    assert "p3:ledger_store_corrupt" in receipt.integrity and not receipt.valid
