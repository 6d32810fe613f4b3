"""One hold account: reserve against a cap, then settle, retain or release, in exact money.

Both of the package's spend accounts are this account: the run cost cap
(`continuity.providers.costcap`, a hold per HTTP attempt) and the pilot's cap account
(`continuity.spend.account`, a hold of Rmax per admitted request, kept durable by
`continuity.spend.durable`). What they share lives here, once:

- **a hold's states**: ``active`` (reserved, in flight), ``settled`` (its actual cost
  replaced it), ``retained`` (nobody knows what was billed: the reservation stays, or a
  known partial cost if that is larger) and ``released`` (never billed: it counts
  nothing);
- **what a hold counts** (`counted`): a settled hold its cost (its amount if it has
  none), a retained hold ``max(amount, partial)``, an active hold its amount, a
  released hold nothing. The committed total is their exact sum (`tally`);
- **the cap rule** (`exceeds`): a new hold of ``amount`` is admitted only if
  ``committed + amount <= cap`` (no cap: always); at the boundary it is admitted;
- **closing**: a hold is closed once, from an open state. Which states are open is
  the one thing the two accounts decide differently, and `HoldAccount` names it:
  ``late_close=False`` (the pilot) closes only an active hold, so a retained hold is
  final; ``late_close=True`` (the cost cap) also lets a retained hold be settled,
  released or retained again, because a newer invocation retains an older, still
  running one's active holds and the older one's settlement then replaces its own hold.

Two backends keep the holds: `MemoryBook` (a dict; the test-only permit source and the
account's own unit tests) and `SqliteBook` (a table ``holds`` with the columns
``amount``, ``state`` and ``cost`` as decimal text, inside the caller's connection and
transaction; `HoldTable` names the columns that differ between the two account
files). The file formats are the callers': this module only reads and writes the rows
their schemas already have. Transactions, the connection's opening policy, stops and
error codes stay with the callers too; `SqliteBook` passes every ``sqlite3.Error``
through the caller's `failed` so a failing file keeps the caller's code.

Amounts are `decimal.Decimal` added in `EXACT` (an inexact result raises), never floats.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Context, Decimal, DivisionByZero, Inexact, InvalidOperation, Overflow
from typing import Any, Literal, Protocol

__all__ = [
    "EXACT",
    "OPEN_LATE",
    "OPEN_STRICT",
    "HoldAccount",
    "HoldBook",
    "HoldRecord",
    "HoldState",
    "HoldTable",
    "Key",
    "MemoryBook",
    "Over",
    "SqliteBook",
    "Tally",
    "counted",
    "exceeds",
    "tally",
]

# Money arithmetic that refuses to round (the same context as `continuity.spend.money`
# and `continuity.providers.rates`): sums of calls have a few dozen digits at most.
EXACT = Context(prec=60, traps=[Inexact, InvalidOperation, DivisionByZero, Overflow])

HoldState = Literal["active", "settled", "retained", "released"]
Key = str | int
OPEN_STRICT: tuple[HoldState, ...] = ("active",)
OPEN_LATE: tuple[HoldState, ...] = ("active", "retained")


@dataclass
class HoldRecord:
    """One hold: its key, reserved amount, state, cost (settled: the actual cost;
    retained: a known partial, if any), closing reason and the caller's tags."""

    key: Key
    amount: Decimal
    state: HoldState = "active"
    cost: Decimal | None = None
    reason: str | None = None
    tags: dict[str, Any] = field(default_factory=dict)


def counted(state: str, amount: Decimal, cost: Decimal | None) -> Decimal:
    """What one hold counts in the committed total (module docstring)."""
    if state == "settled":
        return cost if cost is not None else amount
    if state == "retained":
        return max(amount, cost or Decimal(0))
    if state == "active":
        return amount
    return Decimal(0)  # released: never billed


def _sum(amounts: Iterable[Decimal]) -> Decimal:
    total = Decimal(0)
    for amount in amounts:
        total = EXACT.add(total, amount)
    return total


@dataclass(frozen=True)
class Tally:
    """The account at one moment: the exact sums by state and the counts of holds."""

    settled: Decimal
    retained: Decimal
    active: Decimal
    settled_calls: int
    retained_calls: int
    active_calls: int
    released: int

    @property
    def committed(self) -> Decimal:
        """Settled + retained + active: what the cap is measured against."""
        return _sum((self.settled, self.retained, self.active))


def tally(records: Iterable[HoldRecord]) -> Tally:
    """The sums and counts of `records`, each hold counted as `counted` says."""
    parts: dict[str, list[Decimal]] = {"settled": [], "retained": [], "active": []}
    released = 0
    for record in records:
        if record.state in parts:
            parts[record.state].append(counted(record.state, record.amount, record.cost))
        else:
            released += 1
    return Tally(
        settled=_sum(parts["settled"]),
        retained=_sum(parts["retained"]),
        active=_sum(parts["active"]),
        settled_calls=len(parts["settled"]),
        retained_calls=len(parts["retained"]),
        active_calls=len(parts["active"]),
        released=released,
    )


def exceeds(committed: Decimal, amount: Decimal, cap: Decimal | None) -> bool:
    """The cap rule: would a hold of `amount` take `committed` past `cap`?"""
    return cap is not None and EXACT.add(committed, amount) > cap


@dataclass(frozen=True)
class Over:
    """A hold refused by the cap rule: the committed total it would have gone past."""

    committed: Decimal


class HoldBook(Protocol):
    """Where the holds are kept (`MemoryBook`, `SqliteBook`)."""

    def records(self) -> list[HoldRecord]: ...

    def record(self, key: Key) -> HoldRecord | None: ...

    def insert(self, amount: Decimal, key: Key | None, tags: Mapping[str, Any]) -> Key: ...

    def update(
        self,
        key: Key,
        state: HoldState,
        cost: Decimal | None,
        reason: str | None,
        open_states: tuple[HoldState, ...],
    ) -> bool: ...


class MemoryBook:
    """Holds in a dict, in the order they were made."""

    def __init__(self, records: Iterable[HoldRecord] = ()) -> None:
        self._records = {record.key: record for record in records}
        self._ids = len(self._records)

    def records(self) -> list[HoldRecord]:
        return list(self._records.values())

    def record(self, key: Key) -> HoldRecord | None:
        return self._records.get(key)

    def insert(self, amount: Decimal, key: Key | None, tags: Mapping[str, Any]) -> Key:
        if key is None:
            self._ids += 1
            key = self._ids
        self._records[key] = HoldRecord(key, amount, tags=dict(tags))
        return key

    def update(
        self,
        key: Key,
        state: HoldState,
        cost: Decimal | None,
        reason: str | None,
        open_states: tuple[HoldState, ...],
    ) -> bool:
        record = self._records.get(key)
        if record is None or record.state not in open_states:
            return False
        record.state, record.cost, record.reason = state, cost, reason
        return True


@dataclass(frozen=True)
class HoldTable:
    """The columns of an account file's ``holds`` table beyond ``amount``, ``state``
    and ``cost``: its key (``id``, assigned by SQLite on insert, or a key the caller
    gives), where a closing reason goes, the tag columns read back into a record, and
    the REAL columns stamped with ``time.time()`` when a hold opens and closes."""

    key: str
    reason: str
    tags: tuple[str, ...] = ()
    opened: str | None = None
    closed: str | None = None


class SqliteBook:
    """Holds in an SQLite account file's ``holds`` table, read and written inside the
    caller's connection (and the caller's ``BEGIN IMMEDIATE`` transaction)."""

    def __init__(
        self,
        db: sqlite3.Connection,
        table: HoldTable,
        failed: Callable[[sqlite3.Error], Exception],
        stamp: Mapping[str, Any] | None = None,
    ) -> None:
        self.db = db
        self.table = table
        self._failed = failed
        self._stamp = dict(stamp or {})  # columns every new hold of this book gets
        tags = "".join(f", {column}" for column in table.tags)
        self._select = f"SELECT {table.key}, amount, state, cost, {table.reason}{tags} FROM holds"

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, args)
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def _record(self, row: tuple[Any, ...]) -> HoldRecord:
        key, amount, state, cost, reason, *tags = row
        return HoldRecord(
            key,
            Decimal(amount),
            state,
            None if cost is None else Decimal(cost),
            reason,
            dict(zip(self.table.tags, tags, strict=True)),
        )

    def records(self) -> list[HoldRecord]:
        rows = self._run(self._select + " ORDER BY rowid").fetchall()
        return [self._record(row) for row in rows]

    def record(self, key: Key) -> HoldRecord | None:
        row = self._run(self._select + f" WHERE {self.table.key} = ?", (key,)).fetchone()
        return None if row is None else self._record(row)

    def insert(self, amount: Decimal, key: Key | None, tags: Mapping[str, Any]) -> Key:
        values: dict[str, Any] = {**self._stamp, **tags, "amount": str(amount), "state": "active"}
        if key is not None:
            values[self.table.key] = key
        if self.table.opened is not None:
            values[self.table.opened] = time.time()
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        cursor = self._run(
            f"INSERT INTO holds ({columns}) VALUES ({marks})", tuple(values.values())
        )
        if key is not None:
            return key
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def update(
        self,
        key: Key,
        state: HoldState,
        cost: Decimal | None,
        reason: str | None,
        open_states: tuple[HoldState, ...],
    ) -> bool:
        table = self.table
        closed = f", {table.closed} = ?" if table.closed is not None else ""
        stamp: tuple[Any, ...] = (time.time(),) if table.closed is not None else ()
        marks = ", ".join("?" for _ in open_states)
        cursor = self._run(
            f"UPDATE holds SET state = ?, cost = ?, {table.reason} = ?{closed} "
            f"WHERE {table.key} = ? AND state IN ({marks})",
            (state, None if cost is None else str(cost), reason, *stamp, key, *open_states),
        )
        return cursor.rowcount > 0

    def retain_active(self, reason: str, *, unless: tuple[str, Any] | None = None) -> None:
        """Retain every active hold (but those whose column ``unless[0]`` holds
        ``unless[1]``): their owner ended without closing them (crash recovery)."""
        closed = f", {self.table.closed} = ?" if self.table.closed is not None else ""
        stamp: tuple[Any, ...] = (time.time(),) if self.table.closed is not None else ()
        owner = f" AND {unless[0]} != ?" if unless is not None else ""
        self._run(
            f"UPDATE holds SET state = 'retained', {self.table.reason} = ?{closed} "
            f"WHERE state = 'active'{owner}",
            (reason, *stamp, *((unless[1],) if unless is not None else ())),
        )


class HoldAccount:
    """The hold arithmetic over one `HoldBook`: the committed total, the cap rule and
    the closing of holds. `late_close` names which holds may still be closed
    (module docstring): only active ones (False), or retained ones too (True)."""

    def __init__(self, book: HoldBook, *, late_close: bool) -> None:
        self.book = book
        self.late_close = late_close
        self.open_states = OPEN_LATE if late_close else OPEN_STRICT

    def tally(self) -> Tally:
        return tally(self.book.records())

    def committed(self) -> Decimal:
        """T: every settled, retained and active hold, as `counted` counts it."""
        return _sum(counted(r.state, r.amount, r.cost) for r in self.book.records())

    def closable(self, key: Key) -> bool:
        record = self.book.record(key)
        return record is not None and record.state in self.open_states

    def hold(
        self,
        amount: Decimal,
        cap: Decimal | None,
        *,
        key: Key | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> Key | Over:
        """Make an active hold of `amount` and return its key, or `Over` (nothing
        written) when it would take the committed total past `cap`."""
        committed = self.committed()
        if exceeds(committed, amount, cap):
            return Over(committed)
        return self.book.insert(amount, key, tags or {})

    def settle(self, key: Key, cost: Decimal, reason: str | None = None) -> bool:
        """Replace an open hold with its actual `cost` (False: no open hold)."""
        return self.book.update(key, "settled", cost, reason, self.open_states)

    def retain(self, key: Key, partial: Decimal | None = None, reason: str | None = None) -> bool:
        """Keep an open hold counted (a known `partial` counts if it is larger)."""
        return self.book.update(key, "retained", partial, reason, self.open_states)

    def release(self, key: Key, reason: str | None = None) -> bool:
        """Drop an open hold: its request was never billed."""
        return self.book.update(key, "released", None, reason, self.open_states)
