"""``--capture-upkeep-output DIR``: the raw extraction completions, for fictional
diagnostics only.

Off by default. Each stage of each preparation writes
``DIR/upkeep-output/r<repeat>-<trace>-p<1|2|3>.json``: the raw completion, its stable
validation failure code and the merged validated ledger (`continuity.memory.upkeep.
Capture`). Never a prompt, never a credential; models, auth and caps are unchanged.
Captures are benchmark artifacts: never written into the store or the workspace.

The rules, checked before any stage runs:

- the directory must be given explicitly, as an absolute path, and (symlinks resolved)
  outside the checkout, offline too (``capture_output_invalid``,
  ``capture_output_inside_checkout``);
- only fictional traces are captured (``capture_output_invalid``);
- an existing capture file is refused, never overwritten (``capture_output_exists``);
- the folder is made owner-only (0700) and every file is created owner-only (0600),
  exclusively.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from continuity.errors import LedgerError
from continuity.memory.upkeep_receipts import Capture

__all__ = ["capture_folder", "capture_paths", "write_capture"]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def capture_folder(directory: str, *, checkout: Path) -> Path:
    """The checked ``DIR/upkeep-output`` folder (made owner-only).

    Raises:
        LedgerError: ``capture_output_invalid`` (not an absolute path, or not a
            directory), ``capture_output_inside_checkout``.
    """
    given = Path(directory)
    if not given.is_absolute():
        raise LedgerError(
            "--capture-upkeep-output needs an absolute directory",
            code="capture_output_invalid",
            location=directory,
        )
    resolved = given.resolve()
    if _inside(resolved, checkout.resolve()):
        raise LedgerError(
            "upkeep captures are never written inside the checkout",
            code="capture_output_inside_checkout",
            location=directory,
        )
    if resolved.exists() and not resolved.is_dir():
        raise LedgerError(
            "--capture-upkeep-output is not a directory",
            code="capture_output_invalid",
            location=directory,
        )
    folder = resolved / "upkeep-output"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder.chmod(0o700)
    except OSError as exc:
        raise LedgerError(
            f"cannot make the capture folder ({exc.strerror})",
            code="capture_output_invalid",
            location=str(folder),
        ) from None
    return folder


def capture_paths(folder: Path, *, repeat: int, trace_id: str, fictional: bool) -> list[Path]:
    """The three capture files of one preparation, none of which may exist yet.

    Raises:
        LedgerError: ``capture_output_invalid`` for a trace that is not fictional,
            ``capture_output_exists`` naming the first file that exists.
    """
    if not fictional:
        raise LedgerError(
            "upkeep output is captured for fictional traces only",
            code="capture_output_invalid",
            location=trace_id,
        )
    paths = [folder / f"r{repeat}-{trace_id}-p{stage}.json" for stage in (1, 2, 3)]
    for path in paths:
        if path.exists():
            raise LedgerError(
                "a capture file exists already; captures are never overwritten",
                code="capture_output_exists",
                location=str(path),
            )
    return paths


def write_capture(path: Path, capture: Capture) -> None:
    """Write one capture, owner-only and exclusively (an existing file is refused).

    Raises:
        LedgerError: ``capture_output_exists``; ``capture_output_invalid`` when the file
            cannot be written.
    """
    data = msgspec.json.format(msgspec.json.encode(capture)) + b"\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except FileExistsError:
        raise LedgerError(
            "a capture file exists already", code="capture_output_exists", location=str(path)
        ) from None
    except OSError as exc:
        raise LedgerError(
            f"cannot write the capture ({exc.strerror})",
            code="capture_output_invalid",
            location=str(path),
        ) from None
