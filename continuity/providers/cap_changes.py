"""The record of a run's cost-cap changes: who changed the cap, when, from what to what.

A run's cost-cap account (`continuity.providers.costcap`) keeps one cap for every
invocation. Changing it takes ``--raise-cap``, and each change is a row of the
account's ``cap_changes`` table, written in the transaction that stores the new cap, so
the account never holds a cap whose change is not recorded. `CapTotals` carries the
rows, and so do ``spend.json`` and the run's last line.
"""

from __future__ import annotations

import getpass
import socket
import sqlite3
import time

import msgspec

__all__ = ["CAP_CHANGES_SCHEMA", "CapChange", "read_changes", "record_change"]

CAP_CHANGES_SCHEMA = """
CREATE TABLE IF NOT EXISTS cap_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT NOT NULL, invocation TEXT NOT NULL,
    at REAL NOT NULL, old TEXT NOT NULL, new TEXT NOT NULL);
"""


class CapChange(msgspec.Struct, frozen=True, kw_only=True):
    """One ``--raise-cap``: who (user@host), which invocation, when (UTC seconds since
    the epoch), the cap before and after (USD text)."""

    who: str
    invocation: str
    at: float
    old: str
    new: str

    def line(self) -> str:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.at))
        return f"cap changed from ${self.old} to ${self.new} by {self.who} at {when}"


def _who() -> str:
    """The user and host changing a cap."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def record_change(db: sqlite3.Connection, invocation: str, old: str, new: str) -> None:
    """Inside the caller's transaction: record a change of the cap from `old` to `new`."""
    db.execute(
        "INSERT INTO cap_changes (who, invocation, at, old, new) VALUES (?, ?, ?, ?, ?)",
        (_who(), invocation, time.time(), old, new),
    )


def read_changes(db: sqlite3.Connection) -> tuple[CapChange, ...]:
    """Every recorded change, oldest first (none in an account made before changes were
    recorded, until an invocation opens it)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'cap_changes'").fetchone() is None:
        return ()
    rows = db.execute("SELECT who, invocation, at, old, new FROM cap_changes ORDER BY id")
    return tuple(
        CapChange(who=who, invocation=invocation, at=at, old=old, new=new)
        for who, invocation, at, old, new in rows.fetchall()
    )
