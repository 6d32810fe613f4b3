"""The output directory (``out/``): where commands materialise what users read.

Everything here is derived from the store and can be rebuilt; files are still written
atomically (temp file, then ``os.replace``) so a reader or an uptodate check never sees
half a manifest.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

__all__ = ["OUT_ENV", "resolve_out_path", "write_json", "write_output"]

OUT_ENV = "CONTINUITY_OUT"


def resolve_out_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The output root: `explicit`, else ``$CONTINUITY_OUT``, else ``./out``."""
    chosen = explicit or os.environ.get(OUT_ENV) or "out"
    return Path(chosen).expanduser().absolute()


def write_output(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_json(path: Path, record: msgspec.Struct) -> None:
    """Write a struct as indented JSON, atomically."""
    write_output(path, msgspec.json.format(msgspec.json.encode(record)) + b"\n")
