"""One slot's exchanges with its probe child, checked against the controller's records.

`serve_message` decodes a child message strictly (a malformed one is
``lookup_ipc_integrity``) and applies it to the durable account only if it agrees with
what the controller knows: an admission for the planned slot, a consumption or
settlement of a permit this slot holds, and a settled cost that the raw usage and tier
give (``lookup_settlement_violation`` otherwise). `slot_terminal` decides the slot's
terminal from those records, never from the child's claim alone; `fixed_code` keeps
any code outside the receipts' fixed tables out of receipts and reports.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from continuity.errors import SpendError
from continuity.spend.assumptions import ASSUMED_V1, Assumptions
from continuity.spend.durable import DurablePermitSource
from continuity.spend.permits import Permit, Refusal, Settlement
from continuity.spend.receipts import SLOT_CODES
from continuity.spend.safety import child_terminal
from continuity.spend.usage import UsageRecord, catalog_cost

__all__ = [
    "SlotState",
    "child_code",
    "fixed_code",
    "held_amount",
    "serve_message",
    "slot_terminal",
]


class SlotState:
    """What the controller itself knows of one slot's run."""

    def __init__(self) -> None:
        self.admitted = 0
        self.consumed = 0  # permits consumed (each may have been sent)
        self.settled: list[str] = []  # settlement kinds
        self.claim: dict[str, Any] = {}
        self.cost = Decimal(0)
        self.usage = (0, 0)
        self.stop: str | None = None
        self.open: dict[str, Permit] = {}  # granted, not yet settled


class _Admit(msgspec.Struct):
    request_id: str
    slot_id: str
    round: int
    payload_digest: str
    rmax: str


class _Consume(msgspec.Struct):
    permit: Permit
    body_digest: str


class _Settle(msgspec.Struct):
    permit: Permit
    settlement: Settlement
    usage: UsageRecord | None = None
    tier: str | None = None


def _decode(message: dict[str, Any], kind: type[Any]) -> Any:
    try:
        return msgspec.convert(message, kind)
    except msgspec.ValidationError:
        raise SpendError(
            "a child message with missing or malformed fields",
            code="lookup_ipc_integrity",
            location="child",
            outcome="integrity_stop",
        ) from None


def held_amount(source: DurablePermitSource, request_id: str) -> Decimal:
    """What a closed hold counts in T: its settled cost, or its retained maximum."""
    hold = source.account.holds[request_id]
    if hold.state == "settled" and hold.cost is not None:
        return hold.cost
    return max(hold.amount, hold.cost or Decimal(0))


async def serve_message(
    message: dict[str, Any],
    source: DurablePermitSource,
    slot: SlotState,
    planned: str,
    registry: Assumptions = ASSUMED_V1,
) -> tuple[str, dict[str, Any]]:
    """Apply one child request to the account, checked against what the controller
    knows; the reply (kind, fields). A request that contradicts it is an integrity stop."""
    if message["kind"] == "admit":
        admit = _decode(message, _Admit)
        if admit.slot_id != planned:
            raise SpendError(
                "an admission for another slot",
                code="lookup_ipc_integrity",
                location="child",
                outcome="integrity_stop",
            )
        granted = await source.admit(
            admit.request_id, planned, admit.round, admit.payload_digest, Decimal(admit.rmax)
        )
        if isinstance(granted, Refusal):
            # after a stop the child only learns that the pilot stopped (continuable for
            # it: its slot ends); the stop's own code stays the controller's
            stopped = source.account.stopped is not None and granted.code == source.account.stopped
            code = "lookup_stopped" if stopped else granted.code
            return "refused", {"code": code, "policy": granted.policy}
        slot.admitted += 1
        slot.open[granted.request_id] = granted
        return "admitted", {"permit": msgspec.to_builtins(granted)}
    if message["kind"] == "consume":
        consume = _decode(message, _Consume)
        if slot.open.get(consume.permit.request_id) != consume.permit:
            raise SpendError(
                "a consumption of a permit this slot does not hold",
                code="lookup_ipc_integrity",
                location="child",
                outcome="integrity_stop",
            )
        try:
            await source.consume(consume.permit, consume.body_digest)
        except SpendError as error:
            return "refused", {"code": error.code}
        slot.consumed += 1
        return "consumed", {}
    settle = _decode(message, _Settle)
    permit, settlement, raw = settle.permit, settle.settlement, settle.usage
    if slot.open.get(permit.request_id) != permit:
        raise SpendError(
            "a settlement of a permit this slot does not hold",
            code="lookup_ipc_integrity",
            location="child",
            outcome="integrity_stop",
        )
    if settlement.kind == "settled":  # the cost is recomputed here, never taken on trust
        try:
            cost = catalog_cost(raw, settle.tier, registry) if raw is not None else None
        except ValueError:
            cost = None
        if cost is None or settlement.cost is None or Decimal(settlement.cost) != cost:
            raise SpendError(
                "a settled cost the raw usage does not give",
                code="lookup_settlement_violation",
                location="child",
                outcome="integrity_stop",
            )
    await source.settle(permit, settlement, raw, settle.tier)
    del slot.open[permit.request_id]
    slot.settled.append(settlement.kind)
    slot.cost += held_amount(source, permit.request_id)
    if raw is not None:
        slot.usage = (slot.usage[0] + raw.input, slot.usage[1] + raw.output)
    return "settled", {}


def child_code(code: object) -> str | None:
    """A code a child reports (its ``stop`` or its ``done``), as a receipt may carry it.

    Raises:
        SpendError: ``lookup_child_code_forbidden`` for a controller code, which a
            child can never set (`continuity.spend.safety.child_terminal`).
    """
    if code is None:
        return None
    child_terminal(str(code), admitted=False)  # refuses a controller code
    return fixed_code(str(code))


def fixed_code(code: str | None) -> str | None:
    """`code` if a receipt may carry it, else the generic integrity code."""
    return code if code is None or code in SLOT_CODES else "lookup_integrity_stop"


def slot_terminal(slot: SlotState) -> tuple[str, str | None]:
    """The slot's terminal and code from the controller's own records."""
    claim = slot.claim
    code = fixed_code(slot.stop or claim.get("code"))
    if slot.admitted == 0:
        return "unadmitted", code
    if code == "pilot_empty_final_output":
        return "invalid", code
    complete = (
        slot.stop is None
        and claim.get("terminal") == "completed"
        and slot.settled
        and all(kind == "settled" for kind in slot.settled)
        and len(slot.settled) == slot.admitted
    )
    return ("completed", None) if complete else ("incomplete", code)
