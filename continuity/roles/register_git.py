"""Read-only git checks for a registration: the revision, cleanliness, trees and blobs.

Everything here only reads a checkout: it never fetches, checks out, cherry-picks or
resolves a name to a revision. A revision is a full 40-hex SHA that must equal the
checkout's ``HEAD``; a short SHA or a branch name is refused, never expanded.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import msgspec

from continuity.errors import RoleError

__all__ = [
    "TreeEntry",
    "archive",
    "check_clean",
    "check_revision",
    "list_tree",
    "read_blob",
    "tree_id",
]

_FULL_SHA = re.compile(r"^[0-9a-f]{40}\Z")


class TreeEntry(msgspec.Struct, frozen=True):
    """One file of a git tree: its mode, object type and object id."""

    mode: str
    kind: str
    object_id: str


def _git(checkout: Path, *args: str) -> bytes:
    """The stdout of ``git -C checkout args``.

    Raises:
        RoleError: ``role_checkout_unknown`` when git fails (not a checkout, no git).
    """
    try:
        result = subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, check=False
        )
    except OSError as exc:
        raise RoleError(
            f"git is not available: {exc.strerror}",
            code="role_checkout_unknown",
            location=str(checkout),
        ) from None
    if result.returncode != 0:
        last = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise RoleError(
            f"git {args[0]} failed: {last}", code="role_checkout_unknown", location=str(checkout)
        )
    return result.stdout


def check_revision(checkout: Path, revision: str, option: str) -> None:
    """`revision` is a full lowercase 40-hex SHA and the checkout's ``HEAD`` is it.

    Raises:
        RoleError: ``role_revision_invalid`` (at `option` for the form, at the checkout
            for a mismatch), ``role_checkout_unknown``.
    """
    if not _FULL_SHA.match(revision):
        raise RoleError(
            f"{revision[:48]!r} is not a full 40-hex commit SHA (short SHAs and branch "
            "names are never resolved)",
            code="role_revision_invalid",
            location=option,
        )
    top = Path(_git(checkout, "rev-parse", "--show-toplevel").decode().strip())
    if top.resolve() != checkout.resolve():
        raise RoleError(
            f"not the top of a git work tree (its top is {top})",
            code="role_checkout_unknown",
            location=str(checkout),
        )
    head = _git(checkout, "rev-parse", "--verify", "HEAD^{commit}").decode().strip()
    if head != revision:
        raise RoleError(
            f"HEAD is {head}, not the registered {revision}; nothing is checked out for you",
            code="role_revision_invalid",
            location=str(checkout),
        )


def check_clean(checkout: Path) -> None:
    """No change, untracked file or submodule change, and no index flag hiding one.

    Raises:
        RoleError: ``role_checkout_dirty``, ``role_checkout_flags``.
    """
    status = _git(
        checkout,
        "status",
        "--porcelain=v2",
        "--untracked-files=all",
        "--ignore-submodules=none",
        "-z",
    )
    changed = [item for item in status.split(b"\0") if item]
    if changed:
        first = changed[0].decode("utf-8", "replace")
        raise RoleError(
            f"{len(changed)} changed or untracked entries (first: {first[:120]!r}); "
            "a registered checkout must be clean",
            code="role_checkout_dirty",
            location=str(checkout),
        )
    # `git ls-files -v`: a lowercase tag marks assume-unchanged, S skip-worktree; either
    # hides a change from `git status`.
    flagged = [
        line[2:]
        for line in _git(checkout, "ls-files", "-v", "-z").decode("utf-8", "replace").split("\0")
        if line and (line[0].islower() or line[0] == "S")
    ]
    if flagged:
        raise RoleError(
            f"{len(flagged)} paths are marked assume-unchanged or skip-worktree "
            f"(first: {flagged[0]!r})",
            code="role_checkout_flags",
            location=str(checkout),
        )


def tree_id(checkout: Path, revision: str) -> str:
    """The git tree object id of `revision` in `checkout`."""
    return _git(checkout, "rev-parse", "--verify", f"{revision}^{{tree}}").decode().strip()


def list_tree(checkout: Path, revision: str) -> dict[str, TreeEntry]:
    """Every file of `revision`'s full tree: path -> (mode, type, object id)."""
    listing = _git(checkout, "ls-tree", "-r", "--full-tree", "-z", revision)
    entries: dict[str, TreeEntry] = {}
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, object_id = meta.decode().split(" ")
        entries[path.decode("utf-8", "surrogateescape")] = TreeEntry(mode, kind, object_id)
    return entries


def read_blob(checkout: Path, object_id: str) -> bytes:
    """The bytes of blob `object_id` in `checkout`'s object database."""
    return _git(checkout, "cat-file", "blob", object_id)


def archive(checkout: Path, revision: str, prefix: str) -> bytes:
    """A tar of the files under `prefix` at `revision` (only what is committed)."""
    return _git(checkout, "archive", "--format=tar", revision, "--", prefix)
