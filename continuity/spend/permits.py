"""The permit interface ``lookup-permit-v1`` and its one shipped source, a test double.

A permit source implements four awaitable operations (`PermitSource`):

- ``admit(request_id, slot_id, round, payload_digest, rmax)`` -> a `Permit`, or a
  `Refusal` with its code (``not_admitted_cap``, ``lookup_repeated_loss``, a sticky
  stop's code ...);
- ``consume(permit, body_digest)``: once, just before the single send;
- ``settle(permit, settlement, raw_usage, raw_tier)``: once per admitted request;
- ``stop(code)``: close admission for good (sticky).

A real source must persist the hold before it grants a permit, bind permits to its live
epoch, worker, slot, round, sequence, payload digest and reservation, reject a digest
mismatch, a reused permit and a stale epoch, keep stops sticky, and retain unknown or
lost reservations. The durable one is spend controller II's; nothing here is one.

`TestOnlyPermitSource` (brand ``lookup-faux-test-only-v1``, ``test_only = True``) is
in-memory and non-durable, for tests and the offline smoke only: it keeps a
`continuity.spend.account.CapAccount`, and `assert_real_permit_source` refuses it
(``lookup_permit_source_test_only``). A brand is not an authorization credential: a
future real route must also validate its authorization independently.

Outcome kinds and what they do to the hold:

======================  ==========================================  ====================
kind                    hold                                        stop policy
======================  ==========================================  ====================
refused_pre_send        none for this request; no settlement        a capacity or
                                                                    terminal refusal
                                                                    continues
own_abort_after_send    retained as lost                            continue; slot
                                                                    terminal
settled                 replaced by the actual catalog cost         continue
lost                    retained (an admitted abort before the      continue; slot
                        send included)                              terminal
integrity_stop          retained                                    sticky pilot stop
======================  ==========================================  ====================

No body, response text or credential enters a permit record: digests, ids, counts and
money only.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Literal, Protocol, runtime_checkable

import msgspec

from continuity.errors import SpendError
from continuity.spend.account import CapAccount
from continuity.spend.usage import UsageRecord

__all__ = [
    "FAUX_BRAND",
    "OUTCOME_KINDS",
    "PERMIT_CONTRACT",
    "OutcomeKind",
    "Permit",
    "PermitSource",
    "Refusal",
    "Settlement",
    "TestOnlyPermitSource",
    "apply_settlement",
    "assert_real_permit_source",
    "check_consumable",
    "grant",
]

PERMIT_CONTRACT = "lookup-permit-v1"
FAUX_BRAND = "lookup-faux-test-only-v1"
OutcomeKind = Literal[
    "refused_pre_send", "own_abort_after_send", "settled", "lost", "integrity_stop"
]
OUTCOME_KINDS: tuple[OutcomeKind, ...] = (
    "refused_pre_send",
    "own_abort_after_send",
    "settled",
    "lost",
    "integrity_stop",
)


class Permit(msgspec.Struct, frozen=True, kw_only=True):
    """An opaque grant: what the source bound it to."""

    permit_id: str
    epoch: str
    request_id: str
    slot_id: str
    round: int
    payload_digest: str
    rmax: str  # USD


class Refusal(msgspec.Struct, frozen=True):
    """An admission refused: a capacity or terminal refusal (`policy` False) lets the
    pilot continue; a policy violation (`policy` True) stops it."""

    code: str
    policy: bool = False


class Settlement(msgspec.Struct, frozen=True, kw_only=True):
    """How an admitted request ended: its kind, the code (lost / stop), the cost (USD
    text, settled only)."""

    kind: OutcomeKind
    code: str | None = None
    cost: str | None = None


@runtime_checkable
class PermitSource(Protocol):
    brand: str
    test_only: bool

    async def admit(
        self, request_id: str, slot_id: str, round: int, payload_digest: str, rmax: Decimal
    ) -> Permit | Refusal: ...

    async def consume(self, permit: Permit, body_digest: str) -> None: ...

    async def settle(
        self,
        permit: Permit,
        settlement: Settlement,
        raw_usage: UsageRecord | None,
        raw_tier: str | None,
    ) -> None: ...

    async def stop(self, code: str) -> None: ...


def grant(
    account: CapAccount,
    request: tuple[str, str, int, str],
    rmax: Decimal,
    *,
    permit_id: str,
    epoch: str,
) -> Permit | Refusal:
    """Admission against `account` for `request` (request id, slot id, round, payload
    digest): the hold, then the permit; or the refusal (a policy one for a different
    Rmax or a reused request id), with the account unchanged."""
    request_id, slot_id, round_, payload_digest = request
    if rmax != account.rmax:
        return Refusal("lookup_permit_rmax_mismatch", policy=True)
    refused = account.admit(request_id, slot_id)  # the hold, before the grant
    if refused is not None:
        return Refusal(refused, policy=refused == "lookup_permit_reused")
    return Permit(
        permit_id=permit_id,
        epoch=epoch,
        request_id=request_id,
        slot_id=slot_id,
        round=round_,
        payload_digest=payload_digest,
        rmax=str(rmax),
    )


def check_consumable(permit: Permit, body_digest: str, *, consumed: bool) -> None:
    """A permit is consumed once, and only for the payload it admitted.

    Raises:
        SpendError: ``lookup_permit_reused``, ``lookup_permit_digest_mismatch``.
    """
    if consumed:
        raise SpendError(
            "the permit was already consumed",
            code="lookup_permit_reused",
            location="consume",
            outcome="integrity_stop",
        )
    if body_digest != permit.payload_digest:
        raise SpendError(
            "the body digest differs from the admitted payload digest",
            code="lookup_permit_digest_mismatch",
            location="consume",
            outcome="integrity_stop",
        )


def apply_settlement(account: CapAccount, request_id: str, settlement: Settlement) -> None:
    """Settle or retain `request_id`'s hold; an integrity stop also stops admission."""
    cost = None if settlement.cost is None else Decimal(settlement.cost)
    if settlement.kind == "settled" and cost is not None:
        account.settle(request_id, cost)
    else:  # a known cost of a retained request is its known partial
        account.retain(request_id, settlement.kind, partial=cost)
    if settlement.kind == "integrity_stop":
        account.stop(settlement.code or "lookup_integrity_stop")


class TestOnlyPermitSource:
    """In-memory permits against a cap (test-only; never a real source)."""

    brand = FAUX_BRAND
    test_only = True
    __test__ = False  # not a pytest test class

    def __init__(self, cap: Decimal, rmax: Decimal, *, epoch: str = "epoch-1") -> None:
        self.account = CapAccount(cap, rmax)
        self.epoch = epoch
        self.issued: dict[str, Permit] = {}
        self.consumed: set[str] = set()
        self.settled: dict[str, tuple[Settlement, UsageRecord | None, str | None]] = {}
        self.stops: list[str] = []
        self.log: list[tuple[str, str]] = []  # (operation, request id or code), in order
        self._ids = itertools.count(1)

    async def admit(
        self, request_id: str, slot_id: str, round: int, payload_digest: str, rmax: Decimal
    ) -> Permit | Refusal:
        self.log.append(("admit", request_id))
        permit = grant(
            self.account,
            (request_id, slot_id, round, payload_digest),
            rmax,
            permit_id=f"permit-{next(self._ids)}",
            epoch=self.epoch,
        )
        if isinstance(permit, Permit):
            self.issued[permit.permit_id] = permit
        return permit

    def _known(self, permit: Permit, where: str) -> Permit:
        issued = self.issued.get(permit.permit_id)
        if issued is None or issued != permit or permit.epoch != self.epoch:
            raise SpendError(
                "a permit this source did not issue in its live epoch",
                code="lookup_permit_stale",
                location=where,
                outcome="integrity_stop",
            )
        return issued

    async def consume(self, permit: Permit, body_digest: str) -> None:
        self.log.append(("consume", permit.request_id))
        issued = self._known(permit, "consume")
        check_consumable(issued, body_digest, consumed=issued.permit_id in self.consumed)
        self.consumed.add(issued.permit_id)

    async def settle(
        self,
        permit: Permit,
        settlement: Settlement,
        raw_usage: UsageRecord | None,
        raw_tier: str | None,
    ) -> None:
        self.log.append(("settle", permit.request_id))
        issued = self._known(permit, "settle")
        if issued.permit_id in self.settled:
            raise SpendError(
                "the permit was already settled",
                code="lookup_permit_reused",
                location="settle",
                outcome="integrity_stop",
            )
        self.settled[issued.permit_id] = (settlement, raw_usage, raw_tier)
        apply_settlement(self.account, issued.request_id, settlement)

    async def stop(self, code: str) -> None:
        self.log.append(("stop", code))
        self.stops.append(code)
        self.account.stop(code)


def assert_real_permit_source(source: object) -> PermitSource:
    """`source`, after checking it is a real permit source.

    Raises:
        SpendError: ``lookup_permit_source_test_only`` (the test-only source, or any
            source that says it is test-only), ``lookup_permit_source_invalid`` (not a
            ``lookup-permit-v1`` source).
    """
    if not isinstance(source, PermitSource):
        raise SpendError(
            f"{type(source).__name__} does not implement {PERMIT_CONTRACT}",
            code="lookup_permit_source_invalid",
            location=type(source).__name__,
        )
    if source.test_only is not False or source.brand in (FAUX_BRAND, ""):
        raise SpendError(
            "a test-only permit source cannot admit a real request",
            code="lookup_permit_source_test_only",
            location=source.brand or type(source).__name__,
        )
    return source
