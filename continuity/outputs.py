"""The output directory (``out/``): where commands materialise what users read.

Everything here is derived from the store and can be rebuilt; files are still written
atomically (temp file, then ``os.replace``) so a reader or an uptodate check never sees
half a manifest.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from continuity.errors import UsageError

__all__ = [
    "OUT_ENV",
    "check_new_directory",
    "resolve_out_path",
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
    try:
        target.mkdir(parents=True)
    except OSError as exc:
        raise UsageError(
            f"cannot create it: {exc.strerror or type(exc).__name__}",
            code=invalid,
            location=str(target),
        ) from None
    writable = os.access(target, os.W_OK | os.X_OK)
    for folder in created:
        folder.rmdir()
    if not writable:
        raise UsageError("the directory would not be writable", code=invalid, location=str(target))
    return target


def usable_out_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """`resolve_out_path`, checked by `usable_directory` (``out_path_invalid``)."""
    return usable_directory(resolve_out_path(explicit), code="out_path_invalid")


def write_output(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_json(path: Path, record: msgspec.Struct) -> None:
    """Write a struct as indented JSON, atomically."""
    write_output(path, msgspec.json.format(msgspec.json.encode(record)) + b"\n")
