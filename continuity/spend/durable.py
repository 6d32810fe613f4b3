"""A durable ``lookup-permit-v1`` source: holds persisted in SQLite before a permit is
granted, so a controller killed mid-request restarts with every reservation it made.

`DurablePermitSource.open(path, cap, rmax)` opens (or creates) the account file and
starts a new **epoch**. **The file is the account**: every operation runs in one
``BEGIN IMMEDIATE`` transaction (one writer at a time, across processes) that first
loads the account from the stored rows, so T is always the sum over what the file
holds, then makes its change in `CapAccount` and commits it (``synchronous=FULL``)
before it returns. Two processes (or two sources) on one file therefore never hold more
than the cap between them: the cap check and the hold's insert are one transaction. A
permit is never granted whose hold is not on disk, and a settlement is on disk before
the guard goes on:

- ``admit``: the hold of Rmax, then the permit (bound to epoch, request, slot, round,
  payload digest and Rmax); a refusal writes nothing;
- ``consume``: once per permit, only for the admitted payload digest;
- ``settle``: once per permit; the settled cost replaces the hold, any other outcome
  keeps it (with a known partial, if larger);
- ``stop``: sticky, and on disk.

**Reopening** (a restart after a crash or SIGKILL) starts a new epoch. Permits of an
earlier epoch are stale (``lookup_permit_stale``). A hold that was still active when its
epoch ended is retained as lost: nobody knows whether its request was sent, so its
reservation stays in T for good. A stop, the settled costs and the loss count carry
over. The cap and Rmax are fixed when the file is created: reopening with others is
``lookup_cap_invalid``; a file that is not an account is ``lookup_account_invalid``; a
file locked past the timeout of its SQLite policy (`PERMIT_ACCOUNT`), or a full disk, is
``lookup_account_failed``, an integrity stop. Opening also starts a transaction, so a
second process that opens the file retains the first one's active holds as lost
(conservatively: they stay in T, and the first process can no longer settle them); the
writer lease keeps that from happening on any shipped route.

The holds are a `continuity.holds.SqliteBook` over this file's ``holds`` table (the
arithmetic and the cap rule shared with the run cost cap), read and written by the
`CapAccount` inside each transaction; the loss count and the stop are the ``state`` row
of ``meta``, loaded at the start of every transaction.

This is the accounting the pilot controller (spend controller II) persists; it is not
authorization, and a durable source alone enables no paid route.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import uuid
from decimal import Decimal
from pathlib import Path

import msgspec

from continuity.errors import SpendError
from continuity.holds import HoldTable, SqliteBook
from continuity.spend.account import CapAccount
from continuity.spend.permits import (
    PERMIT_CONTRACT,
    Permit,
    Refusal,
    Settlement,
    apply_settlement,
    check_consumable,
    grant,
)
from continuity.spend.usage import UsageRecord
from continuity.sqlite_open import PERMIT_ACCOUNT, open_db

__all__ = ["DURABLE_BRAND", "DurablePermitSource"]

DURABLE_BRAND = "continuity-durable-permits-v1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS holds (
    request_id TEXT PRIMARY KEY,
    slot_id TEXT NOT NULL,
    amount TEXT NOT NULL,
    state TEXT NOT NULL,
    cost TEXT,
    kind TEXT,
    permit TEXT,
    consumed INTEGER NOT NULL DEFAULT 0,
    epoch TEXT NOT NULL
);
"""
# How the holds table maps onto `continuity.holds` (the file format is fixed): the
# request id is the key, a closing outcome's kind is its reason.
_HOLDS = HoldTable(key="request_id", reason="kind", tags=("slot_id",))


class DurablePermitSource:
    """Permits against a cap, persisted before they are granted (module docstring)."""

    brand = DURABLE_BRAND
    test_only = False
    contract = PERMIT_CONTRACT

    def __init__(
        self, connection: sqlite3.Connection, account: CapAccount, epoch: str, where: str = ""
    ):
        self._db = connection
        self.account = account
        self.epoch = epoch
        self._where = where or "account"
        self._stopped: str | None = None  # this source's own stop, even if its write failed
        self._ids = itertools.count(1)

    # -- opening
    @classmethod
    def open(
        cls, path: Path, cap: Decimal, rmax: Decimal, *, epoch: str | None = None
    ) -> DurablePermitSource:
        """Open or create the account at `path` and start a new epoch: `epoch` (the
        consumption's, so the claim, the permits and the IPC bind one epoch) or a fresh
        random one. An epoch is never started twice.

        Raises:
            SpendError: ``lookup_cap_invalid``, ``lookup_account_invalid``,
                ``lookup_account_failed``.
        """
        CapAccount(cap, rmax)  # checks C >= Rmax before any file is touched
        try:
            db = open_db(path, PERMIT_ACCOUNT)
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise SpendError(
                f"the account file is not an account: {exc}",
                code="lookup_account_invalid",
                location=str(path),
            ) from None
        live = epoch or uuid.uuid4().hex
        book = SqliteBook(db, _HOLDS, lambda exc: _failed(exc, str(path)), {"epoch": live})
        source = cls(db, CapAccount(cap, rmax, book), live, str(path))
        try:
            source._start(fixed=epoch is not None)
        except BaseException:
            db.close()
            raise
        return source

    def _start(self, *, fixed: bool) -> None:
        """In one transaction: check the stored cap, Rmax and epoch, load the stored
        account, retain (as lost) every hold an earlier epoch left active, write the new
        epoch. A refusal writes nothing."""
        cap, rmax = self.account.cap, self.account.rmax
        with self._transaction():
            meta = self._load()
            if fixed and meta.get("epoch") == self.epoch:
                raise SpendError(
                    "the account already started this epoch: an epoch is never reopened",
                    code="lookup_account_invalid",
                    location=self._where,
                )
            if not meta:
                self._put("cap", str(cap))
                self._put("rmax", str(rmax))
            elif (meta.get("cap"), meta.get("rmax")) != (str(cap), str(rmax)):
                raise SpendError(
                    f"the account was created for cap ${meta.get('cap')} and Rmax "
                    f"${meta.get('rmax')}, not ${cap} and ${rmax}",
                    code="lookup_cap_invalid",
                    location=self._where,
                )
            for request_id in self.account.active():
                self.account.retain(request_id, "lost")  # on disk, kind 'lost'
            self._put("epoch", self.epoch)
            self._put_state()

    # -- persistence
    def _transaction(self) -> _Transaction:
        return _Transaction(self._db, self._where)

    def _load(self) -> dict[str, str]:
        """Inside a transaction: the account's state as the file holds it now (another
        process may have written since; the holds are read from the file as they are
        used), loaded into `account`; the stored meta keys."""
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        self.account.restore_state(json.loads(meta.get("state", "{}")))
        if self._stopped is not None:
            self.account.stop(self._stopped)
        return meta

    def _put(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
            (key, value, value),
        )

    def _put_state(self) -> None:
        self._put("state", json.dumps(self.account.snapshot(), sort_keys=True))

    def _permit(self, permit: Permit, where: str) -> None:
        row = self._db.execute(
            "SELECT permit, epoch FROM holds WHERE request_id = ?", (permit.request_id,)
        ).fetchone()
        issued = None if row is None or row[0] is None else json.loads(row[0])
        if permit.epoch != self.epoch or issued != msgspec.to_builtins(permit):
            raise SpendError(
                "a permit this source did not issue in its live epoch",
                code="lookup_permit_stale",
                location=where,
                outcome="integrity_stop",
            )

    # -- lookup-permit-v1
    async def admit(
        self, request_id: str, slot_id: str, round: int, payload_digest: str, rmax: Decimal
    ) -> Permit | Refusal:
        with self._transaction():  # T from the stored rows; the hold on disk before the permit
            self._load()
            permit = grant(
                self.account,
                (request_id, slot_id, round, payload_digest),
                rmax,
                permit_id=f"{self.epoch}-{next(self._ids)}",
                epoch=self.epoch,
            )
            if isinstance(permit, Permit):  # its hold is already in the file: bind the permit
                self._db.execute(
                    "UPDATE holds SET permit = ? WHERE request_id = ?",
                    (json.dumps(msgspec.to_builtins(permit)), request_id),
                )
                self._put_state()
        return permit

    async def consume(self, permit: Permit, body_digest: str) -> None:
        with self._transaction():
            self._permit(permit, "consume")
            consumed = self._db.execute(
                "SELECT consumed FROM holds WHERE request_id = ?", (permit.request_id,)
            ).fetchone()[0]
            check_consumable(permit, body_digest, consumed=bool(consumed))
            self._db.execute(
                "UPDATE holds SET consumed = 1 WHERE request_id = ?", (permit.request_id,)
            )

    async def settle(
        self,
        permit: Permit,
        settlement: Settlement,
        raw_usage: UsageRecord | None,
        raw_tier: str | None,
    ) -> None:
        with self._transaction():  # settled against the stored rows, not a stale copy
            self._permit(permit, "settle")
            self._load()
            if permit.request_id not in self.account.active():
                raise SpendError(
                    "the permit was already settled",
                    code="lookup_permit_reused",
                    location="settle",
                    outcome="integrity_stop",
                )
            apply_settlement(self.account, permit.request_id, settlement)  # kind on disk
            self._put_state()

    async def stop(self, code: str) -> None:
        self._stopped = self._stopped or code
        self.account.stop(code)
        with self._transaction():
            self._load()
            self.account.stop(code)
            self._put_state()

    def close(self) -> None:
        self._db.close()


def _failed(exc: sqlite3.Error, where: str) -> SpendError:
    """An SQLite failure of the account: ``lookup_account_failed``, an integrity stop."""
    return SpendError(
        f"the account failed: {exc}",
        code="lookup_account_failed",
        location=where,
        outcome="integrity_stop",
    )


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on an error): one writer at a
    time across processes. An SQLite failure (the file locked past `PERMIT_ACCOUNT.timeout`,
    a full disk) is ``lookup_account_failed``, an integrity stop."""

    def __init__(self, db: sqlite3.Connection, where: str) -> None:
        self._db = db
        self._where = where

    def _failed(self, exc: sqlite3.Error) -> SpendError:
        return _failed(exc, self._where)

    def __enter__(self) -> sqlite3.Connection:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return self._db

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        try:
            self._db.execute("ROLLBACK" if kind is not None else "COMMIT")
        except sqlite3.Error as exc:
            if kind is None:
                raise self._failed(exc) from None
        if isinstance(error, sqlite3.Error):
            raise self._failed(error) from None
