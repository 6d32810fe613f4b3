"""The steer inbox: live input that outlives the harness process.

An owner steer offered to a live session is written here (SQLite, WAL,
``synchronous=FULL``) before the offer returns, keyed by its steer id, so a steer
queued while the harness process is down or restarting is not lost. The harness drains
the unconsumed steers into its next model request and records which request consumed
each one; the durable session is the truth for that (a ``steer`` marker entry written
just before the steer's message, `continuity.harness.loop`), and the inbox's
consumption column is reconciled from the session when a harness reopens it, so a
steer is delivered exactly once whatever instant the process dies at.

- Offering the same id again with the same text is an identical redelivery: allowed,
  counted (``redeliveries``), never queued twice. The same id with other text is
  refused: ``steer_conflict``.
- Recording a second, different consuming request for one steer is refused:
  ``steer_consumed_twice``. Recording the same request again is a no-op.
- A file that is not an inbox is ``steer_inbox_invalid``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Literal

import msgspec

from continuity.errors import HarnessError
from continuity.sqlite_open import STEER_INBOX, open_db

__all__ = ["SteerInbox", "SteerRow", "text_digest"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS steers (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    steer_id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    attribution TEXT NOT NULL,
    offered_pid INTEGER NOT NULL,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    consumed_by TEXT
);
"""


class SteerRow(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    steer_id: str
    text: str
    sha256: str
    attribution: Literal["owner", "unknown"]
    offered_pid: int
    redeliveries: int
    consumed_by: str | None


def text_digest(text: str) -> str:
    """A steer text's sha256 (its identity in the inbox and in the session's markers)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SteerInbox:
    """One session's durable steer queue at `path` (created when missing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = open_db(path, STEER_INBOX)
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise HarnessError(
                f"not a steer inbox: {exc}", code="steer_inbox_invalid", location=str(path)
            ) from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SteerInbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, where: str = "", args: tuple[object, ...] = ()) -> list[SteerRow]:
        query = (
            "SELECT seq, steer_id, text, sha256, attribution, offered_pid, redeliveries, "
            f"consumed_by FROM steers {where} ORDER BY seq"
        )
        fields = (
            "seq",
            "steer_id",
            "text",
            "sha256",
            "attribution",
            "offered_pid",
            "redeliveries",
            "consumed_by",
        )
        return [
            msgspec.convert(dict(zip(fields, r, strict=True)), SteerRow)
            for r in self._db.execute(query, args)
        ]

    def offer(self, steer_id: str, text: str, *, owner_text: str | None = None) -> SteerRow:
        """Queue a steer durably (attributed to the owner only when `owner_text` is
        exactly `text`); an identical redelivery is counted and not queued again.

        Raises:
            HarnessError: ``steer_conflict`` when `steer_id` was offered with other text,
                ``steer_invalid`` for an empty id or text.
        """
        if not steer_id:
            raise HarnessError("a steer needs an id", code="steer_invalid", location="steer_id")
        if not text.strip():
            raise HarnessError("a steer needs text", code="steer_invalid", location=steer_id)
        owner = owner_text is not None and owner_text == text
        digest = text_digest(text)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            found = self._rows("WHERE steer_id = ?", (steer_id,))
            if found and found[0].sha256 != digest:
                raise HarnessError(
                    "this steer id was offered before with other text",
                    code="steer_conflict",
                    location=steer_id,
                )
            if found:
                self._db.execute(
                    "UPDATE steers SET redeliveries = redeliveries + 1 WHERE steer_id = ?",
                    (steer_id,),
                )
            else:
                self._db.execute(
                    "INSERT INTO steers (steer_id, text, sha256, attribution, offered_pid) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (steer_id, text, digest, "owner" if owner else "unknown", os.getpid()),
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return self._rows("WHERE steer_id = ?", (steer_id,))[0]

    def pending(self) -> list[SteerRow]:
        """The steers no request has consumed yet, in the order they were offered."""
        return self._rows("WHERE consumed_by IS NULL")

    def rows(self) -> list[SteerRow]:
        return self._rows()

    def consume(self, steer_id: str, request: str) -> None:
        """Record that `request` consumed `steer_id` (idempotent for the same request).

        Raises:
            HarnessError: ``steer_consumed_twice`` when another request consumed it,
                ``steer_unknown`` when no such steer was offered.
        """
        self._db.execute("BEGIN IMMEDIATE")
        try:
            found = self._rows("WHERE steer_id = ?", (steer_id,))
            if not found:
                raise HarnessError("no steer has this id", code="steer_unknown", location=steer_id)
            consumed = found[0].consumed_by
            if consumed is not None and consumed != request:
                raise HarnessError(
                    f"already consumed by {consumed}; {request} would consume it again",
                    code="steer_consumed_twice",
                    location=steer_id,
                )
            self._db.execute(
                "UPDATE steers SET consumed_by = ? WHERE steer_id = ?", (request, steer_id)
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
