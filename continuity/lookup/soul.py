"""The frozen soul of lookup mode: copied into every lookup workspace, bound by digest.

The soul (``fixtures/lookup/continuity-soul-v1.md``) is the reader's standing
instruction in lookup mode. Two digests bind it: the sha256 of its raw bytes and the
sha256 of its normalised core (HTML comments removed, line endings, trailing spaces and
blank-line runs normalised), so a cosmetic edit and a substantive one are told apart.
Both enter the plan's confirmation and the sizing policy. A missing, modified or
mismatched soul fails closed; there is no fallback to another file.

`KNOWN_SOULS` freezes every soul a role may bind, by name, with both digests: S0
(``continuity-soul-v1.md``, the soul the frozen sizing policy was measured with) and S1
(``continuity-soul-v2.md``: S0's core plus ConversationHistory routing guidance, with no
final newline). `read_known_soul` reads one and checks it against its pins, so no role
follows a moving default.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import msgspec

from continuity.errors import SoulError

__all__ = [
    "KNOWN_SOULS",
    "SOUL_NAME",
    "Soul",
    "check_soul",
    "default_soul_path",
    "install_soul",
    "known_soul_name",
    "normalise_core",
    "read_known_soul",
    "read_soul",
    "soul_path",
]

SOUL_NAME = "continuity-soul-v1.md"
# name -> (raw sha256, normalised-core sha256). Frozen: a changed soul is a new file and
# a new row, never an edit of a row.
KNOWN_SOULS: dict[str, tuple[str, str]] = {
    SOUL_NAME: (
        "642237f9be4efa1f254adefb143171f11ba18eb1b749c3516289d893536ac96f",
        "126f4e218e9cf8c9998eebe94e9e84a752a992d5abece2cae5cfc8baa5e6f4c2",
    ),
    "continuity-soul-v2.md": (
        "1de9d74ef224d3025a8a3e6dcb729793fea9f0ac44b507d14a506655b8a798db",
        "efeedf02a9482a40636ed0c783ef46b74d0653a10676be67680f8df7bb20229e",
    ),
}


class Soul(msgspec.Struct, frozen=True):
    sha256: str
    core_sha256: str
    core: str


def soul_path(name: str) -> Path:
    """Where the frozen soul `name` lives (``fixtures/lookup/``)."""
    return Path(__file__).resolve().parents[2] / "fixtures" / "lookup" / name


def default_soul_path() -> Path:
    return soul_path(SOUL_NAME)


def known_soul_name(sha256: str, core_sha256: str) -> str | None:
    """The known soul bound by exactly these two digests, if any."""
    for name, pins in KNOWN_SOULS.items():
        if pins == (sha256, core_sha256):
            return name
    return None


def read_known_soul(name: str, *, where: str = "fixtures/lookup") -> Soul:
    """The known soul `name`, checked against its frozen digests.

    Raises:
        SoulError: ``lookup_soul_missing`` for a name that is not a known soul or a
            file that cannot be read; ``lookup_soul_mismatch`` when its bytes are not
            the frozen ones.
    """
    if name not in KNOWN_SOULS:
        raise SoulError(
            f"no frozen soul is named {name!r}; known: {', '.join(KNOWN_SOULS)}",
            code="lookup_soul_missing",
            location=where,
        )
    soul = read_soul(soul_path(name))
    check_soul(soul, *KNOWN_SOULS[name], where=str(soul_path(name)))
    return soul


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
    """Copy the soul into `workspace` and verify the copy against the bound digests.

    Without `source`, the known soul these digests bind (else S0, which then fails the
    check): the binding names the soul, never a default that could move.
    """
    name = known_soul_name(sha256, core_sha256) or SOUL_NAME
    target = workspace / name
    origin = source or soul_path(name)
    if not origin.is_file():
        raise SoulError(
            "the frozen soul file is missing", code="lookup_soul_missing", location=str(origin)
        )
    shutil.copyfile(origin, target)
    soul = read_soul(target)
    check_soul(soul, sha256, core_sha256, where=str(target))
    return soul
