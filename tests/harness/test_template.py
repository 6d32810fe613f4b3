"""A checkpoint's template: each probe's fresh copy is linked and copied from one verified
restore, and a probe that writes a linked file is caught (continuity.harness.template)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from continuity.harness.template import Template, remove_template, template_folder
from continuity.harness.workspace import Workspace
from continuity.store import Store


def _snapshot(store: Store, tmp_path: Path) -> tuple[str, Path]:
    """A small workspace-shaped tree in the store, and the checkpoint path it belongs at."""
    source = tmp_path / "source"
    (source / "session").mkdir(parents=True)
    (source / "tool-history" / "results").mkdir(parents=True)
    (source / "continuity").mkdir()
    (source / "session" / "session.jsonl").write_bytes(b'{"turn":1}\n')
    (source / "session" / "history.jsonl").write_bytes(b'{"h":1}\n')
    (source / "tool-history" / "records.jsonl").write_bytes(b"")
    (source / "tool-history" / "results" / "th-0001.txt").write_bytes(b"result one")
    (source / "continuity" / "retained.sqlite3").write_bytes(os.urandom(4096))
    (source / "replay.json").write_bytes(b'{"receipt":true}')
    tree = store.put_dir(source)
    return tree.digest, tmp_path / "checkpoints" / "trace" / "key"


def _copied(store: Store, tmp_path: Path) -> tuple[Template, Path]:
    """A verified template of `_snapshot` and a first fresh copy made from it."""
    tree, root = _snapshot(store, tmp_path)
    template = Template(store, tree, root)
    template.build()
    template.fresh_copy()
    return template, root


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_fresh_copy_links_what_no_probe_writes_and_copies_what_it_appends(
    store: Store, tmp_path: Path
) -> None:
    tree, root = _snapshot(store, tmp_path)
    template = Template(store, tree, root)
    template.build()
    assert template.folder == root.with_name("key.template")
    copy = template.fresh_copy()
    assert copy == root and _digests(root) == _digests(tmp_path / "source")
    appended = set(Workspace(root).probe_appends)
    assert appended == {
        "session/session.jsonl",
        "session/history.jsonl",
        "tool-history/records.jsonl",
    }
    for name in _digests(root):
        inside, kept = (root / name).stat(), (template.folder / name).stat()
        if name in appended:
            assert inside.st_ino != kept.st_ino and inside.st_mode & 0o200
        else:
            assert inside.st_ino == kept.st_ino and not inside.st_mode & 0o222
    assert template.check() == []


def test_appending_to_the_copied_files_keeps_the_rule(store: Store, tmp_path: Path) -> None:
    template, root = _copied(store, tmp_path)
    with open(root / "session" / "session.jsonl", "ab") as handle:
        handle.write(b'{"turn":2}\n')
    (root / "tool-history" / "results" / "th-0002.txt").write_bytes(b"new")  # a new file
    (root / "replay.json").unlink()  # removing a linked name leaves the template alone
    assert template.check() == []
    template.fresh_copy()
    assert _digests(root) == _digests(tmp_path / "source")


def test_a_write_into_a_linked_file_is_named_and_a_rebuild_restores_pristine_bytes(
    store: Store, tmp_path: Path
) -> None:
    template, root = _copied(store, tmp_path)
    # Root ignores the read-only bit: the write lands in the template's inode too.
    linked = root / "continuity" / "retained.sqlite3"
    linked.chmod(0o644)
    with open(linked, "r+b") as handle:
        handle.write(b"corrupt")
    assert template.check() == ["continuity/retained.sqlite3"]
    template.build()
    template.fresh_copy()
    assert template.check() == []
    assert _digests(root) == _digests(tmp_path / "source")


def test_a_same_size_write_or_a_mode_change_is_caught(store: Store, tmp_path: Path) -> None:
    template, root = _copied(store, tmp_path)
    (root / "tool-history" / "results" / "th-0001.txt").chmod(0o644)
    assert template.check() == ["tool-history/results/th-0001.txt"]
    template.build()
    template.fresh_copy()
    path = root / "replay.json"
    os.utime(path, ns=(10**18, 10**18))  # the same bytes, another mtime
    assert template.check() == ["replay.json"]


def test_a_same_size_write_right_after_a_build_is_caught(store: Store, tmp_path: Path) -> None:
    """Within one tick of the kernel's clock after the (re)build: the linked files' mtime
    is a fixed value, so the write's "now" still differs."""
    template, root = _copied(store, tmp_path)
    path = root / "tool-history" / "results" / "th-0001.txt"
    mode = path.stat().st_mode
    path.chmod(0o644)  # as a process that is not root would have to
    with open(path, "r+b") as handle:
        handle.write(b"RESULT")  # same size
    path.chmod(mode)
    assert template.check() == ["tool-history/results/th-0001.txt"]


def test_remove_leaves_the_last_workspace_whole(store: Store, tmp_path: Path) -> None:
    template, root = _copied(store, tmp_path)
    template.remove()
    assert not template.folder.exists()
    assert _digests(root) == _digests(tmp_path / "source")


def test_a_template_left_by_a_killed_worker_is_removed_by_the_next_user(
    store: Store, tmp_path: Path
) -> None:
    tree, root = _snapshot(store, tmp_path)
    left = Template(store, tree, root)
    left.build()  # ... and its worker was SIGKILLed: no `remove`
    (left.folder / "stray").write_bytes(b"from the killed unit")
    Template(store, tree, root).build()  # the next unit's worker starts from the snapshot
    assert not (left.folder / "stray").exists()
    remove_template(root)  # what the runner does after every unit, under the lock
    assert not template_folder(root).exists()
    remove_template(root)  # and again: nothing left is fine
