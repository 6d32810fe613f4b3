"""Preflight's tree checks: the limits of a prepared workspace, and the dry restore.

The limits (`TreeLimits`) are those a lookup probe's prepared workspace must meet: every
entry a directory or a regular file with one link, nothing group- or other-writable, no
file over 64 MiB and no more than 512 MiB in all. `scan_tree` walks the workspace without
following a symbolic link and counts every entry that breaks a rule under one of the
fixed classes in `REJECTED_CLASSES`.

The dry restore (`dry_restore`) replays what a probe does to its workspace before it
starts: it removes whatever is at the workspace's path (first making every directory
owner-writable again, so an owner-read-only directory cannot stop it), restores the
verified snapshot tree from the store, re-applies the modes recorded when the snapshot
was taken (files first, then directories deepest first, so a read-only directory is
filled before it closes), and checks the result: the same tree digest and the same
modes. `restore_job` is the same, as a zygote target, so the preflight can run it in a
child process under a watchdog.

A `PreflightSnapshot` has its own schema (`SNAPSHOT_SCHEMA`): it is a feasibility
observation and cannot stand in for a probe's prepared-boundary proof.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import msgspec

from continuity.store import Store

__all__ = [
    "MIB",
    "REJECTED_CLASSES",
    "SNAPSHOT_SCHEMA",
    "PreflightSnapshot",
    "RestoreDone",
    "RestoreJob",
    "TreeLimits",
    "TreeScan",
    "apply_modes",
    "clear_tree",
    "dry_restore",
    "restore_job",
    "scan_tree",
    "tree_modes",
]

SNAPSHOT_SCHEMA = "continuity-lookup-preflight-snapshot-v1"
MIB = 1024 * 1024
# The fixed rejected-entry classes, in the order a report lists them.
REJECTED_CLASSES = (
    "symlink",
    "not_regular",
    "hard_linked",
    "group_or_other_writable",
    "file_over_64_mib",
    "tree_over_512_mib",
)
_GROUP_OR_OTHER_WRITE = stat.S_IWGRP | stat.S_IWOTH


class TreeLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The size limits of a prepared workspace, in bytes (the seed's 64 MiB per file
    and 512 MiB in all; a test may pass smaller ones)."""

    file_bytes: int = 64 * MIB
    tree_bytes: int = 512 * MIB


class TreeScan(msgspec.Struct, frozen=True, kw_only=True):
    """What `scan_tree` found: regular files, their total and largest size, and per
    rejected class the number of entries and the first one (a path below the root)."""

    files: int
    total_bytes: int
    largest_file_bytes: int
    rejected: dict[str, int]
    first: dict[str, str]

    @property
    def within_limits(self) -> bool:
        return not self.rejected


def _classes(info: os.stat_result, limits: TreeLimits) -> list[str]:
    """The rejected classes of one entry (its own rules; the tree total is apart)."""
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return ["symlink"]
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        return ["not_regular"]
    found = []
    if mode & _GROUP_OR_OTHER_WRITE:
        found.append("group_or_other_writable")
    if stat.S_ISREG(mode):
        if info.st_nlink != 1:
            found.append("hard_linked")
        if info.st_size > limits.file_bytes:
            found.append("file_over_64_mib")
    return found


def scan_tree(root: Path, limits: TreeLimits | None = None) -> TreeScan:
    """Walk `root` (never following a symbolic link) and check every entry, the root
    included, against `limits` (default `TreeLimits()`)."""
    chosen = limits or TreeLimits()
    rejected: dict[str, int] = {}
    first: dict[str, str] = {}
    files = total = largest = 0

    def note(name: str, where: str) -> None:
        rejected[name] = rejected.get(name, 0) + 1
        first.setdefault(name, where)

    pending = [(root, ".")]
    while pending:
        path, relative = pending.pop()
        info = path.lstat()
        for name in _classes(info, chosen):
            note(name, relative)
        if stat.S_ISREG(info.st_mode):
            files += 1
            total += info.st_size
            largest = max(largest, info.st_size)
        elif stat.S_ISDIR(info.st_mode):
            for entry in sorted(os.listdir(path), reverse=True):
                below = entry if relative == "." else f"{relative}/{entry}"
                pending.append((path / entry, below))
    if total > chosen.tree_bytes:
        note("tree_over_512_mib", ".")
    ordered = {name: rejected[name] for name in REJECTED_CLASSES if name in rejected}
    return TreeScan(
        files=files, total_bytes=total, largest_file_bytes=largest, rejected=ordered, first=first
    )


def tree_modes(root: Path) -> dict[str, int]:
    """The permission bits of every directory and regular file below `root` (``.`` is
    the root), by path below it; other entries are left out (a tree cannot hold them)."""
    modes: dict[str, int] = {}
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        relative = base.relative_to(root).as_posix()
        modes[relative] = stat.S_IMODE(base.lstat().st_mode)
        for name in files:
            info = (base / name).lstat()
            if stat.S_ISREG(info.st_mode):
                below = name if relative == "." else f"{relative}/{name}"
                modes[below] = stat.S_IMODE(info.st_mode)
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())
    return dict(sorted(modes.items()))


def clear_tree(root: Path) -> int:
    """Remove whatever is at `root`; return how many directories lacked the owner's
    write bit (each is made owner-writable first, so its entries can go)."""
    if not os.path.lexists(root):
        return 0
    if root.is_symlink() or not root.is_dir():
        root.unlink()
        return 0
    locked = 0
    for folder, dirs, _ in os.walk(root):
        base = Path(folder)
        mode = stat.S_IMODE(base.lstat().st_mode)
        if (mode & stat.S_IRWXU) != stat.S_IRWXU:
            if not mode & stat.S_IWUSR:
                locked += 1
            base.chmod(mode | stat.S_IRWXU)
        dirs[:] = [d for d in dirs if not (base / d).is_symlink()]
    shutil.rmtree(root)
    return locked


def apply_modes(root: Path, modes: dict[str, int]) -> None:
    """Set the recorded `modes` below `root`: files first, then directories deepest
    first, the root last (a read-only directory is closed after its entries)."""
    paths = {relative: root if relative == "." else root / relative for relative in modes}
    folders = [r for r, path in paths.items() if path.is_dir() and not path.is_symlink()]
    for relative, path in paths.items():
        if relative not in folders:
            path.chmod(modes[relative])
    for relative in sorted(folders, key=lambda r: (r == ".", -r.count("/"), r)):
        paths[relative].chmod(modes[relative])


class PreflightSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A prepared checkpoint's snapshot as preflight records it: the stored checkpoint
    tree and the modes of its entries when it was taken. Its own schema: never a
    probe's prepared-boundary proof."""

    schema: str = SNAPSHOT_SCHEMA
    checkpoint: str
    tree: str
    modes: dict[str, int]


class RestoreJob(msgspec.Struct, frozen=True, kw_only=True):
    """A dry restore: the store holding the snapshot, its digest, the workspace."""

    store_root: str
    snapshot: str
    root: str


class RestoreDone(msgspec.Struct, frozen=True, kw_only=True):
    """What a dry restore did: read-only directories it had to open to remove them,
    the files it restored, and what differs from the snapshot afterwards (empty when
    the restored tree equals it)."""

    read_only_dirs_removed: int
    files_restored: int
    mismatches: list[str]


def _load_snapshot(store: Store, digest: str) -> PreflightSnapshot:
    """The snapshot record `digest`, verified by the store (blake3 of its bytes).

    Raises:
        ObjectMissing, ObjectCorrupt: no such record, or bytes that do not verify.
        msgspec.ValidationError: not a snapshot record of `SNAPSHOT_SCHEMA`.
    """
    snapshot = msgspec.json.decode(store.get_blob(digest), type=PreflightSnapshot)
    if snapshot.schema != SNAPSHOT_SCHEMA:
        raise msgspec.ValidationError(f"snapshot schema {snapshot.schema!r}")
    return snapshot


def dry_restore(store: Store, snapshot_digest: str, root: Path) -> RestoreDone:
    """Restore snapshot `snapshot_digest` at `root` over whatever is there, re-apply its
    modes and compare the result with it.

    Raises:
        StoreError (and subclasses): the snapshot or one of its objects is missing or
            does not verify.
        OSError: the workspace could not be removed or written.
    """
    snapshot = _load_snapshot(store, snapshot_digest)
    locked = clear_tree(root)
    store.restore_tree(snapshot.tree, root)
    apply_modes(root, snapshot.modes)
    mismatches: list[str] = []
    restored = tree_modes(root)
    if store.put_dir(root).digest != snapshot.tree:
        mismatches.append("tree digest")
    mismatches += sorted(
        f"mode of {path}"
        for path in restored.keys() | snapshot.modes.keys()
        if restored.get(path) != snapshot.modes.get(path)
    )
    files = sum(1 for path in restored if path != "." and (root / path).is_file())
    return RestoreDone(read_only_dirs_removed=locked, files_restored=files, mismatches=mismatches)


def restore_job(payload: bytes) -> bytes:
    """A zygote target: `dry_restore` of `payload` (a `RestoreJob`), in a forked child."""
    job = msgspec.json.decode(payload, type=RestoreJob)
    return msgspec.json.encode(dry_restore(Store(job.store_root), job.snapshot, Path(job.root)))
