"""Opening SQLite files: one function, and one named policy per way the package opens one.

A `Policy` holds everything chosen at open time: read-only or not (a read-only open is
a ``file:...?mode=ro`` URI, so SQLite itself refuses every write), how long a statement
waits for another connection's lock (``timeout``, in seconds; 0 fails at once with
"database is locked"), autocommit (``isolation_level=None``: no implicit ``BEGIN``,
the caller's own ``BEGIN IMMEDIATE`` ... ``COMMIT``), whether the connection may be used
from other threads, and the pragmas run right after the connect, in order.

`open_db(path, policy)` connects and runs the pragmas (a failing pragma closes the
connection, then its error is raised). A caller that handles a failing pragma
differently from a failing connect (a file that is not a database only shows at its
first statement) uses `connect` and `apply_pragmas` instead.

The policies below are the package's every way of opening SQLite, named by purpose;
the comment on each says why its timeout is what it is.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

__all__ = [
    "CALL_LEDGER",
    "COST_CAP",
    "DEFAULT_TIMEOUT_S",
    "LEASE",
    "LEASE_PROBE",
    "LEASE_READER",
    "LEDGER_STORE_CREATE",
    "LEDGER_STORE_READER",
    "LEDGER_STORE_WRITER",
    "PERMIT_ACCOUNT",
    "READ_ONLY",
    "RETAINED_READER",
    "RETAINED_WRITER",
    "STEER_INBOX",
    "Policy",
    "apply_pragmas",
    "connect",
    "open_db",
]

DEFAULT_TIMEOUT_S = 5.0  # sqlite3.connect's own default


@dataclass(frozen=True)
class Policy:
    """How one kind of connection is opened (the module docstring)."""

    timeout: float = DEFAULT_TIMEOUT_S
    read_only: bool = False  # a file:...?mode=ro URI
    uri: bool = False  # a writable open through a file: URI (?, # and % in the path are URI syntax)
    autocommit: bool = False  # isolation_level=None
    any_thread: bool = False  # check_same_thread=False
    pragmas: tuple[str, ...] = ()  # "synchronous=FULL", ...: run as PRAGMA after the connect


def _target(path: str | os.PathLike[str], policy: Policy) -> tuple[str | os.PathLike[str], bool]:
    if policy.read_only:
        return f"file:{os.fspath(path)}?mode=ro", True
    if policy.uri:
        return f"file:{os.fspath(path)}", True
    return path, False


def connect(path: str | os.PathLike[str], policy: Policy) -> sqlite3.Connection:
    """A connection to `path` opened as `policy` says, its pragmas not yet run."""
    target, uri = _target(path, policy)
    same_thread = not policy.any_thread
    if policy.autocommit:
        return sqlite3.connect(
            target,
            timeout=policy.timeout,
            isolation_level=None,
            check_same_thread=same_thread,
            uri=uri,
        )
    # sqlite3's own default isolation level: an implicit BEGIN before a change
    return sqlite3.connect(target, timeout=policy.timeout, check_same_thread=same_thread, uri=uri)


def apply_pragmas(db: sqlite3.Connection, policy: Policy) -> None:
    """Run `policy`'s pragmas on `db`, in order."""
    for pragma in policy.pragmas:
        db.execute(f"PRAGMA {pragma}")


def open_db(path: str | os.PathLike[str], policy: Policy) -> sqlite3.Connection:
    """`connect`, then `apply_pragmas`; a failing pragma closes the connection first.

    Raises:
        sqlite3.Error: the connect's or the pragma's own.
    """
    db = connect(path, policy)
    try:
        apply_pragmas(db, policy)
    except BaseException:
        db.close()
        raise
    return db


# -- the policies, by purpose

# A reader of another process's file (a steer inbox, a permit account): waits
# sqlite3's default 5 s for a writer mid-commit.
READ_ONLY = Policy(read_only=True)

# The durable steer inbox: a steer is queued from another process while the harness
# consumes them; 30 s outlasts any single queue or consume transaction.
STEER_INBOX = Policy(timeout=30, autocommit=True, pragmas=("journal_mode=WAL", "synchronous=FULL"))

# A continuity ledger store being made beside its path (a private file nobody else
# opens yet): sqlite3's default 5 s; a rollback journal, so the renamed file is whole.
LEDGER_STORE_CREATE = Policy(autocommit=True, any_thread=True, pragmas=("journal_mode=DELETE",))

# A continuity ledger store opened to write (one owner session): sqlite3's default 5 s.
LEDGER_STORE_WRITER = Policy(
    uri=True, autocommit=True, any_thread=True, pragmas=("synchronous=FULL",)
)

# A continuity ledger store opened to read: sqlite3's default 5 s.
LEDGER_STORE_READER = Policy(read_only=True, autocommit=True, any_thread=True)

# The retained-record store, written by its one session: sqlite3's default 5 s.
RETAINED_WRITER = Policy(any_thread=True)

# The retained-record store served read-only (a history server): sqlite3's default 5 s.
RETAINED_READER = Policy(read_only=True, any_thread=True)

# An invocation's admission ledger, shared by every probe process of the invocation:
# 30 s outlasts the short admission transactions of all of them.
CALL_LEDGER = Policy(timeout=30, autocommit=True)

# A run's cost-cap account, shared by every process of the run (a hold before every
# real send): 60 s, because a refused hold would stop a paid run.
COST_CAP = Policy(timeout=60, autocommit=True, any_thread=True, pragmas=("synchronous=FULL",))

# The pilot's durable permit account: 10 s for another writer to commit, past which
# the controller stops (``lookup_account_failed``, spend.durable).
PERMIT_ACCOUNT = Policy(timeout=10.0, autocommit=True, pragmas=("synchronous=FULL",))

# The pilot's writer lease, taken by its holder: never waits (a held lock means
# another controller holds the lease); a rollback journal, so no WAL files appear.
LEASE = Policy(timeout=0, autocommit=True, pragmas=("journal_mode=DELETE",))

# Proving from another process that the lease's writer lock is held: never waits (a
# busy lock is the proof).
LEASE_PROBE = Policy(timeout=0, autocommit=True)

# Reading the lease's recorded holder from another process: never waits (a locked
# file is a lease being created).
LEASE_READER = Policy(read_only=True, timeout=0)
