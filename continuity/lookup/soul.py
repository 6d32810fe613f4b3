"""The frozen soul of lookup mode: copied into every lookup workspace, bound by digest.

The soul (``fixtures/lookup/continuity-soul-v1.md``) is the reader's standing
instruction in lookup mode. Two digests bind it: the sha256 of its raw bytes and the
sha256 of its normalised core (HTML comments removed, line endings, trailing spaces and
blank-line runs normalised), so a cosmetic edit and a substantive one are told apart.
Both enter the plan's confirmation and the sizing policy. A missing, modified or
mismatched soul fails closed; there is no fallback to another file.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import msgspec

from continuity.errors import SoulError

__all__ = [
    "SOUL_NAME",
    "Soul",
    "check_soul",
    "default_soul_path",
    "install_soul",
    "normalise_core",
    "read_soul",
]

SOUL_NAME = "continuity-soul-v1.md"


class Soul(msgspec.Struct, frozen=True):
    sha256: str
    core_sha256: str
    core: str


def default_soul_path() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures" / "lookup" / SOUL_NAME


def normalise_core(text: str) -> str:
    text = re.sub(r"<!--.*?-->", "", text.replace("\r\n", "\n").replace("\r", "\n"), flags=re.S)
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def read_soul(path: Path | None = None) -> Soul:
    """The soul at `path` (default: the frozen fixture) with its two digests.

    Raises:
        SoulError: ``lookup_soul_missing`` when the file cannot be read.
    """
    source = path or default_soul_path()
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise SoulError(
            f"cannot read the soul: {exc.strerror}",
            code="lookup_soul_missing",
            location=str(source),
        ) from None
    core = normalise_core(data.decode("utf-8", errors="replace"))
    return Soul(
        hashlib.sha256(data).hexdigest(), hashlib.sha256(core.encode("utf-8")).hexdigest(), core
    )


def check_soul(soul: Soul, sha256: str, core_sha256: str, *, where: str) -> None:
    """Fail closed unless `soul` has exactly the bound digests.

    Raises:
        SoulError: ``lookup_soul_mismatch`` naming which digest differs.
    """
    if soul.sha256 != sha256 or soul.core_sha256 != core_sha256:
        which = "core" if soul.core_sha256 != core_sha256 else "raw bytes"
        raise SoulError(
            f"the soul's {which} do not match the bound digest "
            f"(raw {soul.sha256[:12]} vs {sha256[:12]}, core {soul.core_sha256[:12]} vs "
            f"{core_sha256[:12]})",
            location=where,
        )


def install_soul(
    workspace: Path, sha256: str, core_sha256: str, source: Path | None = None
) -> Soul:
    """Copy the soul into `workspace` and verify the copy against the bound digests."""
    target = workspace / SOUL_NAME
    origin = source or default_soul_path()
    if not origin.is_file():
        raise SoulError(
            "the frozen soul file is missing", code="lookup_soul_missing", location=str(origin)
        )
    shutil.copyfile(origin, target)
    soul = read_soul(target)
    check_soul(soul, sha256, core_sha256, where=str(target))
    return soul
