"""The content-addressed store: objects, trees, action entries, refs, corruption."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from continuity.digest import digest_bytes
from continuity.errors import ObjectCorrupt, ObjectMissing, RecordCorrupt, StoreError, UsageError
from continuity.store import Store, Tree, TreeEntry, resolve_store_path


def flip_byte(path: Path, offset: int = 0) -> None:
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_blob_round_trip_is_idempotent(store: Store) -> None:
    ref = store.put_blob(b"hello")
    assert ref.digest == digest_bytes(b"hello") and ref.size == 5
    assert store.put_blob(b"hello") == ref
    assert store.get_blob(ref.digest) == b"hello"
    assert len(list(store.iter_objects())) == 1
    assert not list(store.tmp_dir.iterdir())


def test_missing_object_is_a_typed_error(store: Store) -> None:
    with pytest.raises(ObjectMissing) as err:
        store.get_blob("0" * 64)
    assert err.value.code == "object_missing"


def test_corrupt_object_is_reported_quarantined_and_never_returned(store: Store) -> None:
    ref = store.put_blob(b"precious bytes")
    path = store.object_path(ref.digest)
    flip_byte(path)
    with pytest.raises(ObjectCorrupt) as err:
        store.get_blob(ref.digest)
    assert err.value.code == "object_corrupt"
    assert str(path) in err.value.location
    assert [e.expected for e in store.corruption_events] == [ref.digest]
    assert not path.exists()  # moved aside, so the next build rewrites it
    assert list(store.quarantine_dir.iterdir())
    assert not store.has_object(ref)
    assert store.put_blob(b"precious bytes") == ref
    assert store.get_blob(ref.digest) == b"precious bytes"


def test_action_entry_requires_a_verified_output(store: Store) -> None:
    key = "ab" * 32
    ref = store.put_blob(b"output")
    entry = store.record_action(key, kind="trace", output=ref, meta={"n": 1})
    assert store.get_action(key) == entry
    assert store.load_output(key) == b"output"
    flip_byte(store.object_path(ref.digest))
    assert store.get_action(key) is None  # the output no longer verifies
    assert store.get_action(key, verify_output=False) == entry
    assert store.load_output(key) is None


def test_action_for_a_missing_output_is_refused(store: Store) -> None:
    from continuity.store import ObjectRef

    with pytest.raises(ObjectMissing):
        store.record_action("cd" * 32, kind="x", output=ObjectRef("blob", "0" * 64, 1))
    assert not list(store.iter_actions())


def test_torn_action_entry_is_treated_as_missing(store: Store) -> None:
    key = "ef" * 32
    store.record_action(key, kind="x", output=store.put_blob(b"o"))
    path = store.action_path(key)
    path.write_bytes(path.read_bytes()[:-20])
    assert store.get_action(key) is None
    assert store.corruption_events and not path.exists()


def test_action_entry_naming_another_key_is_rejected(store: Store) -> None:
    key, other = "12" * 32, "34" * 32
    store.record_action(key, kind="x", output=store.put_blob(b"o"))
    store.action_path(other).parent.mkdir(parents=True, exist_ok=True)
    store.action_path(other).write_bytes(store.action_path(key).read_bytes())
    assert store.get_action(other) is None


def test_refs_round_trip_and_reject_bad_names(store: Store) -> None:
    ref = store.put_blob(b"x")
    saved = store.set_ref("traces/hard", objects=[ref], actions=["aa" * 32], meta={"n": 1})
    assert store.get_ref("traces/hard") == saved
    assert store.list_refs() == ["traces/hard"]
    assert store.get_ref("nothing/here") is None
    for bad in ("../escape", "Upper", "a//b", ""):
        with pytest.raises(UsageError) as err:
            store.set_ref(bad)
        assert err.value.code == "ref_name_invalid"


def test_corrupt_ref_is_a_typed_error(store: Store) -> None:
    store.set_ref("traces/x")
    path = store.ref_path("traces/x")
    path.write_bytes(path.read_bytes().replace(b"traces/x", b"traces/y"))
    with pytest.raises(RecordCorrupt) as err:
        store.get_ref("traces/x")
    assert err.value.code == "record_corrupt"


def test_directory_round_trip_reproduces_the_tree(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "workspace"
    (source / "sub" / "deeper").mkdir(parents=True)
    (source / "a.txt").write_text("alpha")
    (source / "sub" / "b.bin").write_bytes(bytes(range(256)))
    (source / "sub" / "deeper" / "run.sh").write_text("#!/bin/sh\n")
    (source / "sub" / "deeper" / "run.sh").chmod(0o755)
    (source / "empty").mkdir()
    tree = store.put_dir(source)
    assert store.verify_ref(tree)
    restored = tmp_path / "restored"
    store.restore_tree(tree.digest, restored)
    assert store.put_dir(restored) == tree
    assert (restored / "sub" / "deeper" / "run.sh").stat().st_mode & 0o100
    assert sorted(store.get_tree(tree.digest).entries) == ["a.txt", "empty", "sub"]


def test_tree_with_a_corrupt_leaf_does_not_verify(store: Store, tmp_path: Path) -> None:
    leaf = store.put_blob(b"leaf")
    tree = store.put_tree({"leaf": TreeEntry("blob", leaf.digest, leaf.size)})
    flip_byte(store.object_path(leaf.digest))
    assert not store.verify_ref(tree)


def test_symlinks_are_not_stored(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "ws"
    source.mkdir()
    (source / "link").symlink_to("/etc/hostname")
    with pytest.raises(StoreError) as err:
        store.put_dir(source)
    assert err.value.code == "tree_entry_invalid"


def test_store_location_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTINUITY_STORE", str(tmp_path / "elsewhere"))
    assert resolve_store_path() == tmp_path / "elsewhere"
    assert Store().root == tmp_path / "elsewhere"
    assert (tmp_path / "elsewhere" / "objects").is_dir()
    assert resolve_store_path(tmp_path / "explicit") == tmp_path / "explicit"


def test_a_file_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(UsageError) as err:
        Store(path)
    assert err.value.code == "store_path_invalid"


def test_restore_refuses_a_non_empty_target(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "f").write_text("x")
    tree = store.put_dir(source)
    target = tmp_path / "busy"
    target.mkdir()
    (target / "already").write_text("here")
    with pytest.raises(StoreError) as err:
        store.restore_tree(tree.digest, target)
    assert err.value.code == "restore_target_not_empty"
    assert (target / "already").read_text() == "here"


def test_tree_entry_names_are_checked(store: Store) -> None:
    blob = store.put_blob(b"x")
    bad_names = ("a/b", "..", "", "name\n", "\nname", "a\x00b", "tab\there", "bell\x07")
    for bad in (*bad_names, "del\x7f", "csi\x9b", "line\u0085end"):
        with pytest.raises(StoreError) as err:
            store.put_tree({bad: TreeEntry("blob", blob.digest, blob.size)})
        assert err.value.code == "tree_entry_invalid", bad
    for good in ("report.json", ".hidden", "naïve ✓ name", "a b"):
        store.put_tree({good: TreeEntry("blob", blob.digest, blob.size)})


def test_restore_refuses_a_tree_object_with_a_bad_name(store: Store, tmp_path: Path) -> None:
    """A tree object that put_tree never wrote (``../escape``) is refused, nothing written."""
    blob = store.put_blob(b"x")
    forged = msgspec.json.encode(
        Tree("continuity-tree-v1", {"../escape": TreeEntry("blob", blob.digest, blob.size)})
    )
    tree = store.put_blob(forged)
    with pytest.raises(StoreError) as err:
        store.restore_tree(tree.digest, tmp_path / "out")
    assert err.value.code == "tree_entry_invalid"
    assert not (tmp_path / "escape").exists()
