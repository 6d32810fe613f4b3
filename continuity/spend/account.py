"""The registered accounting total and its admission rule, in exact money.

    T = sum(settled cost) + sum(max(retained hold, known partial)) + sum(active holds)

A request is admitted only if ``T + Rmax <= C``; otherwise ``not_admitted_cap``. Every
admitted request holds Rmax until it is settled (the hold is replaced by its actual
catalog cost) or retained (lost, aborted after send, or an integrity stop: the hold
stays, or the known partial cost if that is larger). Reservations are accounting, not
an invoice: T bounds what the pilot *may* have spent on the registered assumptions.

Two consecutive admitted *slots* (probe runs) that ended lost (a provider loss) stop
admission with ``lookup_repeated_loss``. A slot the harness aborted on its own latency
(``own_abort_after_send``) keeps its hold but neither counts nor resets the streak.
Slots run one at a time (concurrency one), so a slot has ended when the next slot's
first request is admitted: a slot that ended any other way (its requests settled, or an
integrity stop) resets the count there, a slot with no admitted request never counts,
and a loss ends its slot (it is terminal). So a
slot that settles a request and then loses the next one is a lost slot. Alternating
losses are still bounded by C, not by this rule. A stop is sticky: every later
admission is refused with the stop's code.

`CapAccount` is the arithmetic only (in memory). The test-only permit source keeps
one; the durable controller (spend controller II) persists the same states.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from continuity.errors import SpendError
from continuity.spend.money import EXACT, exact_sum

__all__ = ["LOSS_KINDS", "OWN_ABORT", "CapAccount", "Hold", "HoldState"]

HoldState = Literal["active", "settled", "retained"]
# Outcome kinds that count towards lookup_repeated_loss.
LOSS_KINDS = frozenset({"lost"})
OWN_ABORT = "own_abort_after_send"  # the harness's own latency: neither counts nor resets


@dataclass
class Hold:
    request_id: str
    slot_id: str
    amount: Decimal
    state: HoldState = "active"
    cost: Decimal | None = None  # settled: the actual cost; retained: a known partial


class CapAccount:
    """Holds against a cap `cap` (USD), each request reserving `rmax`."""

    def __init__(self, cap: Decimal, rmax: Decimal) -> None:
        if rmax <= 0 or cap < rmax:
            raise SpendError(
                f"the cap ${cap} must be at least Rmax ${rmax}",
                code="lookup_cap_invalid",
                location="cap",
            )
        self.cap = cap
        self.rmax = rmax
        self.holds: dict[str, Hold] = {}
        self.stopped: str | None = None
        self.loss_streak = 0  # consecutive admitted slots that ended lost
        self._slot: str | None = None  # the slot of the latest admission
        self._lost_slots: set[str] = set()
        self._own_aborts: set[str] = set()  # slots that ended in the harness's own abort

    def total(self) -> Decimal:
        """T: settled costs, retained holds (or known partials, if larger), active holds."""
        parts = []
        for hold in self.holds.values():
            if hold.state == "settled":
                parts.append(hold.cost if hold.cost is not None else hold.amount)
            elif hold.state == "retained":
                parts.append(max(hold.amount, hold.cost or Decimal(0)))
            else:
                parts.append(hold.amount)
        return exact_sum(parts)

    def refusal(self) -> str | None:
        """Why the next admission would be refused (None: it would be admitted)."""
        if self.stopped is not None:
            return self.stopped
        if EXACT.add(self.total(), self.rmax) > self.cap:
            return "not_admitted_cap"
        return None

    def admit(self, request_id: str, slot_id: str) -> str | None:
        """Hold Rmax for `request_id` and return None, or return the refusal code (the
        account is unchanged). A request id is admitted at most once."""
        if request_id in self.holds:
            return "lookup_permit_reused"
        refused = self.refusal()
        if refused is not None:
            return refused
        self.holds[request_id] = Hold(request_id, slot_id, self.rmax)
        if slot_id != self._slot:  # the previous slot has ended
            ended = self._slot
            if ended is not None and ended not in self._lost_slots | self._own_aborts:
                self.loss_streak = 0
            self._slot = slot_id
        return None

    def _active(self, request_id: str) -> Hold:
        hold = self.holds.get(request_id)
        if hold is None or hold.state != "active":
            raise SpendError(
                f"request {request_id} has no active hold to settle",
                code="lookup_permit_reused",
                location=request_id,
            )
        return hold

    def settle(self, request_id: str, cost: Decimal) -> None:
        """Replace the hold with the actual cost."""
        hold = self._active(request_id)
        hold.state, hold.cost = "settled", cost

    def retain(self, request_id: str, kind: str, partial: Decimal | None = None) -> None:
        """Keep the hold (lost, aborted after send, integrity stop): the request's slot is
        terminal. Two consecutive lost slots stop admission (``lookup_repeated_loss``)."""
        hold = self._active(request_id)
        hold.state, hold.cost = "retained", partial
        if kind == OWN_ABORT:
            self._own_aborts.add(hold.slot_id)
        if kind in LOSS_KINDS and hold.slot_id not in self._lost_slots:
            self._lost_slots.add(hold.slot_id)
            self.loss_streak += 1
            if self.loss_streak >= 2:
                self.stop("lookup_repeated_loss")

    def snapshot(self) -> dict[str, object]:
        """The account's state besides its holds (for a durable source to persist)."""
        return {
            "stopped": self.stopped,
            "loss_streak": self.loss_streak,
            "slot": self._slot,
            "lost_slots": sorted(self._lost_slots),
            "own_aborts": sorted(self._own_aborts),
        }

    def restore(self, holds: list[Hold], snapshot: dict[str, object]) -> None:
        """Load `holds` and a `snapshot` a durable source persisted."""
        self.holds = {hold.request_id: hold for hold in holds}
        stopped, slot = snapshot.get("stopped"), snapshot.get("slot")
        streak, lost = snapshot.get("loss_streak", 0), snapshot.get("lost_slots", [])
        self.stopped = stopped if isinstance(stopped, str) else None
        self.loss_streak = streak if isinstance(streak, int) else 0
        self._slot = slot if isinstance(slot, str) else None
        self._lost_slots = _names(lost)
        self._own_aborts = _names(snapshot.get("own_aborts", []))

    def stop(self, code: str) -> None:
        """Close admission for good; the first stop's code is kept."""
        if self.stopped is None:
            self.stopped = code


def _names(value: object) -> set[str]:
    return {s for s in value if isinstance(s, str)} if isinstance(value, list) else set()
