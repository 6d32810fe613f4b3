"""Private files of the pilot: exclusive, synced writes and no-follow, single-link reads.

Consumption claims and slot receipts share these rules: a file is created exclusively
(``O_EXCL``, mode 0600, never through a link), written, synced, and its directory synced
before anyone is told it exists; it is read without following a link, and only if it is
a regular file of this user with one link, mode 0600, and the same inode that was
checked before it was opened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["read_private", "sync_directory", "write_new"]


def sync_directory(path: Path) -> None:
    """fsync a directory (its new entries survive a crash)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(path: Path, data: bytes) -> None:
    """Exclusively create `path` (0600, never through a link), write and sync it and its
    directory. Raises `FileExistsError` when it exists, `OSError` otherwise."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    sync_directory(path.parent)


def read_private(path: Path, limit: int = 1 << 16) -> bytes | None:
    """The bytes of a private file of this user, or None when it is missing, a link, an
    alias (more than one link), not 0600, larger than `limit`, or not the inode checked
    before it was opened."""
    try:
        before = os.lstat(path)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        after = os.fstat(fd)
        sound = (
            stat.S_ISREG(after.st_mode)
            and after.st_nlink == 1
            and after.st_uid == os.getuid()
            and stat.S_IMODE(after.st_mode) == 0o600
            and (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
            and after.st_size <= limit
        )
        return os.read(fd, limit + 1) if sound else None
    finally:
        os.close(fd)
