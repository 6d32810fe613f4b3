"""Where this code runs from: a git checkout, or the tree a wheel installs.

A run needs more than the package: the fixtures (traces, the frozen lookup policy,
pricing, calibration suites, qualification plans), doit's tasks (``dodo.py`` and
``rules/``), the toy outside agent the offline contract drives, and ``pyproject.toml``
(doit's loader). `CODE_PATHS` names them, relative to the tree's root: in a checkout,
the checkout; installed from a wheel, ``continuity-tree/`` in the environment's
``site-packages``, which the wheel puts on the import path with ``continuity-tree.pth``.
The installed tree is laid out as the checkout is, so every path the code computes
relative to its own file (``fixtures/`` beside the package, ``dodo.py`` beside
``rules/``) resolves the same way in both, and no module moves (no store key moves).

These paths are the code a run binds. Real mode refuses a checkout with changes under
them (``checkout_dirty``) and ignores everything else in it (a note beside the
checkout's README is no code). Outside a checkout, a run binds the installed
distribution's version and a digest of the RECORD hashes of these files, in place of a
commit (`InstalledCode`), after checking every one of those files against its hash.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from continuity.digest import value_digest

__all__ = [
    "CODE_PATHS",
    "DISTRIBUTION",
    "TREE_DIR",
    "TREE_PTH",
    "InstalledCode",
    "installed_code",
    "is_installed_tree",
    "tree_root",
]

# The runtime tree, relative to its root; a wheel ships exactly these (setup.py).
CODE_PATHS = (
    "continuity",
    "rules",
    "dodo.py",
    "fixtures",
    "examples/agents/toy",
    "pyproject.toml",
)
DISTRIBUTION = "continuity"
TREE_DIR = "continuity-tree"  # not an identifier: nothing imports it by name
TREE_PTH = f"{TREE_DIR}.pth"
_DIGEST_DOMAIN = "continuity-installed-files-v1"


def tree_root() -> Path:
    """The root this code runs from: the checkout, or the installed ``continuity-tree``."""
    return Path(__file__).resolve().parents[1]


def is_installed_tree(root: Path) -> bool:
    """Whether `root` is a tree a wheel installed (its ``.pth`` beside it), without
    reading any of its files."""
    return root.name == TREE_DIR and (root.parent / TREE_PTH).is_file()


@dataclass(frozen=True)
class InstalledCode:
    """The code of an installed distribution, as a run binds it.

    Attributes:
        version: the distribution's version.
        files_digest: blake3 of the (path, RECORD hash) pairs of every file under the
            tree's `CODE_PATHS`, sorted by path.
        files: how many files the digest covers.
        modified: the covered paths whose bytes no longer match their RECORD hash, or
            that are missing, in RECORD order.
    """

    version: str
    files_digest: str
    files: int
    modified: tuple[str, ...]

    @property
    def label(self) -> str:
        """What a run records in place of a commit: ``<version>+<files digest>``."""
        return f"{self.version}+{self.files_digest}"


def _covered(relative: str) -> bool:
    """Whether a path relative to the tree's root lies under one of `CODE_PATHS`."""
    return any(relative == p or relative.startswith(f"{p}/") for p in CODE_PATHS)


def _matches(path: Path, record_hash: str) -> bool:
    """Whether `path`'s bytes have the RECORD hash ``<algorithm>=<urlsafe b64, unpadded>``."""
    algorithm, _, expected = record_hash.partition("=")
    if algorithm not in hashlib.algorithms_guaranteed:
        return False
    try:
        digest = hashlib.new(algorithm, path.read_bytes()).digest()
    except OSError:
        return False
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii") == expected


def _distribution_of(root: Path) -> importlib.metadata.Distribution | None:
    """The ``continuity`` distribution installed in `root`'s parent directory, if any."""
    found = importlib.metadata.distributions(name=DISTRIBUTION, path=[str(root.parent)])
    return next(iter(found), None)


def installed_code(root: Path | None = None) -> InstalledCode | None:
    """The installed distribution whose tree `root` (default: `tree_root`) is, bound
    by its version and its RECORD's hashes; None when `root` is no installed tree (a
    checkout, an editable install, a copy without RECORD).

    Every covered file is read and checked against its hash, so ``modified`` says
    whether the installed code is still what the distribution shipped.
    """
    root = (root or tree_root()).resolve()
    if not is_installed_tree(root):
        return None
    dist = _distribution_of(root)
    if dist is None or dist.files is None:
        return None
    hashes: dict[str, str] = {}
    for entry in dist.files:
        parts = entry.parts
        if len(parts) < 2 or parts[0] != TREE_DIR or entry.hash is None:
            continue  # bytecode pip compiled at install time carries no hash
        relative = "/".join(parts[1:])
        if _covered(relative):
            hashes[relative] = f"{entry.hash.mode}={entry.hash.value}"
    if not hashes:
        return None
    modified = tuple(
        relative for relative, value in hashes.items() if not _matches(root / relative, value)
    )
    return InstalledCode(
        version=dist.version,
        files_digest=value_digest((_DIGEST_DOMAIN, dict(sorted(hashes.items())))),
        files=len(hashes),
        modified=modified,
    )
