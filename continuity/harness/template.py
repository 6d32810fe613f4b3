"""A checkpoint's template: each probe's fresh copy, made in about a millisecond.

Restoring a checkpoint's snapshot from the store blake3-checks and writes every file:
0.2-0.4 MB for an original trace, about 3.2 MB for a hard one, once per probe. Instead,
the unit worker verifies the snapshot once per unit into a sibling directory, the
template (``<root>.template``, under the checkpoint's lock like the workspace), and
gives each probe a fresh workspace at the checkpoint's own path made from it:

- the files a probe appends to (`Workspace.probe_appends`: the session, the canonical
  history, the tool-history records) are copied;
- every other file is hard-linked, and made read-only first.

A process run as root can still write a read-only file, so the guard is the check
after each probe: every linked file's size, mtime and mode must be what they were when
the template was verified (each linked file's mtime is set to a fixed value then, so a
write right after a rebuild still shows). Any change breaks the fresh-copy rule for that
probe (it saw, or left, bytes that are not the snapshot's): `check` names the files, the caller
excludes the sample as ``checkpoint_contract_failed``, and rebuilds the template from
the verified snapshot before the next probe, so that probe sees pristine bytes.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from continuity.harness.workspace import Workspace
from continuity.store import Store

__all__ = ["LINKED_MTIME_NS", "Template", "remove_template", "template_folder"]

# Every linked file's mtime in the template: a write sets it to "now", which differs,
# however soon after the template was (re)built it happens.
LINKED_MTIME_NS = 0

_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


class Template:
    """The verified snapshot of tree `tree` beside `root`, and the fresh copies made
    from it at `root`."""

    def __init__(self, store: Store, tree: str, root: Path) -> None:
        self.store = store
        self.tree = tree
        self.root = root
        self.folder = template_folder(root)
        self.copied = frozenset(Workspace(root).probe_appends)
        # relative path -> (size, mtime_ns, mode) of every linked file, once verified
        self._linked: dict[str, tuple[int, int, int]] = {}

    def build(self) -> None:
        """Restore (and so verify) the snapshot into the template; make the files that
        will be linked read-only and record what they are."""
        _remove(self.folder)
        self.store.restore_tree(self.tree, self.folder)
        self._linked = {}
        for path in sorted(self.folder.rglob("*")):
            if path.is_dir() or path.is_symlink():
                continue
            relative = path.relative_to(self.folder).as_posix()
            if relative in self.copied:
                continue
            path.chmod(stat.S_IMODE(path.stat().st_mode) & ~_WRITE_BITS)
            os.utime(path, ns=(LINKED_MTIME_NS, LINKED_MTIME_NS))
            info = path.stat()
            self._linked[relative] = (info.st_size, info.st_mtime_ns, info.st_mode)

    def fresh_copy(self) -> Path:
        """A fresh workspace at `root`: linked and copied from the template."""
        _remove(self.root)
        for folder, dirs, files in os.walk(self.folder):
            source = Path(folder)
            target = self.root / source.relative_to(self.folder)
            target.mkdir(parents=True, exist_ok=True)
            for name in files:
                relative = (source / name).relative_to(self.folder).as_posix()
                if relative in self.copied:
                    shutil.copy2(source / name, target / name)
                else:
                    os.link(source / name, target / name)
            dirs.sort()
        return self.root

    def check(self) -> list[str]:
        """The linked files that changed since the template was verified (size, mtime or
        mode; a deleted template file counts): empty when the probe kept the rule."""
        changed = []
        for relative, expected in self._linked.items():
            try:
                info = (self.folder / relative).stat()
            except OSError:
                changed.append(relative)
                continue
            if (info.st_size, info.st_mtime_ns, info.st_mode) != expected:
                changed.append(relative)
        return changed

    def remove(self) -> None:
        _remove(self.folder)


def template_folder(root: Path) -> Path:
    """Where the template of the checkpoint workspace at `root` lives: beside it."""
    return root.with_name(root.name + ".template")


def remove_template(root: Path) -> None:
    """Remove the template beside `root`, if one is left (its worker was killed)."""
    _remove(template_folder(root))


def _remove(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)
