"""Bounded reads of the files and directories a user names: traces, registrations,
manifests, archives, run directories, compare inputs.

Every such read goes through `read_user_bytes` (a file) or `check_user_dir` (a
directory). A file is stat'ed first and refused unless it is a regular file, so a
device (``/dev/zero``), a FIFO, a socket or a directory never reaches ``read``; it is
then opened with ``O_NONBLOCK`` (a FIFO swapped in after the stat cannot hang the
open), checked again on the open descriptor, and read to at most ``limit + 1`` bytes,
so a file that grows, or a ``/proc`` file whose size the stat does not tell, fails
fast. A violation is one `InputError` with a stable code, the path as its location
and the limit in its message:

========================  ==============================================================
``input_not_a_file``      a file was expected: the path is a directory, device, FIFO...
``input_too_large``       the file holds more than its kind's limit (below)
``input_not_a_directory`` a directory was expected: the path is a file or a device
========================  ==============================================================

A path that is missing or unreadable (no permission) stays an `OSError`: every caller
already names that case with its own code (``role_registration_invalid``,
``holdout_file_unreadable``, ``trace_file_unreadable`` ...).

The limits, one per kind of input (bytes):

- `REGISTRATION_MAX_BYTES` (4 MiB): a compare or pilot registration (a few KiB);
- `DOCUMENT_MAX_BYTES` (16 MiB): a JSON document a command reads back (``launches.json``,
  a role receipt, ``run.json``, ``plan.json``, a results or score file, a policy);
- `UNIT_MAX_BYTES` (64 MiB): one unit file of a run directory;
- `ARCHIVE_MAX_BYTES` (256 MiB): an archive to import (LoCoMo's zip is under 3 MB).

A trace file keeps its own limit, `continuity.traces.schema.TRACE_MAX_BYTES` (8 MiB).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from continuity.errors import InputError

__all__ = [
    "ARCHIVE_MAX_BYTES",
    "DOCUMENT_MAX_BYTES",
    "REGISTRATION_MAX_BYTES",
    "UNIT_MAX_BYTES",
    "check_user_dir",
    "read_user_bytes",
]

_MIB = 1024 * 1024
REGISTRATION_MAX_BYTES = 4 * _MIB
DOCUMENT_MAX_BYTES = 16 * _MIB
UNIT_MAX_BYTES = 64 * _MIB
ARCHIVE_MAX_BYTES = 256 * _MIB
_CHUNK = _MIB


def _kind(mode: int) -> str:
    """What a non-regular file is, in a user's words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _limit_text(limit: int) -> str:
    if limit >= _MIB and limit % _MIB == 0:
        return f"{limit // _MIB} MiB ({limit:,} bytes)"
    return f"{limit:,} bytes"


def _not_a_file(path: str, what: str, mode: int) -> InputError:
    return InputError(
        f"{what} must be a regular file; this is {_kind(mode)}",
        code="input_not_a_file",
        location=path,
    )


def read_user_bytes(path: str | os.PathLike[str], *, limit: int, what: str) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed), at most `limit`.

    Args:
        path: the file a user named.
        limit: the most bytes the file may hold (its kind's constant above).
        what: the input in a user's words (``"the registration"``), for the message.

    Raises:
        InputError: ``input_not_a_file`` (a directory, device, FIFO or socket, before
            any byte is read), ``input_too_large`` (more than `limit` bytes; at most
            ``limit + 1`` are read).
        OSError: the path is missing or cannot be opened or read (the caller's code).
    """
    text = os.fspath(path)
    mode = os.stat(text).st_mode
    if not stat.S_ISREG(mode):
        raise _not_a_file(text, what, mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(text, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # swapped after the stat
            raise _not_a_file(text, what, mode)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:
        raise InputError(
            f"{what} is over its limit of {_limit_text(limit)}",
            code="input_too_large",
            location=text,
        )
    return b"".join(chunks)


def check_user_dir(path: str | os.PathLike[str], *, what: str) -> Path:
    """`path` as a directory that exists (symlinks followed).

    Raises:
        InputError: ``input_not_a_directory`` (it exists and is a file, device, FIFO...).
        OSError: the path is missing or cannot be stat'ed (the caller's code).
    """
    text = os.fspath(path)
    mode = os.stat(text).st_mode
    if not stat.S_ISDIR(mode):
        kind = "a regular file" if stat.S_ISREG(mode) else _kind(mode)
        raise InputError(
            f"{what} must be a directory; this is {kind}",
            code="input_not_a_directory",
            location=text,
        )
    return Path(text)
