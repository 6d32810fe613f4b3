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

The hold arithmetic and the cap rule are `continuity.holds` (shared with the run cost
cap); `CapAccount` adds Rmax, request ids, the stops and the loss rule. Its holds live in
a `continuity.holds.HoldBook`: in memory by default (the test-only permit source), or the
durable source's SQLite file (`continuity.spend.durable`), where every change is made
inside the source's transaction. Holds close strictly (``late_close=False``): only an
active hold is settled or retained, so a retained hold is final.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from continuity.errors import SpendError
from continuity.holds import HoldAccount, HoldBook, HoldRecord, MemoryBook, Over, exceeds

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
    """Holds against a cap `cap` (USD), each request reserving `rmax`, kept in `book`
    (in memory unless one is given)."""

    def __init__(self, cap: Decimal, rmax: Decimal, book: HoldBook | None = None) -> None:
        if rmax <= 0 or cap < rmax:
            raise SpendError(
                f"the cap ${cap} must be at least Rmax ${rmax}",
                code="lookup_cap_invalid",
                location="cap",
            )
        self.cap = cap
        self.rmax = rmax
        self._holds = HoldAccount(book or MemoryBook(), late_close=False)
        self.stopped: str | None = None
        self.loss_streak = 0  # consecutive admitted slots that ended lost
        self._slot: str | None = None  # the slot of the latest admission
        self._lost_slots: set[str] = set()
        self._own_aborts: set[str] = set()  # slots that ended in the harness's own abort

    @property
    def holds(self) -> dict[str, Hold]:
        """Every hold by request id, in the order they were admitted (a copy)."""
        return {str(r.key): _hold(r) for r in self._holds.book.records()}

    def active(self) -> list[str]:
        """The request ids whose holds are still active."""
        return [str(r.key) for r in self._holds.book.records() if r.state == "active"]

    def total(self) -> Decimal:
        """T: settled costs, retained holds (or known partials, if larger), active holds."""
        return self._holds.committed()

    def refusal(self) -> str | None:
        """Why the next admission would be refused (None: it would be admitted)."""
        if self.stopped is not None:
            return self.stopped
        if exceeds(self.total(), self.rmax, self.cap):
            return "not_admitted_cap"
        return None

    def admit(self, request_id: str, slot_id: str) -> str | None:
        """Hold Rmax for `request_id` and return None, or return the refusal code (the
        account is unchanged). A request id is admitted at most once."""
        if self._holds.book.record(request_id) is not None:
            return "lookup_permit_reused"
        if self.stopped is not None:
            return self.stopped
        held = self._holds.hold(self.rmax, self.cap, key=request_id, tags={"slot_id": slot_id})
        if isinstance(held, Over):
            return "not_admitted_cap"
        if slot_id != self._slot:  # the previous slot has ended
            ended = self._slot
            if ended is not None and ended not in self._lost_slots | self._own_aborts:
                self.loss_streak = 0
            self._slot = slot_id
        return None

    def _active(self, request_id: str) -> Hold:
        record = self._holds.book.record(request_id)
        if record is None or record.state != "active":
            raise SpendError(
                f"request {request_id} has no active hold to settle",
                code="lookup_permit_reused",
                location=request_id,
            )
        return _hold(record)

    def settle(self, request_id: str, cost: Decimal) -> None:
        """Replace the hold with the actual cost."""
        self._active(request_id)
        self._holds.settle(request_id, cost, "settled")

    def retain(self, request_id: str, kind: str, partial: Decimal | None = None) -> None:
        """Keep the hold (lost, aborted after send, integrity stop): the request's slot is
        terminal. Two consecutive lost slots stop admission (``lookup_repeated_loss``)."""
        hold = self._active(request_id)
        self._holds.retain(request_id, partial, kind)
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
        """Load `holds` (into a new in-memory book) and a `snapshot` a durable source
        persisted."""
        records = [
            HoldRecord(h.request_id, h.amount, h.state, h.cost, tags={"slot_id": h.slot_id})
            for h in holds
        ]
        self._holds = HoldAccount(MemoryBook(records), late_close=False)
        self.restore_state(snapshot)

    def restore_state(self, snapshot: dict[str, object]) -> None:
        """Load a `snapshot` (the state besides the holds) a durable source persisted."""
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


def _hold(record: HoldRecord) -> Hold:
    state: HoldState = record.state  # type: ignore[assignment]  # a pilot hold is never released
    return Hold(
        str(record.key), str(record.tags.get("slot_id", "")), record.amount, state, record.cost
    )


def _names(value: object) -> set[str]:
    return {s for s in value if isinstance(s, str)} if isinstance(value, list) else set()
