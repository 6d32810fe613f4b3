"""The preparation protocol's integrity checks: fail-closed, from what the durable
journal and session recorded, never from what a stage says about itself alone.

The parent takes a journal snapshot (`continuity.memory.ledger_store.JournalSnapshot`)
after every stage and reconciles operation ids across stages, not just counts. One
stage is checked by `stage_problems`, the three together by `preparation_problems`.
Every problem is a stable code, prefixed by the stage's tag where it has one:

- ``model_change_unverified``: the stage did not move the session from the previous
  stage's model to its own answering model, as one recorded ``model_change``;
- ``process_not_fresh``, ``preparation_duplicate``: a stage ran in its parent's
  process, two stages shared a process, or the journal holds two live rows of one stage;
- ``operation_missing``, ``operation_extra``: the stage added fewer or more journal
  rows than its receipt accounts for (one, or none for a configuration skip), or an
  earlier row vanished;
- ``journal_row_changed``: an earlier row changed, other than a never-dispatched
  reservation released at this stage's claim;
- ``journal_changed_between_stages``: the journal differs from the last stage's snapshot
  when the next stage starts;
- ``receipt_mismatch``, ``reservation_mismatch``: the new row and the receipt disagree
  (id, stage, state, kind, outcome, offer, generation), or its reservation is not the
  confirmed budget (128k bootstrap or 64k incremental input, 4,096 output);
- ``bootstrap_repeated``: a second consumed bootstrap (or an incremental where the
  bootstrap was due);
- ``offers_repeated``, ``offers_excessive``: a span offered again, or more spans than
  the delta cap and bonus band allow;
- ``entries_lost``: an entry of the earlier generation is missing from the later one;
- ``generation_unverified``: a stage that published no generation changed the head,
  or one that did publish did not add exactly one;
- ``upkeep_uncertain``: a dispatched row was never settled (a lost acknowledgement);
- ``config_skip:<reason>``, ``reason_unknown:<reason>``: a configuration/eligibility
  skip or an unrecognised outcome (never a degradation);
- ``child_failed``: a stage's child reported nothing;
- ``all_stages_skipped``: no stage got past its configuration checks;
- ``stage_missing``: fewer than three stages ran, or out of order.
"""

from __future__ import annotations

from collections.abc import Sequence

from continuity.memory.ledger_journal import JournalSnapshot, Operation
from continuity.memory.upkeep_receipts import reason_class
from continuity.memory.upkeep_selection import caps_for
from continuity.preparation.receipts import STAGES, StageProcess, StageReceipt

__all__ = ["degradations", "preparation_problems", "stage_problems"]


def _boundary(receipt: StageReceipt, previous_model: str) -> list[str]:
    if receipt.failure is not None:
        return ["child_failed"]
    problems = []
    moved = (
        receipt.from_model == previous_model
        and receipt.to_model == receipt.answering_model
        and receipt.from_model != receipt.to_model
        and receipt.operations == ["model_change"]
    )
    if not moved:
        problems.append("model_change_unverified")
    if not receipt.fresh_process:
        problems.append("process_not_fresh")
    return problems


def _outcome(receipt: StageReceipt) -> list[str]:
    upkeep = receipt.upkeep
    kind = reason_class(upkeep.outcome)
    if kind == "config":
        return [f"config_skip:{upkeep.outcome}"]
    if kind == "uncertain":
        return ["upkeep_uncertain"]
    if kind == "unknown" and receipt.failure is None:
        return [f"reason_unknown:{upkeep.outcome}"]
    return []


def _changed_rows(
    before: JournalSnapshot, after: JournalSnapshot, released: list[str]
) -> list[str]:
    old, new = before.by_id(), after.by_id()
    problems = []
    if any(op_id not in new for op_id in old):
        problems.append("operation_missing")
    for op_id, row in old.items():
        now = new.get(op_id)
        if now is None or now == row:
            continue
        released_at_claim = (
            row.state == "reserved"
            and now.state == "released"
            and now.outcome == "released_at_claim"
            and op_id in released
        )
        if not released_at_claim:
            problems.append("journal_row_changed")
    return problems


def _new_row(
    row: Operation, receipt: StageReceipt, before: JournalSnapshot, after: JournalSnapshot
) -> list[str]:
    upkeep = receipt.upkeep
    problems = []
    agrees = (
        row.op_id == upkeep.op_id
        and row.stage == receipt.stage
        and row.tag == receipt.tag
        and row.state == upkeep.state
        and row.kind == upkeep.kind
        and (row.state == "dispatched" or row.outcome == upkeep.outcome)
    )
    if not agrees:
        problems.append("receipt_mismatch")
    caps = caps_for(row.kind)
    if (row.input_reservation, row.output_reservation) != (
        caps.input_tokens,
        caps.output_tokens,
    ) or (upkeep.input_reservation, upkeep.output_reservation) != (
        row.input_reservation,
        row.output_reservation,
    ):
        problems.append("reservation_mismatch")
    if row.consuming:
        earlier = any(op.consuming for op in before.operations)
        if row.kind != ("incremental" if earlier else "bootstrap"):
            problems.append("bootstrap_repeated")
        added = set(after.offered) - set(before.offered)
        if len(added) != row.offers or len(after.offered) != len(before.offered) + row.offers:
            problems.append("offers_repeated")
        offer = upkeep.offer
        if offer is None or offer.spans != row.offers or offer.digest != row.offer_digest:
            problems.append("receipt_mismatch")
        elif row.offers > min(offer.limit, caps.max_spans) + caps.bonus_cap:
            problems.append("offers_excessive")
    elif set(after.offered) != set(before.offered):
        problems.append("offers_repeated")
    if row.state == "dispatched":
        problems.append("upkeep_uncertain")
    return problems


def stage_problems(
    *,
    before: JournalSnapshot,
    after: JournalSnapshot,
    receipt: StageReceipt,
    previous_model: str,
) -> list[str]:
    """The problems of one stage, from the journal before and after it and its receipt
    (see the module doc); empty when the stage kept the protocol."""
    upkeep = receipt.upkeep
    problems = _boundary(receipt, previous_model) + _outcome(receipt)
    problems += _changed_rows(before, after, upkeep.released)
    old = before.by_id()
    added = [op for op in after.operations if op.op_id not in old]
    expected = 0 if upkeep.state == "none" else 1
    if len(added) > expected:
        problems.append("operation_extra")
    elif len(added) < expected:
        problems.append("operation_missing")
    elif added:
        problems += _new_row(added[0], receipt, before, after)
    live = [op for op in after.operations if op.stage == receipt.stage and op.state != "released"]
    if len(live) > 1:
        problems.append("preparation_duplicate")
    if sum(1 for op in after.operations if op.consuming and op.kind == "bootstrap") > 1:
        problems.append("bootstrap_repeated")
    if not set(before.entry_ids) <= set(after.entry_ids):
        problems.append("entries_lost")
    published = upkeep.outcome == "published"
    if (published and after.head_number != before.head_number + 1) or (
        not published and after.head != before.head
    ):
        problems.append("generation_unverified")
    if upkeep.generation_after is not None and upkeep.generation_after.id != after.head:
        problems.append("receipt_mismatch")
    ordered = list(dict.fromkeys(problems))
    return [f"{receipt.tag}:{problem}" for problem in ordered]


def preparation_problems(
    stages: Sequence[StageReceipt], processes: Sequence[StageProcess], parent_pid: int
) -> list[str]:
    """What the three stages break together: their number and order, all skipped, and
    distinct fresh processes."""
    problems = []
    if [s.stage for s in stages] != list(range(1, STAGES + 1)):
        problems.append("stage_missing")
    if stages and all(reason_class(s.upkeep.outcome) == "config" for s in stages):
        problems.append("all_stages_skipped")
    pids = [p.child_pid for p in processes]
    if len(set(pids)) != len(pids):
        problems.append("preparation_duplicate")
    if parent_pid in pids:
        problems.append("process_not_fresh")
    return problems


def degradations(stages: Sequence[StageReceipt]) -> list[str]:
    """The allowlisted degradations the stages continued after, tagged by stage."""
    return [
        f"{s.tag}:{s.upkeep.outcome}"
        for s in stages
        if reason_class(s.upkeep.outcome) in ("provider", "capacity")
    ]
