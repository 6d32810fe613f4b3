"""A real run's two shared accounts, kept in a shared store so every worker of a cluster
holds against the same ones: the cost-cap account and the invocation ledger.

Locally both are SQLite files in the run's ``--out`` (`continuity.providers.costcap`,
`continuity.providers.cache.Ledger`), which every process of one machine shares. A run
whose units go to a Dask cluster over a shared store (`continuity.runner.cluster`)
keeps them instead as one document each in that store, under ``accounts/``, named by a
*shared ref*: ``shared:<store URL>#accounts/<name>.json`` (`shared_ref`). Every
operation reads the document, applies itself, and writes it back only if nobody wrote
it meanwhile (`continuity.store.backends.swap`: a file lock locally, S3's
``If-Match``); else it reads and applies itself again. So a hold is in the account,
next to every other worker's, **before** its request is sent, and two workers can never
both take the last dollar under the cap.

`SharedCostCap` keeps the local account's rules exactly (`continuity.holds`: the hold
arithmetic, the cap rule, ``late_close``), its stored cap and recorded changes, its
rates, its sticky stop and its recovery: a hold still active from an invocation that
ended is retained by the next one, and its own invocation may still settle it. Holds
that can never change again are folded into running totals: settled, released, and
retained by their own invocation (which then forgets the hold, so no late settlement
can come for it, here or locally). The document holds the holds in flight and those a
newer invocation retained, nothing more. The ledger is
`continuity.providers.shared_ledger`, over the same `SharedDocument`.

A backend failure is ``cost_cap_account_failed`` (it stops admission, as a failing
SQLite file does), a document that does not decode is ``cost_cap_account_invalid``;
for the ledger both are ``object_corrupt`` at its ref.
"""

from __future__ import annotations

import contextlib
import getpass
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Generic, TypeVar

import msgspec

from continuity.errors import ContinuityError, ProviderError
from continuity.holds import (
    EXACT,
    HoldAccount,
    HoldRecord,
    HoldState,
    Key,
    MemoryBook,
    counted,
    exceeds,
)
from continuity.messages import ModelRequest
from continuity.providers.cap_changes import CapChange
from continuity.providers.costcap import CallHolds, CapTotals, CostCap, cap_mismatch
from continuity.providers.rates import RateCard
from continuity.store import Backend, open_backend, swap

if TYPE_CHECKING:
    from continuity.providers.costcap import HoldingAccount

__all__ = [
    "ENDED",
    "SHARED_PREFIX",
    "SharedCostCap",
    "SharedDocument",
    "is_shared",
    "open_account",
    "shared_ref",
]

SHARED_PREFIX = "shared:"

_Doc = TypeVar("_Doc", bound=msgspec.Struct)
ENDED = "invocation_ended"  # the reason a newer invocation retains an older one's holds


def shared_ref(store_url: str, name: str) -> str:
    """The shared ref of document `name` (``accounts/...``) in the store at `store_url`."""
    return f"{SHARED_PREFIX}{store_url}#{name}"


def is_shared(ref: str) -> bool:
    """Whether `ref` names a shared document rather than a local file."""
    return ref.startswith(SHARED_PREFIX)


def open_account(ref: str, invocation: str) -> HoldingAccount:
    """A worker's handle on the run's cost-cap account: the shared one `ref` names, or
    the local SQLite file at `ref`.

    Raises:
        ProviderError: ``cost_cap_account_invalid``, ``cost_cap_account_failed``.
    """
    return SharedCostCap.open(ref, invocation) if is_shared(ref) else CostCap.open(ref, invocation)


def _open(ref: str) -> tuple[Backend, str]:
    url, _, name = ref.removeprefix(SHARED_PREFIX).rpartition("#")
    return open_backend(url), name


class _Hold(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    amount: str
    state: HoldState
    cost: str | None = None
    reason: str | None = None
    model: str = ""
    invocation: str = ""


class _Account(msgspec.Struct, kw_only=True):
    """The cost-cap document: the cap, the stop, the rates, the recorded cap changes,
    the holds that may still change (active, retained) and the folded rest."""

    cap: str | None = None
    stopped: str | None = None
    rates: dict[str, RateCard] = msgspec.field(default_factory=dict)
    changes: list[CapChange] = msgspec.field(default_factory=list)
    holds: list[_Hold] = msgspec.field(default_factory=list)
    settled: str = "0"
    settled_calls: int = 0
    retained: str = "0"  # holds their own invocation retained: final, so folded
    retained_calls: int = 0
    released: int = 0
    next_key: int = 1


class SharedDocument(Generic[_Doc]):
    """One document in a shared store (its shared ref), changed only by compare and
    swap; a backend failure or an undecodable document as `failed` makes it."""

    def __init__(self, ref: str, kind: type[_Doc], failed: Callable[[str], Exception]) -> None:
        self.ref = ref
        self.kind = kind
        self._failed = failed
        with self._guard():
            self.backend, self.name = _open(ref)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except ContinuityError as exc:
            if exc.code in ("store_backend_failed", "store_backend_unsupported",
                            "store_ref_contended"):  # fmt: skip
                raise self._failed(f"{exc.code}: {exc.message}") from None
            raise

    def read(self) -> _Doc | None:
        with self._guard():
            found = self.backend.get(self.name)
        return None if found is None else self._decode(found[0])

    def change(self, apply: Callable[[_Doc | None], _Doc | None]) -> _Doc | None:
        """Apply `apply` to the document as read (None: absent) and write what it
        returns by compare and swap, again until no other writer came between."""
        written: list[_Doc] = []

        def step(data: bytes | None) -> bytes | None:
            new = apply(None if data is None else self._decode(data))
            written[:] = [] if new is None else [new]
            return None if new is None else msgspec.json.encode(new)

        with self._guard():
            swap(self.backend, self.name, step)
        return written[0] if written else None

    def _decode(self, data: bytes) -> _Doc:
        try:
            return msgspec.json.decode(data, type=self.kind)
        except msgspec.MsgspecError as exc:
            raise self._failed(f"undecodable: {exc}") from None


class SharedCostCap:
    """A run's cost-cap account in a shared store (module doc); the interface of
    `continuity.providers.costcap.CostCap`, which `CallHolds` holds against."""

    def __init__(self, ref: str, invocation: str) -> None:
        self.path = ref  # where errors point, as the local account's path
        self.invocation = invocation
        self._doc: SharedDocument[_Account] = SharedDocument(ref, _Account, self._error)
        self._cards: dict[str, RateCard] = {}

    def _error(self, problem: str) -> ProviderError:
        invalid = problem.startswith("undecodable")
        return ProviderError(
            f"the shared cost-cap account {'is not readable' if invalid else 'failed'}: {problem}",
            code="cost_cap_account_invalid" if invalid else "cost_cap_account_failed",
            location=self.path,
        )

    @classmethod
    def create(
        cls,
        ref: str,
        *,
        cap: Decimal | None,
        rates: Mapping[str, RateCard],
        invocation: str,
        raise_cap: bool = False,
    ) -> SharedCostCap:
        """Open (or create) the account for a new invocation, as `CostCap.create` does.

        Raises:
            RealModeError: ``cost_cap_mismatch`` (at ``--cost-cap``).
            ProviderError: ``cost_cap_account_invalid``, ``cost_cap_account_failed``.
        """
        account = cls(ref, invocation)

        def start(doc: _Account | None) -> _Account:
            doc = doc or _Account()
            if cap is not None and (doc.cap is None or Decimal(doc.cap) != cap):
                if doc.cap is not None:
                    if not raise_cap:
                        raise cap_mismatch(ref, doc.cap, cap)
                    doc.changes.append(_change(invocation, doc.cap, str(cap)))
                doc.cap = str(cap)
            doc.rates.update(rates)
            doc.holds = [
                msgspec.structs.replace(hold, state="retained", reason=ENDED)
                if hold.state == "active" and hold.invocation != invocation
                else hold
                for hold in doc.holds
            ]
            return doc

        account._doc.change(start)
        return account

    @classmethod
    def open(cls, ref: str, invocation: str) -> SharedCostCap:
        """A worker's handle on an account the run created.

        Raises:
            ProviderError: ``cost_cap_account_invalid`` (it does not exist).
        """
        account = cls(ref, invocation)
        if account._doc.read() is None:
            raise ProviderError(
                "the run's shared cost-cap account is missing",
                code="cost_cap_account_invalid",
                location=ref,
            )
        return account

    def close(self) -> None:
        return None  # nothing held open between operations

    def exists(self) -> bool:
        """Whether the account was created."""
        return self._doc.read() is not None

    def card(self, model: str) -> RateCard:
        if model not in self._cards:
            doc = self._doc.read()
            card = doc.rates.get(model) if doc is not None else None
            if card is None:
                raise ProviderError(
                    f"the cost-cap account has no rates for {model!r}",
                    code="cost_cap_price_unknown",
                    location=self.path,
                )
            self._cards[model] = card
        return self._cards[model]

    def hold(self, model: str, amount: Decimal) -> Key:
        """Persist an active hold of `amount`, or refuse (``cost_cap_reached``, or the
        account's sticky stop) without writing one."""
        held: list[Key] = []

        def take(doc: _Account | None) -> _Account:
            doc = _existing(doc, self.path)
            if doc.stopped is not None:
                raise ProviderError(
                    f"the cost-cap account stopped: {doc.stopped}",
                    code=doc.stopped.split(":", 1)[0],
                    location=self.path,
                )
            folded = EXACT.add(Decimal(doc.settled), Decimal(doc.retained))
            committed = EXACT.add(folded, _hold_account(doc).committed())
            if exceeds(committed, amount, None if doc.cap is None else Decimal(doc.cap)):
                raise ProviderError(
                    f"a request of up to ${amount} would take committed spend "
                    f"${committed} past the ${doc.cap} cap; no new request is admitted",
                    code="cost_cap_reached",
                    location=self.path,
                )
            key = str(doc.next_key)
            doc.holds.append(_Hold(key=key, amount=str(amount), state="active", model=model,
                                   invocation=self.invocation))  # fmt: skip
            doc.next_key += 1
            held[:] = [key]
            return doc

        self._doc.change(take)
        return held[0]

    def close_hold(
        self, hold: Key, state: str, *, cost: Decimal | None = None, reason: str | None = None
    ) -> None:
        """Settle (with `cost`), retain or release a hold that is not closed yet; a
        closed one is left as it is."""

        def close(doc: _Account | None) -> _Account | None:
            doc = _existing(doc, self.path)
            account = _hold_account(doc)
            if state == "settled":
                assert cost is not None
                changed = account.settle(hold, cost, reason)
            elif state == "retained":
                changed = account.retain(hold, cost, reason)
            else:
                assert state == "released", state
                changed = account.release(hold, reason)
            return _fold(doc, account.book.records()) if changed else None

        self._doc.change(close)

    def stop(self, reason: str) -> None:
        """Stop the account for good (the first reason is kept)."""

        def stop(doc: _Account | None) -> _Account | None:
            doc = _existing(doc, self.path)
            if doc.stopped is not None:
                return None
            doc.stopped = reason
            return doc

        self._doc.change(stop)

    def totals(self) -> CapTotals:
        doc = _existing(self._doc.read(), self.path)
        open_holds = _hold_account(doc).tally()
        settled = EXACT.add(Decimal(doc.settled), open_holds.settled)
        retained = EXACT.add(Decimal(doc.retained), open_holds.retained)
        committed = EXACT.add(EXACT.add(settled, retained), open_holds.active)
        return CapTotals(
            cap=doc.cap,
            settled=str(settled),
            retained=str(retained),
            active=str(open_holds.active),
            committed=str(committed),
            settled_calls=doc.settled_calls + open_holds.settled_calls,
            retained_calls=doc.retained_calls + open_holds.retained_calls,
            released_attempts=doc.released + open_holds.released,
            stopped=doc.stopped,
            cap_changes=tuple(doc.changes),
        )

    def call(self, model: str, request: ModelRequest, max_output: int) -> CallHolds:
        """The holds of one request's attempts (see `CallHolds`)."""
        return CallHolds(self, model, request, max_output)


def _existing(doc: _Account | None, where: str) -> _Account:
    if doc is None:
        raise ProviderError(
            "the run's shared cost-cap account is missing",
            code="cost_cap_account_invalid",
            location=where,
        )
    return doc


def _hold_account(doc: _Account) -> HoldAccount:
    """The document's open holds (active, retained) as a hold account (``late_close``,
    as locally); its committed total leaves out the folded settled spend."""
    records = [
        HoldRecord(
            h.key,
            Decimal(h.amount),
            h.state,
            None if h.cost is None else Decimal(h.cost),
            h.reason,
            {"model": h.model, "invocation": h.invocation},
        )
        for h in doc.holds
    ]
    return HoldAccount(MemoryBook(records), late_close=True)


def _fold(doc: _Account, records: list[HoldRecord]) -> _Account:
    """Write `records` back, folding into the running totals the holds that can no
    longer change: settled, released, and retained by their own invocation (its
    `CallHolds` forgets a hold once it is retained). A hold a newer invocation retained
    (``invocation_ended``) stays, since its own invocation may still settle it."""
    holds = []
    settled, retained = Decimal(doc.settled), Decimal(doc.retained)
    for record in records:
        if record.state == "settled":
            settled = EXACT.add(settled, counted(record.state, record.amount, record.cost))
            doc.settled_calls += 1
        elif record.state == "released":
            doc.released += 1
        elif record.state == "retained" and record.reason != ENDED:
            retained = EXACT.add(retained, counted(record.state, record.amount, record.cost))
            doc.retained_calls += 1
        else:
            holds.append(
                _Hold(
                    key=str(record.key),
                    amount=str(record.amount),
                    state=record.state,
                    cost=None if record.cost is None else str(record.cost),
                    reason=record.reason,
                    model=str(record.tags.get("model", "")),
                    invocation=str(record.tags.get("invocation", "")),
                )
            )
    doc.holds = holds
    doc.settled, doc.retained = str(settled), str(retained)
    return doc


def _change(invocation: str, old: str, new: str) -> CapChange:
    try:
        who = f"{getpass.getuser()}@{socket.gethostname()}"
    except (KeyError, OSError):
        who = f"unknown@{socket.gethostname()}"
    return CapChange(who=who, invocation=invocation, at=time.time(), old=old, new=new)
