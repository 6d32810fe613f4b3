"""The private scratch store a fixed-budget sizing measures in, and its removal.

Checkpoints and probe workspaces of a holdout hold the holdout's content, so a sizing
builds them in a scratch store of its own: a new directory made by ``tempfile.mkdtemp``
(mode 0700, named ``continuity-fixed-budget-<pid>-...``) under the system's temporary
directory, never inside the checkout or the user's store. `Scratch.close` stops the
zygotes it started and removes the directory (owner-read-only folders included) when
measuring ends, on success or failure. A process killed outright cannot remove its own:
the next sizing that opens a scratch store under the same parent removes every scratch
directory whose process is gone (`sweep_stale`).

This is plumbing: where the scratch store lives never shapes a measured value, so no
record's key binds this module.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from continuity.errors import UsageError
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.runner.preflight.tree import clear_tree
from continuity.store import Store
from continuity.zygote import ZygotePool

__all__ = ["SCRATCH_PREFIX", "Scratch", "scratch_root", "sweep_stale"]

SCRATCH_PREFIX = "continuity-fixed-budget-"
_NAME = re.compile(rf"{re.escape(SCRATCH_PREFIX)}(\d+)-")


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's, or an impossible id, counts: a
    directory is never removed from under a live sizing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def sweep_stale(base: Path) -> list[Path]:
    """Remove the scratch directories under `base` whose process is gone; return them."""
    removed: list[Path] = []
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir():
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or pid <= 0 or _alive(pid):
            continue
        clear_tree(entry)
        removed.append(entry)
    return removed


def scratch_root(forbidden: Sequence[Path], parent: Path | None = None) -> Path:
    """A new private directory (mode 0700) under `parent` (default: the system's
    temporary directory), after sweeping the stale ones there.

    Raises:
        UsageError: ``lookup_scratch_root_invalid`` (nothing is created) when `parent`
            resolves inside one of `forbidden` (the checkout, the user's store).
    """
    base = Path(os.path.realpath(parent or tempfile.gettempdir()))
    for root in forbidden:
        resolved = Path(os.path.realpath(root))
        if base == resolved or resolved in base.parents:
            raise UsageError(
                f"the scratch directory's parent {base} lies inside {resolved}; holdout "
                "content must stay outside the checkout and the store (set TMPDIR elsewhere)",
                code="lookup_scratch_root_invalid",
                location=str(base),
            )
    base.mkdir(parents=True, exist_ok=True)
    sweep_stale(base)
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=base))


class Scratch:
    """The scratch store and the zygotes, opened at the first job that measures (a run
    that reuses every record creates nothing) and removed by `close`."""

    def __init__(self, parent: Path | None, forbidden: Sequence[Path]) -> None:
        self.parent, self.forbidden = parent, forbidden
        self.root: Path | None = None
        self.zygotes: ZygotePool | None = None

    def open(self) -> tuple[Store, ZygotePool]:
        """The scratch store and the zygote pool (created at the first call).

        Raises:
            UsageError: ``lookup_scratch_root_invalid``.
        """
        if self.root is None:
            self.root = scratch_root(self.forbidden, self.parent)
        if self.zygotes is None:
            self.zygotes = ZygotePool(ZYGOTE_PRELOAD, start=1)
        return Store(self.root / "store"), self.zygotes

    def close(self) -> None:
        """Stop the zygotes, then remove the scratch root."""
        try:
            if self.zygotes is not None:
                self.zygotes.close()
        finally:
            if self.root is not None:
                clear_tree(self.root)
