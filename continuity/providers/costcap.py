"""The run cost cap: a hold persisted before every real send, settled from its usage.

`doit units --real --cost-cap USD` gives a run one account, ``<out>/.spend/cost-cap.sqlite3``,
shared by every process of the run and every invocation that resumes it. Every real
request (reader, compaction summarizer, judge, ledger extraction) goes through
`HttpProvider`, and each HTTP **attempt** of it goes through `CallHolds`:

1. **hold** (before the send, committed with ``synchronous=FULL``): the attempt's maximum
   list price, ``U x r_in + max_output x r_out``, where ``U`` is the body's UTF-8 bytes
   plus a framing allowance (`FRAMING`), ``r_in`` the highest input-side rate of the
   model (input, cache read, cache write, in any tier) and ``r_out`` its highest output
   rate. It is admitted only if settled + retained + active holds + it stays within the
   cap; otherwise ``cost_cap_reached`` (which stops admission: no new live turn);
2. **release**: the endpoint never got the request (no connection) or answered it with
   an error status before any generation (401, 429, 5xx): providers do not bill those,
   which is also why `HttpProvider` retries only there;
3. **settle**: the stream completed with its usage reported; that usage, priced at the
   catalog's list rates with the tier rule, replaces the hold (a cache rate the catalog
   does not know is priced at the model's highest input-side rate, an upper bound);
4. **retain**: anything else after the send (a lost stream, a cut connection, a
   cancelled consumer, a process killed mid-call, a completed stream that reported no
   usage) keeps the whole hold counted.

A hold still **active** when its invocation ended (the process was SIGKILLed) is
retained by the next invocation that opens the account: nobody knows what the endpoint
billed, so its maximum stays counted. (Two invocations running at once on one output
directory is the one case where a retained hold can still settle: the newer one retains
the older one's active holds, conservatively, and the older one's settlement then
replaces its own hold.)

A resumed run therefore starts with every retained hold in its total; the call cache
replays the calls that finished, for free. A failure of the account file itself (locked
past the timeout, disk full) is ``cost_cap_account_failed``, which stops admission like
a reached cap.

**The cap is the account's**: the first ``--cost-cap`` is stored, an invocation without
one keeps it, and a different one is ``cost_cap_mismatch`` unless it comes with
``--raise-cap``, which records the change in the account (`continuity.providers.
cap_changes`: who, when, old and new) in the transaction that stores the new cap.

The hold's bounds are checked at settlement: reported input above ``U``, output above
``max_output``, or a price above the hold breaks an assumption the cap relies on. The
settlement is recorded (at the higher figure) and the account stops for good
(``cost_cap_assumption_broken``): the cap cannot undo spend that already happened.

Amounts are exact `decimal.Decimal` text (an inexact operation raises), never floats.
The rates are list prices from the run's pricing catalog, stored in the account when
the run starts, so every process prices alike.

The hold arithmetic, the cap rule and the holds table's reads and writes are
`continuity.holds` (shared with the pilot's cap account), over this file's ``holds``
table with ``late_close=True``: a hold a newer invocation retained can still be closed
by its own invocation (above). The account row, the rates, the stop and the cap
changes are this module's.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import msgspec

from continuity.errors import ProviderError, RealModeError
from continuity.holds import HoldAccount, HoldTable, Key, Over, SqliteBook
from continuity.messages import ModelRequest, Usage
from continuity.providers.cap_changes import (
    CAP_CHANGES_SCHEMA,
    CapChange,
    read_changes,
    record_change,
)
from continuity.providers.rates import EXACT, MILLION, RateCard, RateTier, price_usage
from continuity.sqlite_open import COST_CAP, apply_pragmas, connect

__all__ = [
    "ACCOUNT_NAME",
    "FRAMING",
    "CallHolds",
    "CapChange",
    "CapTotals",
    "CostCap",
    "Framing",
    "HoldingAccount",
    "RateCard",
    "RateTier",
    "cap_mismatch",
    "price_usage",
]

ACCOUNT_NAME = "cost-cap.sqlite3"


class Framing(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens a request may cost beyond its body's bytes (role markers, tool framing)."""

    per_request: int = 4_096
    per_message: int = 256
    per_tool: int = 1_024


FRAMING = Framing()


class CapTotals(msgspec.Struct, frozen=True, kw_only=True):
    """The account at one moment: dollars as decimal text, counts of holds, and every
    change of its cap, oldest first."""

    cap: str | None
    settled: str
    retained: str
    active: str
    committed: str
    settled_calls: int
    retained_calls: int
    released_attempts: int
    stopped: str | None
    cap_changes: tuple[CapChange, ...] = ()

    def line(self) -> str:
        cap = f"${self.cap}" if self.cap is not None else "none"
        stop = f"; stopped: {self.stopped}" if self.stopped else ""
        return (
            f"cost cap {cap}: ${self.committed} committed (${self.settled} settled over "
            f"{self.settled_calls} calls, ${self.retained} retained over "
            f"{self.retained_calls} lost calls, ${self.active} in flight; "
            f"{self.released_attempts} unbilled attempts released){stop}"
            + "".join(f"; {change.line()}" for change in self.cap_changes)
        )


# How the account's holds table maps onto `continuity.holds` (the file format is fixed).
_HOLDS = HoldTable(key="id", reason="reason", opened="opened", closed="closed")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS account (
    id INTEGER PRIMARY KEY CHECK (id = 1), cap TEXT, stopped TEXT);
CREATE TABLE IF NOT EXISTS rates (model TEXT PRIMARY KEY, card BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS holds (
    id INTEGER PRIMARY KEY AUTOINCREMENT, invocation TEXT NOT NULL, model TEXT NOT NULL,
    amount TEXT NOT NULL, state TEXT NOT NULL
        CHECK (state IN ('active', 'settled', 'retained', 'released')),
    cost TEXT, reason TEXT, opened REAL NOT NULL, closed REAL);
"""


class CostCap:
    """One process's connection to a run's account (thread-safe; see the module doc)."""

    def __init__(self, path: Path, invocation: str) -> None:
        self.path = path
        self.invocation = invocation
        self._lock = threading.Lock()
        self._db = connect(path, COST_CAP)
        self._cards: dict[str, RateCard] = {}
        # late_close: a hold a newer invocation retained may still be settled (module doc)
        self._holds = HoldAccount(
            SqliteBook(self._db, _HOLDS, self._failed, {"invocation": invocation}),
            late_close=True,
        )
        try:
            apply_pragmas(self._db, COST_CAP)
            self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise ProviderError(
                f"the cost-cap account is not readable: {exc}",
                code="cost_cap_account_invalid",
                location=str(path),
            ) from None

    @classmethod
    def create(
        cls,
        path: Path,
        *,
        cap: Decimal | None,
        rates: Mapping[str, RateCard],
        invocation: str,
        raise_cap: bool = False,
    ) -> CostCap:
        """Open (or create) the account for a new invocation: store `cap` when given (a
        resumed run without one keeps the stored cap; another cap needs `raise_cap`, and
        is recorded), the rates, and retain every hold an earlier invocation left active
        (module doc). A refusal writes nothing.

        Raises:
            RealModeError: ``cost_cap_mismatch`` (at ``--cost-cap``).
            ProviderError: ``cost_cap_account_invalid``, ``cost_cap_account_failed``.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        account = cls(path, invocation)
        try:
            account._start(cap, rates, raise_cap)
        except BaseException:
            account.close()
            raise
        return account

    def _start(self, cap: Decimal | None, rates: Mapping[str, RateCard], raise_cap: bool) -> None:
        db = self._db
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA + CAP_CHANGES_SCHEMA)
        with self._transaction():  # the cap check and its change: one transaction
            db.execute("INSERT OR IGNORE INTO account VALUES (1, NULL, NULL)")
            if cap is not None:
                self._set_cap(cap, raise_cap)
            for model, card in rates.items():
                db.execute(
                    "INSERT OR REPLACE INTO rates VALUES (?, ?)",
                    (model, msgspec.json.encode(card)),
                )
            self._book.retain_active("invocation_ended", unless=("invocation", self.invocation))

    def _set_cap(self, cap: Decimal, raise_cap: bool) -> None:
        """Inside a transaction: store `cap`. Changing a stored cap needs `raise_cap`,
        and the change is recorded (`CapChange`)."""
        (stored,) = self._db.execute("SELECT cap FROM account").fetchone()
        if stored is not None and Decimal(stored) == cap:
            return
        if stored is not None and not raise_cap:
            raise cap_mismatch(str(self.path), stored, cap)
        if stored is not None:
            record_change(self._db, self.invocation, stored, str(cap))
        self._db.execute("UPDATE account SET cap = ?", (str(cap),))

    @classmethod
    def open(cls, path: str | Path, invocation: str) -> CostCap:
        """A worker's connection to an account the run created."""
        if not Path(path).is_file():
            raise ProviderError(
                "the run's cost-cap account is missing",
                code="cost_cap_account_invalid",
                location=str(path),
            )
        return cls(Path(path), invocation)

    def close(self) -> None:
        self._db.close()

    @property
    def _book(self) -> SqliteBook:
        book = self._holds.book
        assert isinstance(book, SqliteBook)
        return book

    def _transaction(self) -> _Immediate:
        return _Immediate(self._db, self._lock, self.path)

    def _failed(self, exc: sqlite3.Error) -> ProviderError:
        return _failed(exc, self.path)

    def _read(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """A read of the account; an SQLite failure is ``cost_cap_account_failed``."""
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def card(self, model: str) -> RateCard:
        if model not in self._cards:
            rows = self._read("SELECT card FROM rates WHERE model = ?", (model,))
            row = rows[0] if rows else None
            if row is None:
                raise ProviderError(
                    f"the cost-cap account has no rates for {model!r}",
                    code="cost_cap_price_unknown",
                    location=str(self.path),
                )
            self._cards[model] = msgspec.json.decode(row[0], type=RateCard)
        return self._cards[model]

    def hold(self, model: str, amount: Decimal) -> int:
        """Persist an active hold of `amount`, or refuse (``cost_cap_reached``, or the
        account's sticky stop) without writing one."""
        with self._transaction() as db:
            cap, stopped = db.execute("SELECT cap, stopped FROM account").fetchone()
            if stopped is not None:
                raise ProviderError(
                    f"the cost-cap account stopped: {stopped}",
                    code=stopped.split(":", 1)[0],
                    location=str(self.path),
                )
            held = self._holds.hold(
                amount, None if cap is None else Decimal(cap), tags={"model": model}
            )
            if isinstance(held, Over):
                raise ProviderError(
                    f"a request of up to ${amount} would take committed spend "
                    f"${held.committed} past the ${cap} cap; no new request is admitted",
                    code="cost_cap_reached",
                    location=str(self.path),
                )
            assert isinstance(held, int)
            return held

    def close_hold(
        self, hold: Key, state: str, *, cost: Decimal | None = None, reason: str | None = None
    ) -> None:
        """Settle (with `cost`), retain or release a hold that is not closed yet (an
        active one, or one a newer invocation retained); a closed one is left as it is."""
        with self._transaction():
            if state == "settled":
                assert cost is not None
                self._holds.settle(hold, cost, reason)
            elif state == "retained":
                self._holds.retain(hold, cost, reason)
            else:
                assert state == "released", state
                self._holds.release(hold, reason)

    def stop(self, reason: str) -> None:
        """Stop the account for good (the first reason is kept)."""
        with self._transaction() as db:
            db.execute("UPDATE account SET stopped = ? WHERE stopped IS NULL", (reason,))

    def totals(self) -> CapTotals:
        with self._transaction() as db:  # one consistent view
            cap, stopped = db.execute("SELECT cap, stopped FROM account").fetchone()
            tally = self._holds.tally()
            changes = read_changes(db)
        return CapTotals(
            cap=cap,
            settled=str(tally.settled),
            retained=str(tally.retained),
            active=str(tally.active),
            committed=str(tally.committed),
            settled_calls=tally.settled_calls,
            retained_calls=tally.retained_calls,
            released_attempts=tally.released,
            stopped=stopped,
            cap_changes=changes,
        )

    def call(self, model: str, request: ModelRequest, max_output: int) -> CallHolds:
        """The holds of one request's attempts (see `CallHolds`)."""
        return CallHolds(self, model, request, max_output)


def cap_mismatch(account: str, stored: str, cap: Decimal) -> RealModeError:
    """``cost_cap_mismatch``: `cap` given to a run whose account holds `stored`."""
    return RealModeError(
        f"this run's cost-cap account ({account}) holds a ${stored} cap, not "
        f"${cap}: every invocation of a run shares one cap. Give --cost-cap {stored} "
        f"(or none) to keep it, or add --raise-cap to change it to ${cap} (the "
        "change is recorded in the account)",
        code="cost_cap_mismatch",
        location="--cost-cap",
    )


class HoldingAccount(Protocol):
    """What `CallHolds` holds against: this module's `CostCap` (an SQLite file) or a
    run's account in a shared store (`continuity.providers.shared_accounts`)."""

    path: Any

    def card(self, model: str) -> RateCard: ...

    def hold(self, model: str, amount: Decimal) -> Key: ...

    def close_hold(
        self, hold: Key, state: str, *, cost: Decimal | None = None, reason: str | None = None
    ) -> None: ...

    def stop(self, reason: str) -> None: ...

    def totals(self) -> CapTotals: ...

    def close(self) -> None: ...

    def call(self, model: str, request: ModelRequest, max_output: int) -> CallHolds: ...


class CallHolds:
    """One request's attempts against the account: `HttpProvider` calls `before_send`
    before each attempt, then exactly one of `not_billed`, `settle` or `close` (which
    retains whatever hold is still open)."""

    def __init__(
        self, account: HoldingAccount, model: str, request: ModelRequest, max_output: int
    ) -> None:
        self.account = account
        self.model = model
        self.max_output = max_output
        self.framing = (
            FRAMING.per_request
            + FRAMING.per_message * (len(request.messages) + 1)
            + FRAMING.per_tool * len(request.tools)
        )
        self.bound = 0  # U of the attempt in flight
        self.amount = Decimal(0)
        self._hold: Key | None = None

    def before_send(self, body: bytes) -> None:
        card = self.account.card(self.model)
        rate_in, rate_out = card.worst_rates()
        self.bound = len(body) + self.framing
        worst = EXACT.add(
            EXACT.multiply(Decimal(self.bound), rate_in),
            EXACT.multiply(Decimal(self.max_output), rate_out),
        )
        self.amount = EXACT.divide(worst, MILLION)
        self._hold = self.account.hold(self.model, self.amount)

    def not_billed(self, reason: str) -> None:
        """The attempt never reached generation (no connection, an error status)."""
        if self._hold is not None:
            self.account.close_hold(self._hold, "released", reason=reason)
            self._hold = None

    def settle(self, usage: Usage) -> None:
        """The stream completed: its usage's price replaces the hold; a bound it broke
        stops the account (module doc)."""
        if self._hold is None:
            return
        cost = price_usage(self.account.card(self.model).bounded(), usage)
        broken = []
        if usage.total_input > self.bound:
            broken.append(f"input {usage.total_input} > bound {self.bound}")
        if usage.output > self.max_output:
            broken.append(f"output {usage.output} > max_output {self.max_output}")
        if cost is None:
            broken.append("a rate the usage needs is unknown")
        elif cost > self.amount:
            broken.append(f"price ${cost} > hold ${self.amount}")
        settled = self.amount if cost is None else max(cost, self.amount if broken else cost)
        self.account.close_hold(self._hold, "settled", cost=settled)
        self._hold = None
        if broken:
            self.account.stop("cost_cap_assumption_broken: " + "; ".join(broken))

    def close(self, reason: str = "lost") -> None:
        """Retain the open hold, if any: the request may have been billed."""
        if self._hold is not None:
            self.account.close_hold(self._hold, "retained", reason=reason)
            self._hold = None


class _Immediate:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) under the lock; an
    SQLite failure is ``cost_cap_account_failed`` (it stops admission)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock, path: Path) -> None:
        self._db = db
        self._lock = lock
        self._path = path

    def _failed(self, exc: sqlite3.Error) -> ProviderError:
        return _failed(exc, self._path)

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self._lock.release()
            raise self._failed(exc) from None
        except BaseException:
            self._lock.release()
            raise
        return self._db

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        try:
            self._db.execute("ROLLBACK" if kind is not None else "COMMIT")
        except sqlite3.Error as exc:
            if kind is None:
                raise self._failed(exc) from None
        finally:
            self._lock.release()
        if isinstance(error, sqlite3.Error):
            raise self._failed(error) from None


def _failed(exc: sqlite3.Error, path: Path) -> ProviderError:
    """An SQLite failure of the account: ``cost_cap_account_failed`` (it stops admission)."""
    return ProviderError(
        f"the cost-cap account failed: {exc}",
        code="cost_cap_account_failed",
        location=str(path),
    )
