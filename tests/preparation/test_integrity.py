"""The preparation protocol's integrity checks, one problem at a time, over journal
snapshots and stage receipts (the end-to-end runs are in test_prepare.py)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from continuity.memory.ledger_journal import JournalSnapshot, Operation
from continuity.memory.upkeep_receipts import GenerationRef, OfferReceipt, UpkeepReceipt
from continuity.preparation.integrity import degradations, preparation_problems, stage_problems
from continuity.preparation.receipts import StageProcess, StageReceipt

A, R = "openai-codex:gpt-6.1-sol", "openai-codex:gpt-6-luna"
G0, G1 = "0" * 64, "1" * 64


def _op(op_id: str = "op-1", **change: Any) -> Operation:
    fields: dict[str, Any] = {
        "seq": 1,
        "op_id": op_id,
        "stage": 1,
        "tag": "p1",
        "kind": "bootstrap",
        "state": "settled",
        "input_reservation": 128_000,
        "output_reservation": 4_096,
        "offer_digest": "d1",
        "offers": 3,
        "generation_before": G0,
        "generation_after": G1,
        "outcome": "published",
        "usage": None,
    }
    return Operation(**{**fields, **change})


def _snapshot(
    ops: tuple[Operation, ...] = (),
    offered: tuple[tuple[int, int], ...] = (),
    head: str = G0,
    number: int = 0,
    entries: tuple[str, ...] = (),
) -> JournalSnapshot:
    return JournalSnapshot(
        operations=ops, offered=offered, head=head, head_number=number, entry_ids=entries
    )


BEFORE = _snapshot()
AFTER = _snapshot((_op(),), ((1, 0), (2, 0), (3, 0)), G1, 1, ("e1", "e2"))
OFFER = OfferReceipt(
    spans=3,
    owner_spans=2,
    tool_spans=1,
    owner_ordinals=[1, 2],
    tool_ordinals=[3],
    bytes=900,
    projected_tokens=1_000,
    limit=4,
    bonus=0,
    digest="d1",
)


def _receipt(**change: Any) -> StageReceipt:
    upkeep_fields: dict[str, Any] = {
        "stage": 1,
        "tag": "p1",
        "op_id": "op-1",
        "kind": "bootstrap",
        "state": "settled",
        "outcome": "published",
        "outcome_class": "ok",
        "enforcement": "scripted_cap",
        "input_reservation": 128_000,
        "output_reservation": 4_096,
        "offer": OFFER,
        "generation_before": GenerationRef(0, G0, 0),
        "generation_after": GenerationRef(1, G1, 2),
    }
    upkeep_fields.update(change.pop("upkeep", {}))
    fields: dict[str, Any] = {
        "stage": 1,
        "tag": "p1",
        "answering_model": A,
        "from_model": R,
        "to_model": A,
        "operations": ["model_change"],
        "fresh_process": True,
        "upkeep": UpkeepReceipt(**upkeep_fields),
    }
    return StageReceipt(**{**fields, **change})


def _problems(
    receipt: StageReceipt | None = None,
    before: JournalSnapshot = BEFORE,
    after: JournalSnapshot = AFTER,
    previous: str = R,
) -> list[str]:
    return stage_problems(
        before=before, after=after, receipt=receipt or _receipt(), previous_model=previous
    )


def test_a_stage_that_kept_the_protocol_has_no_problem() -> None:
    assert _problems() == []


def _replace_op(**change: Any) -> JournalSnapshot:
    return msgspec.structs.replace(AFTER, operations=(_op(**change),))


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ({"receipt": _receipt(to_model=R)}, "model_change_unverified"),
        ({"previous": A}, "model_change_unverified"),
        ({"receipt": _receipt(operations=[])}, "model_change_unverified"),
        (
            {"receipt": _receipt(operations=["model_change", "model_change"])},
            "model_change_unverified",
        ),
        ({"receipt": _receipt(fresh_process=False)}, "process_not_fresh"),
        ({"receipt": _receipt(failure="child_failed: died")}, "child_failed"),
        ({"after": msgspec.structs.replace(AFTER, operations=())}, "operation_missing"),
        (
            {"after": msgspec.structs.replace(AFTER, operations=(_op(), _op("op-2", seq=2)))},
            "operation_extra",
        ),
        ({"receipt": _receipt(upkeep={"state": "none"})}, "operation_extra"),
        ({"after": _replace_op(op_id="op-other")}, "receipt_mismatch"),
        ({"after": _replace_op(outcome="analysis_only")}, "receipt_mismatch"),
        ({"after": _replace_op(stage=2)}, "receipt_mismatch"),
        ({"after": _replace_op(input_reservation=64_000)}, "reservation_mismatch"),
        ({"receipt": _receipt(upkeep={"input_reservation": 64_000})}, "reservation_mismatch"),
        ({"after": _replace_op(kind="incremental")}, "bootstrap_repeated"),
        (
            {
                "before": _snapshot((_op("op-0", seq=0, stage=0, tag="p0"),), ((9, 0),)),
                "after": _snapshot(
                    (_op("op-0", seq=0, stage=0, tag="p0"), _op()),
                    ((1, 0), (2, 0), (3, 0), (9, 0)),
                    G1,
                    1,
                ),
            },
            "bootstrap_repeated",
        ),
        (
            {"after": msgspec.structs.replace(AFTER, offered=((1, 0), (2, 0)))},
            "offers_repeated",
        ),
        (
            {
                "after": _snapshot((_op(offers=300),), tuple((i, 0) for i in range(1, 301)), G1, 1),
                "receipt": _receipt(upkeep={"offer": msgspec.structs.replace(OFFER, spans=300)}),
            },
            "offers_excessive",
        ),
        ({"receipt": _receipt(upkeep={"offer": None})}, "receipt_mismatch"),
        ({"before": _snapshot(entries=("e1", "e9"))}, "entries_lost"),
        ({"after": msgspec.structs.replace(AFTER, head_number=3)}, "generation_unverified"),
        (
            {
                "receipt": _receipt(upkeep={"outcome": "analysis_only"}),
                "after": _replace_op(outcome="analysis_only"),
            },
            "generation_unverified",
        ),
        (
            {"after": _replace_op(state="dispatched", outcome=None, generation_after=None)},
            "upkeep_uncertain",
        ),
        (
            {"receipt": _receipt(upkeep={"outcome": "read_only", "outcome_class": "config"})},
            "config_skip:read_only",
        ),
        (
            {"receipt": _receipt(upkeep={"outcome": "mystery", "outcome_class": "unknown"})},
            "reason_unknown:mystery",
        ),
        (
            {"receipt": _receipt(upkeep={"outcome": "uncertain", "outcome_class": "uncertain"})},
            "upkeep_uncertain",
        ),
        (
            {
                "before": _snapshot((_op("op-0", seq=0, state="settled"),)),
                "after": _snapshot((_op("op-0", seq=0, state="released"), _op()), (), G1, 1),
            },
            "journal_row_changed",
        ),
        (
            {"before": _snapshot((_op("op-0", seq=0, stage=0),)), "after": AFTER},
            "operation_missing",
        ),
        (
            {
                "after": msgspec.structs.replace(
                    AFTER, operations=(_op(), _op("op-dup", seq=2, state="settled", offers=0))
                ),
                "receipt": _receipt(),
            },
            "preparation_duplicate",
        ),
    ],
)
def test_each_protocol_break_is_named(case: dict[str, Any], problem: str) -> None:
    assert f"p1:{problem}" in _problems(**case)


def test_a_reservation_released_at_the_claim_is_no_change() -> None:
    stale = _op("op-0", seq=0, stage=0, tag="p0", state="reserved", outcome=None)
    released = msgspec.structs.replace(stale, state="released", outcome="released_at_claim")
    before = _snapshot((stale,))
    after = msgspec.structs.replace(AFTER, operations=(released, _op()))
    receipt = _receipt(upkeep={"released": ["op-0"]})
    assert _problems(receipt, before=before, after=after) == []
    # Released without the receipt saying so: a changed row.
    assert "p1:journal_row_changed" in _problems(before=before, after=after)


def test_a_proven_non_invocation_adds_one_released_row_and_consumes_nothing() -> None:
    released = _op(state="released", outcome="no_source", offers=0, offer_digest="")
    after = _snapshot((released,))
    receipt = _receipt(
        upkeep={
            "state": "released",
            "outcome": "no_source",
            "outcome_class": "capacity",
            "offer": None,
            "generation_after": GenerationRef(0, G0, 0),
        }
    )
    assert _problems(receipt, after=after) == []
    assert degradations([receipt]) == ["p1:no_source"]


def _stages() -> list[StageReceipt]:
    return [
        _receipt(),
        msgspec.structs.replace(_receipt(), stage=2, tag="p2"),
        msgspec.structs.replace(_receipt(), stage=3, tag="p3"),
    ]


def _processes(pids: list[int]) -> list[StageProcess]:
    return [
        StageProcess(stage=i + 1, parent_pid=1, child_pid=p, elapsed_seconds=0.1)
        for i, p in enumerate(pids)
    ]


def test_three_stages_in_three_distinct_fresh_processes() -> None:
    assert preparation_problems(_stages(), _processes([11, 12, 13]), 1) == []
    assert "preparation_duplicate" in preparation_problems(_stages(), _processes([11, 11, 13]), 1)
    assert "process_not_fresh" in preparation_problems(_stages(), _processes([11, 1, 13]), 1)
    assert "stage_missing" in preparation_problems(_stages()[:2], _processes([11, 12]), 1)


def test_a_preparation_with_every_stage_config_skipped_is_invalid() -> None:
    skipped = [
        msgspec.structs.replace(
            s,
            upkeep=msgspec.structs.replace(
                s.upkeep, outcome="read_only", outcome_class="config", state="none"
            ),
        )
        for s in _stages()
    ]
    assert "all_stages_skipped" in preparation_problems(skipped, _processes([11, 12, 13]), 1)
