"""The output directory (``out/``): where commands materialise what users read.

Everything here is derived from the store and can be rebuilt; files are still written
atomically (a hidden ``.NAME.PID.tmp`` sibling, then ``os.replace``) so a reader or an
uptodate check never sees half a manifest. A write that fails or is interrupted removes
its temp file; one left by a killed process (SIGKILL runs no cleanup) is swept by the next
write into its folder once no process of that id is alive.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import msgspec

from continuity.errors import UsageError

__all__ = [
    "OUT_ENV",
    "check_new_directory",
    "resolve_out_path",
    "sweep_stale_temp_files",
    "usable_directory",
    "usable_out_path",
    "write_json",
    "write_output",
]

OUT_ENV = "CONTINUITY_OUT"


def resolve_out_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The output root: `explicit`, else ``$CONTINUITY_OUT``, else ``./out``."""
    chosen = explicit or os.environ.get(OUT_ENV) or "out"
    return Path(chosen).expanduser().absolute()


def usable_directory(path: str | os.PathLike[str], *, code: str, create: bool = True) -> Path:
    """`path` (``~`` expanded, made absolute) as a directory this process can write,
    created with its parents if missing. With ``create=False`` nothing is created: a
    missing directory passes when its nearest existing parent is a writable directory
    (so ``/proc/nope`` passes until it is created).

    Raises:
        UsageError: `code` (``store_path_invalid``, ``out_path_invalid``) when the path is
            empty, is or lies under a file, cannot be created (``/proc/nope``) or is not
            writable; the location is the path.
    """
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise UsageError("not a usable directory path", code=code, location=repr(text))
    root = Path(text).expanduser().absolute()
    if not create:
        existing = next((p for p in (root, *root.parents) if p.exists()), Path("/"))
        if not existing.is_dir():
            raise UsageError(
                f"{existing} exists and is not a directory", code=code, location=str(root)
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            raise UsageError(f"{existing} is not writable", code=code, location=str(root))
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(
            f"cannot use it as a directory: {reason}", code=code, location=str(root)
        ) from None
    if not root.is_dir():
        raise UsageError("exists and is not a directory", code=code, location=str(root))
    if not os.access(root, os.W_OK | os.X_OK):
        raise UsageError("the directory is not writable", code=code, location=str(root))
    return root


def check_new_directory(path: str | os.PathLike[str], *, exists: str, invalid: str) -> Path:
    """`path` as a directory that does not exist yet and can be created: the check
    creates it (with any missing parents) and removes what it created again.

    Raises:
        UsageError: `exists` when the path exists, `invalid` when it cannot be created
            (``/proc/nope``, under a file, a read-only parent); the location is the path.
    """
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise UsageError("not a usable directory path", code=invalid, location=repr(text))
    target = Path(text).expanduser().absolute()
    if target.exists() or target.is_symlink():
        raise UsageError(
            "the directory exists; a new one is needed", code=exists, location=str(target)
        )
    created = [target, *(p for p in target.parents if not p.exists())]
    for attempt in range(20):
        try:
            target.mkdir(parents=True)
            break
        except FileNotFoundError:  # a parent another check had made, removed meanwhile
            if attempt == 19:
                raise UsageError("cannot create it", code=invalid, location=str(target)) from None
        except OSError as exc:
            raise UsageError(
                f"cannot create it: {exc.strerror or type(exc).__name__}",
                code=invalid,
                location=str(target),
            ) from None
    writable = os.access(target, os.W_OK | os.X_OK)
    target.rmdir()
    for folder in created[1:]:  # parents: another check may be using one right now
        with contextlib.suppress(OSError):
            folder.rmdir()
    if not writable:
        raise UsageError("the directory would not be writable", code=invalid, location=str(target))
    return target


def usable_out_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """`resolve_out_path`, checked by `usable_directory` (``out_path_invalid``)."""
    return usable_directory(resolve_out_path(explicit), code="out_path_invalid")


_TMP_NAME = re.compile(r"\A\..+\.(?P<pid>[0-9]{1,10})\.tmp\Z")
_swept: set[Path] = set()  # folders this process has swept (once each: a listing per write
# into a folder of thousands of units would make writing them quadratic)


def _process_alive(pid: int) -> bool:
    """Whether a process `pid` exists on this host (a recycled id counts as alive, so
    the worst case is a stale temp file kept, never a live writer's file removed)."""
    if pid <= 0:
        return True  # never signal a process group
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or an id no process can have: kept)
    return True


def sweep_stale_temp_files(folder: Path) -> list[Path]:
    """Remove the ``.NAME.PID.tmp`` files in `folder` whose process is dead; return them.

    Process ids are per host: an output folder shared between hosts is not supported
    (a write from another host could look stale while it runs).
    """
    removed: list[Path] = []
    try:
        candidates = sorted(folder.glob(".*.tmp"))
    except OSError:
        return removed
    for candidate in candidates:
        match = _TMP_NAME.fullmatch(candidate.name)
        if match is None:
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or _process_alive(pid):
            continue
        with contextlib.suppress(FileNotFoundError):  # another sweeper was first
            candidate.unlink()
            removed.append(candidate)
    return removed


def write_output(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically through a hidden temp sibling.

    The first write of this process into a folder sweeps its stale temp files
    (`sweep_stale_temp_files`). Any failure between creating the temp file and moving it
    into place (an ``OSError``, ``KeyboardInterrupt``, ``SystemExit``) removes the temp
    file and re-raises: `path` keeps its old content or stays absent.
    """
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    if folder not in _swept:
        sweep_stale_temp_files(folder)
        _swept.add(folder)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:  # cleanup only (an interrupt too), re-raised as it was
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_json(path: Path, record: msgspec.Struct) -> None:
    """Write a struct as indented JSON, atomically."""
    write_output(path, msgspec.json.format(msgspec.json.encode(record)) + b"\n")
