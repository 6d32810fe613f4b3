"""The ledger's durable store: admitted sources (`continuity.memory.ledger_sources`),
the upkeep journal, offers and
published generations, in one SQLite file beside the retained store.

    <root>/continuity/ledger.sqlite3

**Journal.** Every upkeep operation is a row that moves through durable states, each
move its own fsynced transaction:

    reserved ──► dispatched ──► settled
        │
        └──────► released        (never dispatched: consumes nothing)

A row is ``reserved`` with its offer and its input and output reservation before
anything is sent, ``dispatched`` just before the request leaves, and ``settled`` with
its outcome and reported usage once the answer (or its failure) is known. A row that
was reserved but never dispatched is ``released``: by its own stage when it proves it
made no call, or at the next claim (a stage that died before sending). A ``dispatched``
row that never settles is uncertain: its call may have been made and billed.

Only dispatched, non-released rows consume anything: the first of them is the
**bootstrap** (128k input), every later one incremental (64k), and their offers are
settled for good (a span is never offered twice). Released rows consume neither the
bootstrap nor offers, so the next real reservation can still be the bootstrap.

**Generations.** Generation 0 (the empty ledger) is written when the store is created;
each publication adds the next with its parent's identity. The store belongs to the
session it was created for (``owner``); another session opening it is refused.

Corrupt durable rows fail closed (``ledger_store_corrupt``, ``ledger_source_corrupt``):
nothing read back from disk is trusted without its checks.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from continuity.errors import LedgerError
from continuity.memory.ledger import (
    Generation,
    Ledger,
    check_ledger,
    empty_generation,
    next_generation,
)
from continuity.memory.ledger_journal import (
    JournalSnapshot,
    Operation,
    OpKind,
)
from continuity.memory.upkeep_selection import Offer, Span
from continuity.messages import Usage
from continuity.sqlite_open import (
    LEDGER_STORE_CREATE,
    LEDGER_STORE_READER,
    LEDGER_STORE_WRITER,
    open_db,
)

__all__ = ["LEDGER_STORE_SCHEMA", "LedgerStore", "typed_errors"]

LEDGER_STORE_SCHEMA = "continuity-ledger-store-v1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (ordinal INTEGER PRIMARY KEY, descriptor BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS operations (
    seq INTEGER PRIMARY KEY,
    op_id TEXT NOT NULL UNIQUE,
    stage INTEGER NOT NULL,
    tag TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    input_reservation INTEGER NOT NULL,
    output_reservation INTEGER NOT NULL,
    offer_digest TEXT NOT NULL,
    generation_before TEXT NOT NULL,
    generation_after TEXT,
    outcome TEXT,
    usage BLOB
);
CREATE TABLE IF NOT EXISTS offers (
    op_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    span INTEGER NOT NULL,
    digest TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (op_id, ordinal, span)
);
CREATE TABLE IF NOT EXISTS generations (
    number INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    parent TEXT,
    op_id TEXT,
    ledger BLOB NOT NULL
);
"""
_TABLES = frozenset(["meta", "sources", "operations", "offers", "generations"])
_STATES = frozenset(["reserved", "dispatched", "settled", "released"])


_usage_decoder = msgspec.json.Decoder(Usage)
_ledger_decoder = msgspec.json.Decoder(Ledger)


_Method = TypeVar("_Method", bound=Callable[..., Any])


def typed_errors(method: _Method) -> _Method:
    """SQLite's own errors as coded ones: a row that breaks a constraint (an operation
    that exists already) is ``ledger_journal_invalid``; any other database error on a
    store that opened (a damaged page, a locked or vanished file) fails closed as
    ``ledger_store_corrupt``."""

    @functools.wraps(method)
    def call(store: LedgerStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(store, *args, **kwargs)
        except sqlite3.IntegrityError as exc:
            raise LedgerError(
                f"the journal refused a row ({exc})",
                code="ledger_journal_invalid",
                location=str(store.path),
            ) from None
        except sqlite3.Error as exc:
            raise LedgerError(
                f"the ledger store failed ({exc})",
                code="ledger_store_corrupt",
                location=str(store.path),
            ) from None

    return call  # type: ignore[return-value]


class LedgerStore:
    """The ledger database at `path`. `create` makes it for session `owner` (with
    generation 0); `open` reopens it, refusing another session's store.

    Raises:
        LedgerError: ``ledger_store_corrupt`` for a file that is not a ledger store or
            whose rows fail their checks; ``ledger_unowned`` when it belongs to another
            session.
    """

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path

    @classmethod
    def create(cls, path: Path, *, owner: str) -> LedgerStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            raise LedgerError(
                "a ledger store exists already", code="ledger_store_corrupt", location=str(path)
            )
        # Made whole beside its path, then renamed into place: a crash leaves no
        # half-made store (the partial file is replaced by the next attempt).
        partial = path.with_name(path.name + ".creating")
        partial.unlink(missing_ok=True)
        db = open_db(partial, LEDGER_STORE_CREATE)
        try:
            db.executescript(_SCHEMA)
            genesis = empty_generation()
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO meta VALUES ('schema', ?)", (LEDGER_STORE_SCHEMA,))
            db.execute("INSERT INTO meta VALUES ('owner', ?)", (owner,))
            db.execute(
                "INSERT INTO generations VALUES (0, ?, NULL, NULL, ?)",
                (genesis.id, msgspec.json.encode(genesis.ledger)),
            )
            db.execute("COMMIT")
        finally:
            db.close()
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, path)
        return cls.open(path, owner=owner)

    @classmethod
    @contextlib.contextmanager
    def reading(cls, path: Path, *, owner: str | None = None) -> Iterator[LedgerStore]:
        """The store at `path`, opened read-only for the block and closed after it
        (`open`'s refusals apply)."""
        store = cls.open(path, owner=owner, readonly=True)
        try:
            yield store
        finally:
            store.close()

    @classmethod
    def open(cls, path: Path, *, owner: str | None, readonly: bool = False) -> LedgerStore:
        if not path.is_file():
            raise LedgerError("no ledger store", code="ledger_store_missing", location=str(path))
        try:
            db = open_db(path, LEDGER_STORE_READER if readonly else LEDGER_STORE_WRITER)
            tables = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master")}
            meta = (
                dict(db.execute("SELECT key, value FROM meta").fetchall())
                if "meta" in tables
                else {}
            )
        except sqlite3.Error as exc:
            raise LedgerError(
                f"unreadable ledger store ({exc})", code="ledger_store_corrupt", location=str(path)
            ) from None
        if not tables >= _TABLES or meta.get("schema") != LEDGER_STORE_SCHEMA:
            db.close()
            raise LedgerError("not a ledger store", code="ledger_store_corrupt", location=str(path))
        if owner is not None and meta.get("owner") != owner:
            db.close()
            raise LedgerError(
                "the ledger store belongs to another session",
                code="ledger_unowned",
                location=str(path),
            )
        return cls(db, path)

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One durable transaction: committed on success, rolled back on any failure."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- journal ---------------------------------------------------------------------

    @typed_errors
    def operations(self) -> list[Operation]:
        counts = dict(
            self.db.execute("SELECT op_id, COUNT(*) FROM offers GROUP BY op_id").fetchall()
        )
        rows = []
        for row in self.db.execute(
            "SELECT seq, op_id, stage, tag, kind, state, input_reservation, "
            "output_reservation, offer_digest, generation_before, generation_after, outcome, "
            "usage FROM operations ORDER BY seq"
        ):
            (
                seq,
                op_id,
                stage,
                tag,
                kind,
                state,
                reserve_in,
                reserve_out,
                offer,
                before,
                after,
                outcome,
                usage,
            ) = row
            if state not in _STATES or kind not in ("bootstrap", "incremental"):
                raise LedgerError(
                    f"journal row {op_id!r} has state {state!r}, kind {kind!r}",
                    code="ledger_store_corrupt",
                    location=f"{self.path}:operations[{seq}]",
                )
            try:
                decoded = _usage_decoder.decode(usage) if usage is not None else None
            except msgspec.MsgspecError:
                raise LedgerError(
                    f"journal row {op_id!r} has unreadable usage",
                    code="ledger_store_corrupt",
                    location=f"{self.path}:operations[{seq}]",
                ) from None
            rows.append(
                Operation(
                    seq=int(seq),
                    op_id=str(op_id),
                    stage=int(stage),
                    tag=str(tag),
                    kind=kind,
                    state=state,
                    input_reservation=int(reserve_in),
                    output_reservation=int(reserve_out),
                    offer_digest=str(offer),
                    offers=int(counts.get(op_id, 0)),
                    generation_before=str(before),
                    generation_after=str(after) if after is not None else None,
                    outcome=str(outcome) if outcome is not None else None,
                    usage=decoded,
                )
            )
        return rows

    @typed_errors
    def offered_slots(self) -> set[tuple[int, int]]:
        """Spans offered for good: those of dispatched, never-released operations."""
        return {
            (int(o), int(s))
            for o, s in self.db.execute(
                "SELECT f.ordinal, f.span FROM offers f JOIN operations p ON p.op_id = f.op_id "
                "WHERE p.state IN ('dispatched', 'settled')"
            )
        }

    @typed_errors
    def claim(self) -> tuple[OpKind, list[str]]:
        """Start a stage's operation: release every reserved row that was never
        dispatched (a stage that died before sending), and say whether the next
        reservation is the bootstrap. Returns the kind and the released op ids."""
        with self.transaction():
            stale = [
                str(r[0])
                for r in self.db.execute("SELECT op_id FROM operations WHERE state = 'reserved'")
            ]
            self.db.execute(
                "UPDATE operations SET state = 'released', outcome = 'released_at_claim' "
                "WHERE state = 'reserved'"
            )
        consumed = self.db.execute(
            "SELECT COUNT(*) FROM operations WHERE state IN ('dispatched', 'settled')"
        ).fetchone()[0]
        return ("bootstrap" if consumed == 0 else "incremental"), stale

    @typed_errors
    def reserve(
        self,
        *,
        op_id: str,
        stage: int,
        tag: str,
        kind: OpKind,
        input_reservation: int,
        output_reservation: int,
        offer: Offer | None,
        generation_before: str,
    ) -> None:
        spans: Sequence[Span] = offer.spans if offer is not None else ()
        with self.transaction():
            self.db.execute(
                "INSERT INTO operations (op_id, stage, tag, kind, state, input_reservation, "
                "output_reservation, offer_digest, generation_before) "
                "VALUES (?, ?, ?, ?, 'reserved', ?, ?, ?, ?)",
                (
                    op_id,
                    stage,
                    tag,
                    kind,
                    input_reservation,
                    output_reservation,
                    offer.digest if offer is not None else "",
                    generation_before,
                ),
            )
            self.db.executemany(
                "INSERT INTO offers VALUES (?, ?, ?, ?, ?)",
                [(op_id, s.ordinal, s.index, s.digest, s.bytes) for s in spans],
            )

    @typed_errors
    def _move(self, op_id: str, source: str, target: str, **fields: object) -> None:
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self.transaction():
            changed = self.db.execute(
                f"UPDATE operations SET state = ?{', ' if fields else ''}{assignments} "
                "WHERE op_id = ? AND state = ?",
                (target, *fields.values(), op_id, source),
            ).rowcount
        if changed != 1:
            raise LedgerError(
                f"operation {op_id} is not {source}",
                code="ledger_journal_invalid",
                location=str(self.path),
            )

    def dispatch(self, op_id: str) -> None:
        """Mark the row dispatched: from here its call may have been made."""
        self._move(op_id, "reserved", "dispatched")

    def release(self, op_id: str, reason: str) -> None:
        """A proven non-invocation: the reserved row consumes nothing."""
        self._move(op_id, "reserved", "released", outcome=reason)

    @typed_errors
    def settle(
        self,
        op_id: str,
        *,
        outcome: str,
        usage: Usage | None,
        publish: Ledger | None = None,
    ) -> Generation:
        """Settle a dispatched row with its outcome and reported usage (None: not
        reported), publishing `publish` as the next generation; return the head."""
        head = self.head()
        generation = next_generation(head, publish, op_id) if publish is not None else head
        with self.transaction():
            if publish is not None:
                self.db.execute(
                    "INSERT INTO generations VALUES (?, ?, ?, ?, ?)",
                    (
                        generation.number,
                        generation.id,
                        generation.parent,
                        op_id,
                        msgspec.json.encode(generation.ledger),
                    ),
                )
            changed = self.db.execute(
                "UPDATE operations SET state = 'settled', outcome = ?, usage = ?, "
                "generation_after = ? WHERE op_id = ? AND state = 'dispatched'",
                (
                    outcome,
                    msgspec.json.encode(usage) if usage is not None else None,
                    generation.id,
                    op_id,
                ),
            ).rowcount
            if changed != 1:
                raise LedgerError(
                    f"operation {op_id} is not dispatched",
                    code="ledger_journal_invalid",
                    location=str(self.path),
                )
        return generation

    # -- generations ---------------------------------------------------------------------

    @typed_errors
    def generations(self) -> list[Generation]:
        """Every published generation, checked: numbered from 0, each the child of the
        one before, its identity recomputed from its parent and entries.

        Raises:
            LedgerError: ``ledger_store_corrupt`` when any check fails.
        """
        out: list[Generation] = []
        for number, ident, parent, op_id, data in self.db.execute(
            "SELECT number, id, parent, op_id, ledger FROM generations ORDER BY number"
        ):
            where = f"{self.path}:generations[{number}]"
            try:
                ledger = check_ledger(_ledger_decoder.decode(data), location=where)
            except msgspec.MsgspecError:
                raise LedgerError(
                    "a generation does not decode", code="ledger_store_corrupt", location=where
                ) from None
            if not out:
                expected = empty_generation()
            else:
                expected = next_generation(out[-1], ledger, str(op_id))
            if (number, ident, parent) != (expected.number, expected.id, expected.parent) or (
                expected.ledger != ledger
            ):
                raise LedgerError(
                    "a generation's identity or lineage does not check",
                    code="ledger_store_corrupt",
                    location=where,
                )
            out.append(expected)
        if not out:
            raise LedgerError(
                "no generation 0", code="ledger_store_corrupt", location=str(self.path)
            )
        return out

    def head(self) -> Generation:
        return self.generations()[-1]

    def snapshot(self) -> JournalSnapshot:
        head = self.head()
        return JournalSnapshot(
            operations=tuple(self.operations()),
            offered=tuple(sorted(self.offered_slots())),
            head=head.id,
            head_number=head.number,
            entry_ids=tuple(e.id for e in head.ledger.entries),
        )
