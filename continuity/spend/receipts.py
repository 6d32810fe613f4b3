"""Slot receipts of a pilot run, the validity rule, and the counts a report may show.

**Receipts.** Each slot that ends writes one receipt, ``receipts/<slot id>.json``: an
exclusive, synced, private file (`continuity.spend.private`), written by the controller
from its own records once the slot's group is contained, whether the worker exited
cleanly, was killed or never reported. It
holds opaque ids, a content hash, fixed codes and numbers only: never a path, secret,
request, answer, stderr or free-form error. The controller's journal records the
receipt's sha256 when it writes it.

**Aggregation** (`aggregate`) reads the receipts against the frozen schedule and the
journal, and refuses (`SpendError`, ``integrity_stop``):

- ``lookup_receipt_invalid``: not a sound private receipt, or inconsistent (a terminal
  that contradicts admission, a code outside the fixed tables);
- ``lookup_receipt_duplicate``: two receipts for one slot;
- ``lookup_receipt_changed``: bytes whose sha256 differs from the journal's;
- ``lookup_receipt_unplanned``: a slot the schedule does not have;
- ``lookup_receipt_unvisited``: a slot the run never reached.

**Counts.** Inventory totals (planned, eligible) describe the whole frozen schedule.
Execution counts (skipped, unadmitted, admitted, completed, incomplete, invalid, missing)
cover visited slots only. The assigned in-flight slot of a partial view is visited: with
no receipt it counts as unadmitted before its first admission and as incomplete once
admitted; any other visited slot without a receipt is missing. Unvisited slots appear in
the inventory totals and the truncation, never in the execution counts.

**Validity** counts admitted slots, not requests. Lost and own-aborted slots are
incomplete, not invalid; a wrong answer still completes an observation; an empty final
output is invalid. Strictly more than 10 % invalid admitted slots stops the run
(``lookup_invalid_slots``, `invalid_stop`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from continuity.errors import SpendError
from continuity.spend.private import read_private, write_new
from continuity.spend.safety import CONTINUABLE, CONTROLLER_CODES, FIXED_CODES

__all__ = [
    "RECEIPT_SCHEMA",
    "SLOT_CODES",
    "InFlight",
    "PilotCounts",
    "ScheduledSlot",
    "SlotReceipt",
    "Terminal",
    "aggregate",
    "invalid_stop",
    "receipt_digest",
    "write_receipt",
]

RECEIPT_SCHEMA = "continuity-pilot-slot-receipt-v1"
Terminal = Literal["skipped", "unadmitted", "completed", "incomplete", "invalid"]
_ADMITTED: frozenset[str] = frozenset({"completed", "incomplete", "invalid"})
_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DECIMAL = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")
# The codes a receipt may carry: the fixed refusal table, the codes that let the pilot
# go on, the controller's own, the guard's settlement codes that end a slot, and the
# provider failures a lost request reports.
SLOT_CODES = frozenset(
    {
        *FIXED_CODES,
        *CONTINUABLE,
        *CONTROLLER_CODES,
        "lookup_own_abort",
        "lookup_request_failed",
        "lookup_integrity_stop",
        "lookup_ipc_integrity",
        "lookup_preparation_invalid",
        "lookup_ack_unpersisted",
        "lookup_unknown_tier",
        "lookup_invalid_usage",
        "lookup_response_failed",
        "lookup_permit_stale",
        "lookup_permit_reused",
        "lookup_concurrent_entry",
        "lookup_permit_rmax_mismatch",
        "lookup_account_refused",
        "lookup_rate_limited",
        "lookup_usage_limit",
        "credentials_invalid",
        "provider_error",
        "lookup_settlement_violation",
        "lookup_usage_missing",
        "lookup_admit_failed",
        "lookup_settle_failed",
        "pilot_empty_final_output",
        "provider_auth_failed",
        "provider_quota_exhausted",
        "provider_rate_limited",
        "provider_unavailable",
        "provider_request_rejected",
        "provider_stream_invalid",
        "provider_stream_interrupted",
    }
)


class SlotReceipt(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One slot's outcome: opaque ids, a hash, a fixed code and numbers."""

    schema: str
    run_id: str
    epoch: str
    slot_id: str
    terminal: Terminal
    admitted_requests: int
    code: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: str = "0"  # exact decimal text: what the slot's holds count in T
    answer_sha256: str | None = None


class ScheduledSlot(msgspec.Struct, frozen=True, kw_only=True):
    """One slot of the frozen schedule (in schedule order)."""

    slot_id: str
    eligible: bool = True


class InFlight(msgspec.Struct, frozen=True, kw_only=True):
    """The slot assigned when a partial view was taken, and whether it was admitted."""

    slot_id: str
    admitted: bool


class PilotCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Inventory totals (whole schedule) and execution counts (visited slots only)."""

    planned: int
    eligible: int
    visited: int
    truncated: int  # scheduled slots never reached
    skipped: int
    unadmitted: int
    admitted: int
    completed: int
    incomplete: int
    invalid: int
    missing: int


def _check(receipt: SlotReceipt, where: str) -> None:
    """Refuse a receipt whose fields contradict each other or leave the fixed tables."""
    problems = [
        name for name in ("run_id", "epoch", "slot_id") if not _ID.fullmatch(getattr(receipt, name))
    ]
    if receipt.schema != RECEIPT_SCHEMA:
        problems.append("schema")
    admitted = receipt.terminal in _ADMITTED
    if admitted != (receipt.admitted_requests > 0) or receipt.admitted_requests > 10:
        problems.append("terminal and admission disagree")
    if receipt.code is not None and receipt.code not in SLOT_CODES:
        problems.append("code outside the fixed tables")
    if receipt.terminal == "invalid" and receipt.code != "pilot_empty_final_output":
        problems.append("an invalid slot names no empty output")
    if min(receipt.input_tokens, receipt.output_tokens) < 0 or not _DECIMAL.fullmatch(
        receipt.cost_usd
    ):
        problems.append("numbers")
    if receipt.answer_sha256 is not None and (
        receipt.terminal != "completed" or not _HEX64.fullmatch(receipt.answer_sha256)
    ):
        problems.append("answer hash")
    if problems:
        raise SpendError(
            f"the receipt is inconsistent: {', '.join(problems)}",
            code="lookup_receipt_invalid",
            location=where,
            outcome="integrity_stop",
        )


def receipt_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_receipt(directory: Path, receipt: SlotReceipt) -> str:
    """Write `receipt` exclusively and synced as ``<slot id>.json``; return its sha256
    (for the journal).

    Raises:
        SpendError: ``lookup_receipt_invalid`` (an inconsistent receipt: nothing is
            written), ``lookup_receipt_duplicate`` (the slot already has one),
            ``lookup_receipt_persist_failed`` (the write failed).
    """
    _check(receipt, receipt.slot_id)
    data = msgspec.json.encode(receipt)
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        write_new(directory / f"{receipt.slot_id}.json", data)
    except FileExistsError:
        raise SpendError(
            "the slot already has a receipt",
            code="lookup_receipt_duplicate",
            location=receipt.slot_id,
            outcome="integrity_stop",
        ) from None
    except OSError as exc:
        raise SpendError(
            f"the receipt could not be persisted: {exc.strerror}",
            code="lookup_receipt_persist_failed",
            location=receipt.slot_id,
            outcome="integrity_stop",
        ) from None
    return receipt_digest(data)


def _read(path: Path) -> tuple[SlotReceipt, bytes]:
    data = read_private(path)
    if data is None:
        raise SpendError(
            "not a sound private receipt",
            code="lookup_receipt_invalid",
            location=path.name,
            outcome="integrity_stop",
        )
    try:
        receipt = msgspec.json.decode(data, type=SlotReceipt)
    except msgspec.MsgspecError:
        raise SpendError(
            "not a receipt",
            code="lookup_receipt_invalid",
            location=path.name,
            outcome="integrity_stop",
        ) from None
    _check(receipt, path.name)
    return receipt, data


def _receipts(
    directory: Path,
    order: Mapping[str, int],
    *,
    visited: int,
    journal: Mapping[str, str],
    run_id: str,
) -> dict[str, SlotReceipt]:
    """Every receipt in `directory` by slot id, each checked against the run, the
    schedule (`order`: a slot's index), the slots reached and the journal."""
    found: dict[str, SlotReceipt] = {}
    for path in sorted(directory.glob("*")) if directory.is_dir() else []:
        receipt, data = _read(path)
        slot = receipt.slot_id
        if receipt.run_id != run_id:
            raise SpendError(
                "the receipt is of another run",
                code="lookup_receipt_invalid",
                location=path.name,
                outcome="integrity_stop",
            )
        if slot in found or path.name != f"{slot}.json":
            raise SpendError(
                "a second receipt for the slot",
                code="lookup_receipt_duplicate",
                location=slot,
                outcome="integrity_stop",
            )
        if slot not in order:
            raise SpendError(
                "the slot is not in the schedule",
                code="lookup_receipt_unplanned",
                location=slot,
                outcome="integrity_stop",
            )
        if order[slot] >= visited:
            raise SpendError(
                "the run never reached the slot",
                code="lookup_receipt_unvisited",
                location=slot,
                outcome="integrity_stop",
            )
        if journal.get(slot) != receipt_digest(data):
            raise SpendError(
                "the receipt differs from the journal",
                code="lookup_receipt_changed",
                location=slot,
                outcome="integrity_stop",
            )
        found[slot] = receipt
    return found


def aggregate(
    directory: Path,
    schedule: Sequence[ScheduledSlot],
    *,
    visited: int,
    journal: Mapping[str, str],
    run_id: str,
    in_flight: InFlight | None = None,
) -> tuple[PilotCounts, list[SlotReceipt]]:
    """The counts of a (possibly partial) run and its receipts in schedule order.

    `visited` is how many slots of `schedule` the run reached (the in-flight slot
    included); `journal` maps a slot id to the sha256 its receipt was written with.

    Raises:
        SpendError: the module doc's ``lookup_receipt_*`` codes.
    """
    order = {slot.slot_id: index for index, slot in enumerate(schedule)}
    found = _receipts(directory, order, visited=visited, journal=journal, run_id=run_id)
    terminals: list[str] = []
    missing = 0
    for planned in schedule[:visited]:
        ended = found.get(planned.slot_id)
        if ended is not None:
            terminals.append(ended.terminal)
        elif in_flight is not None and in_flight.slot_id == planned.slot_id:
            terminals.append("incomplete" if in_flight.admitted else "unadmitted")
        else:
            missing += 1
    counts = PilotCounts(
        planned=len(schedule),
        eligible=sum(1 for slot in schedule if slot.eligible),
        visited=min(visited, len(schedule)),
        truncated=max(len(schedule) - visited, 0),
        skipped=terminals.count("skipped"),
        unadmitted=terminals.count("unadmitted"),
        admitted=sum(1 for t in terminals if t in _ADMITTED),
        completed=terminals.count("completed"),
        incomplete=terminals.count("incomplete"),
        invalid=terminals.count("invalid"),
        missing=missing,
    )
    return counts, sorted(found.values(), key=lambda r: order[r.slot_id])


def invalid_stop(counts: PilotCounts) -> str | None:
    """``lookup_invalid_slots`` when strictly more than 10 % of admitted slots are
    invalid (exact integer arithmetic), else None."""
    if counts.admitted and counts.invalid * 10 > counts.admitted:
        return "lookup_invalid_slots"
    return None
