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
commit (`InstalledCode`), after checking every one of those files against its hash and
walking these paths for files RECORD does not list (an added module is a change to the
code, as an untracked file in a checkout is; bytecode, ``__pycache__/`` and ``*.pyc``,
is not).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import os
import sys
from collections.abc import Iterator
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
    "interpreter",
    "is_bytecode",
    "is_installed_tree",
    "task_command",
    "tree_hashes",
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


def interpreter() -> str:
    """How a printed command names Python: ``python3`` in a checkout (the README's form),
    this interpreter's path from an installed tree (its virtualenv need not be active)."""
    return sys.executable if is_installed_tree(tree_root()) else "python3"


def task_command() -> list[str]:
    """The words a printed command runs a doit task with: ``python3 -m doit`` in a
    checkout (from its root, where dodo.py is), else ``<interpreter> -m continuity``,
    the front door (`continuity.__main__`), which finds the installed tasks from any
    directory."""
    if is_installed_tree(tree_root()):
        return [sys.executable, "-m", "continuity"]
    return ["python3", "-m", "doit"]


@dataclass(frozen=True)
class InstalledCode:
    """The code of an installed distribution, as a run binds it.

    Attributes:
        version: the distribution's version.
        files_digest: blake3 of the (path, RECORD hash) pairs of every file under the
            tree's `CODE_PATHS`, sorted by path.
        files: how many files the digest covers.
        modified: the covered paths whose bytes no longer match their RECORD hash, or
            that are missing, in RECORD order; then the files under `CODE_PATHS` that
            RECORD does not list (added since the install), sorted.
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


def is_bytecode(relative: str) -> bool:
    """Whether a ``/``-separated path is bytecode (under ``__pycache__/``, or ``*.pyc``)."""
    return "__pycache__" in relative.split("/") or relative.endswith(".pyc")


def tree_hashes(root: Path, *, bytecode: bool = True) -> dict[str, str]:
    """sha256 of every file below `root`, by path below it (``/`` separators); a link
    counts by its target's text and is never followed, a link to a folder too. With
    ``bytecode=False`` bytecode (`is_bytecode`) is left out."""
    found: dict[str, str] = {}
    for folder, subfolders, names in os.walk(root):
        base = Path(folder)
        linked = [name for name in subfolders if (base / name).is_symlink()]
        subfolders[:] = [name for name in subfolders if name not in linked]
        for name in (*names, *linked):
            path = base / name
            relative = path.relative_to(root).as_posix()
            if not bytecode and is_bytecode(relative):
                continue
            if path.is_symlink():
                data = os.readlink(path).encode("utf-8", "surrogateescape")
            elif path.is_file():
                data = path.read_bytes()
            else:
                continue
            found[relative] = hashlib.sha256(data).hexdigest()
    return found


def _tree_files(root: Path) -> Iterator[str]:
    """Every file (or link) under `root`'s `CODE_PATHS`, relative to `root` with ``/``
    separators, except bytecode (``__pycache__/``, ``*.pyc``: Python writes it beside
    the code it runs)."""
    for code_path in CODE_PATHS:
        top = root / code_path
        if not top.is_dir():
            if top.is_file() or top.is_symlink():
                yield code_path
            continue
        for folder, subfolders, names in os.walk(top):
            base = Path(folder).relative_to(root).as_posix()
            kept = sorted(d for d in subfolders if d != "__pycache__")
            # os.walk never enters a link to a folder: the link itself is the entry
            linked = {d for d in kept if os.path.islink(os.path.join(folder, d))}
            subfolders[:] = [d for d in kept if d not in linked]
            entries = [*(n for n in names if not n.endswith(".pyc")), *linked]
            yield from (f"{base}/{name}" for name in sorted(entries))


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
    record = dist.read_text("RECORD") if dist is not None else None
    if dist is None or record is None:
        return None
    hashes: dict[str, str] = {}
    listed: set[str] = set()  # every file RECORD names in the tree, hashed or not
    # RECORD itself, not `dist.files`: a newer importlib_metadata on sys.meta_path (some
    # dependencies install its finder) leaves out the files that are missing, which are
    # exactly the modified ones this must report.
    for row in csv.reader(record.splitlines()):
        parts = row[0].split("/") if row else []
        if len(parts) < 2 or parts[0] != TREE_DIR:
            continue
        relative = "/".join(parts[1:])
        listed.add(relative)
        if len(row) > 1 and row[1] and _covered(relative):  # pip's bytecode has no hash
            hashes[relative] = row[1]
    if not hashes:
        return None
    changed = [
        relative for relative, value in hashes.items() if not _matches(root / relative, value)
    ]
    added = [relative for relative in _tree_files(root) if relative not in listed]
    modified = (*changed, *sorted(added))
    return InstalledCode(
        version=dist.version,
        files_digest=value_digest((_DIGEST_DOMAIN, dict(sorted(hashes.items())))),
        files=len(hashes),
        modified=modified,
    )
