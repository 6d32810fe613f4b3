"""The pilot's writer lease: one controller process holds its output root's SQLite
writer lock from consumption until shutdown.

`acquire_lease(root)` exclusively creates ``<root>/lookup-pilot.lease`` (mode 0600,
never following a link), commits this process's PID and start identity into it, then
opens a write transaction it never commits (``BEGIN IMMEDIATE``: SQLite's RESERVED
lock). While the process
lives and has not released the lease, no other connection can write the file, while
readers can still read the committed identity. The lock is a POSIX lock, so it ends
with the process: a dead controller's lease is not held.

Two rules follow from POSIX locks:

- **Identity checks use `lstat` only.** Opening and closing any other descriptor of the
  lease file in the holding process would release all of its locks, even with the SQLite
  transaction still marked active. `Lease.verify` compares device, inode, link count,
  owner, mode and file type by `os.lstat`, and the holding connection's own state.
- **A failed acquisition removes only its own inode**: it closes SQLite first, then
  unlinks the path only if it still names the inode this call created. A pre-existing
  or replacement file is never deleted.

`check_lease(root)` is the other side, for a process that is not the holder (a probe
child before it reports ready): it reads the committed identity read-only, proves the
recorded controller is alive with the same start identity, and proves the writer lock
is held by trying to take it without waiting. A released lease, a dead controller, a
fabricated file, an empty file or an unrelated database is refused.

The start identity of a process is the kernel's boot id and the process's start time in
clock ticks since boot (``/proc/<pid>/stat`` field 22): a reused PID has another one.

Codes (`SpendError`): ``lookup_lease_root_invalid`` (the root is not a private
directory of this user), ``lookup_lease_exists`` (a lease file is already there),
``lookup_lease_failed`` (SQLite could not take the lease), ``lookup_lease_invalid``
(the file is not this lease: replaced, linked, another mode or owner, not a lease
database), ``lookup_lease_released`` (this handle was released, or belongs to a
forked process), ``lookup_lease_not_held`` (nobody holds the writer lock, or its
recorded controller is gone).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from continuity.errors import SpendError
from continuity.processes import NOT_RUNNING, proc_stat
from continuity.sqlite_open import LEASE, LEASE_PROBE, LEASE_READER, open_db

__all__ = [
    "LEASE_NAME",
    "LEASE_SCHEMA",
    "Lease",
    "LeaseHolder",
    "acquire_lease",
    "check_lease",
    "process_start",
]

LEASE_NAME = "lookup-pilot.lease"
LEASE_SCHEMA = "continuity-lookup-pilot-lease-v1"
_PRIVATE_FILE = 0o600


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown-boot"


def process_start(pid: int) -> str | None:
    """The start identity of process `pid` (boot id and start time), or None when no
    such process is running (a zombie counts as gone)."""
    fields = proc_stat(pid)
    if not fields or fields[0] in NOT_RUNNING:  # a zombie or a dead task is not alive
        return None
    return f"{_boot_id()}:{fields[19]}"


def _check_root(root: Path) -> None:
    try:
        info = os.lstat(root)
    except OSError as exc:
        raise SpendError(
            f"the lease root cannot be read ({exc.strerror})",
            code="lookup_lease_root_invalid",
            location="root",
        ) from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise SpendError(
            "the lease root must be a directory this user owns (not a link)",
            code="lookup_lease_root_invalid",
            location="root",
        )
    if info.st_mode & 0o077:
        raise SpendError(
            f"the lease root is not private (mode {stat.S_IMODE(info.st_mode):o})",
            code="lookup_lease_root_invalid",
            location="root",
        )


@dataclass(frozen=True)
class LeaseHolder:
    """What a lease file records: the holding controller's PID and start identity."""

    pid: int
    start: str


def _same_file(info: os.stat_result, device: int, inode: int) -> bool:
    return (
        info.st_dev == device
        and info.st_ino == inode
        and stat.S_ISREG(info.st_mode)
        and info.st_nlink == 1
        and info.st_uid == os.getuid()
        and stat.S_IMODE(info.st_mode) == _PRIVATE_FILE
    )


class Lease:
    """A held writer lease (see the module docstring). Keep it until shutdown."""

    def __init__(self, path: Path, connection: sqlite3.Connection, device: int, inode: int):
        self.path = path
        self.device, self.inode = device, inode
        self.holder = LeaseHolder(os.getpid(), process_start(os.getpid()) or "")
        self._connection: sqlite3.Connection | None = connection

    def verify(self) -> None:
        """Prove this handle still holds the lease, without opening the file.

        Raises:
            SpendError: ``lookup_lease_released``, ``lookup_lease_invalid``.
        """
        connection = self._connection
        if connection is None or not connection.in_transaction:
            raise SpendError(
                "this lease was released", code="lookup_lease_released", location=str(self.path)
            )
        if os.getpid() != self.holder.pid:
            raise SpendError(
                "a lease is not inherited by a forked process",
                code="lookup_lease_released",
                location=str(self.path),
            )
        try:
            info = os.lstat(self.path)
        except OSError:
            info = None
        if info is None or not _same_file(info, self.device, self.inode):
            raise SpendError(
                "the lease file was replaced, linked or changed",
                code="lookup_lease_invalid",
                location=str(self.path),
            )

    def release(self) -> None:
        """Give the writer lock up (the file stays: the root has been used)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.rollback()
            connection.close()


def acquire_lease(root: Path) -> Lease:
    """Create and hold `root`'s writer lease.

    Raises:
        SpendError: ``lookup_lease_root_invalid``, ``lookup_lease_exists``,
            ``lookup_lease_failed``.
    """
    _check_root(root)
    path = root / LEASE_NAME
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, _PRIVATE_FILE)
    except FileExistsError:
        raise SpendError(
            "a lease file is already there", code="lookup_lease_exists", location=str(path)
        ) from None
    except OSError as exc:
        raise SpendError(
            f"the lease cannot be created ({exc.strerror})",
            code="lookup_lease_failed",
            location=str(path),
        ) from None
    try:
        created = os.fstat(fd)
    finally:
        os.close(fd)  # before SQLite opens the file: closing later would drop its locks
    connection: sqlite3.Connection | None = None
    try:
        connection = open_db(path, LEASE)
        connection.execute(
            "CREATE TABLE lease (schema TEXT NOT NULL, pid INTEGER NOT NULL, start TEXT NOT NULL)"
        )
        start = process_start(os.getpid())
        if start is None:
            raise sqlite3.OperationalError("this process has no start identity")
        connection.execute("INSERT INTO lease VALUES (?, ?, ?)", (LEASE_SCHEMA, os.getpid(), start))
        # The writer lock (RESERVED), taken at once and never committed; nothing is
        # written under it, so a dead holder leaves no hot journal behind.
        connection.execute("BEGIN IMMEDIATE")
        return Lease(path, connection, created.st_dev, created.st_ino)
    except sqlite3.Error as exc:
        if connection is not None:
            connection.close()
        try:  # remove only the inode this call created
            if os.lstat(path).st_ino == created.st_ino and os.lstat(path).st_dev == created.st_dev:
                os.unlink(path)
        except OSError:
            pass
        raise SpendError(
            f"the lease could not be taken: {exc}", code="lookup_lease_failed", location=str(path)
        ) from None


def _read_holder(path: Path) -> LeaseHolder:
    try:
        reader = open_db(path, LEASE_READER)
    except sqlite3.Error:
        raise SpendError(
            "the lease is not a lease database", code="lookup_lease_invalid", location=str(path)
        ) from None
    try:
        rows = reader.execute("SELECT schema, pid, start FROM lease").fetchall()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc):  # a writer mid-commit: only at creation
            raise SpendError(
                "the lease is being created", code="lookup_lease_not_held", location=str(path)
            ) from None
        raise SpendError(
            "the lease is not a lease database", code="lookup_lease_invalid", location=str(path)
        ) from None
    except sqlite3.DatabaseError:
        raise SpendError(
            "the lease is not a lease database", code="lookup_lease_invalid", location=str(path)
        ) from None
    finally:
        reader.close()
    if len(rows) != 1 or rows[0][0] != LEASE_SCHEMA or not isinstance(rows[0][1], int):
        raise SpendError(
            "the lease records no controller", code="lookup_lease_invalid", location=str(path)
        )
    return LeaseHolder(pid=rows[0][1], start=str(rows[0][2]))


def check_lease(root: Path) -> LeaseHolder:
    """From another process: the live holder of `root`'s lease, proven.

    Never call this in the holding process (it opens the file: see the module docstring).

    Raises:
        SpendError: ``lookup_lease_root_invalid``, ``lookup_lease_invalid``,
            ``lookup_lease_not_held``.
    """
    _check_root(root)
    path = root / LEASE_NAME
    try:
        info = os.lstat(path)
    except OSError:
        raise SpendError(
            "there is no lease", code="lookup_lease_not_held", location=str(path)
        ) from None
    if not _same_file(info, info.st_dev, info.st_ino):
        raise SpendError(
            "the lease is not a private regular file of this user with one link",
            code="lookup_lease_invalid",
            location=str(path),
        )
    holder = _read_holder(path)
    if holder.pid == os.getpid():
        raise SpendError(
            "the holder checks its lease with Lease.verify",
            code="lookup_lease_invalid",
            location=str(path),
        )
    if process_start(holder.pid) != holder.start:
        raise SpendError(
            "the lease's controller is gone", code="lookup_lease_not_held", location=str(path)
        )
    probe = open_db(path, LEASE_PROBE)
    try:
        probe.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return holder  # the writer lock is taken: the lease is held
    else:
        probe.rollback()
        raise SpendError(
            "nobody holds the lease's writer lock", code="lookup_lease_not_held", location=str(path)
        )
    finally:
        probe.close()
