"""Garbage collection keeps what refs and recent plans reach."""

from __future__ import annotations

import os
import time

from continuity.store import Store, TreeEntry, collect_garbage


def _age(store: Store, seconds: float) -> None:
    past = time.time() - seconds
    for folder in (store.objects_dir, store.actions_dir, store.tmp_dir):
        for path in folder.rglob("*"):
            if path.is_file():
                os.utime(path, (past, past))


def test_gc_removes_only_unreachable(store: Store) -> None:
    pinned = store.put_blob(b"pinned")
    leaf = store.put_blob(b"leaf")
    tree = store.put_tree({"leaf": TreeEntry("blob", leaf.digest, leaf.size)})
    store.set_ref("traces/keep", objects=[tree])
    action_out = store.put_blob(b"action output")
    store.record_action("aa" * 32, kind="x", output=action_out)
    store.set_ref("policies/frozen", objects=[pinned], actions=["aa" * 32])
    garbage = store.put_blob(b"garbage")
    store.record_action("bb" * 32, kind="x", output=garbage)
    (store.tmp_dir / "stale.tmp").write_bytes(b"half")
    _age(store, 7200)

    preview = collect_garbage(store, dry_run=True)
    assert preview.removed_objects == 1 and preview.removed_actions == 1
    assert preview.removed_tmp == 1
    assert store.has_object(garbage)  # dry run removed nothing

    report = collect_garbage(store)
    assert (report.removed_objects, report.removed_actions) == (1, 1)
    assert report.removed_bytes == len(b"garbage")
    assert not store.has_object(garbage, verify=False)
    for kept in (pinned, leaf, tree, action_out):
        assert store.has_object(kept)
    assert store.get_action("aa" * 32) is not None
    assert store.get_action("bb" * 32) is None
    assert "removed 1 objects" in report.summary()


def test_recent_plans_keep_their_actions_and_old_plans_expire(store: Store) -> None:
    outputs = []
    for index in range(3):
        ref = store.put_blob(f"plan output {index}".encode())
        key = f"{index:02d}" * 32
        store.record_action(key, kind="x", output=ref)
        store.record_plan(f"run {index}", actions=[key])
        outputs.append(ref)
        time.sleep(0.002)
    _age(store, 7200)
    report = collect_garbage(store, keep_plans=2)
    assert len(report.removed_plans) == 1
    assert not store.has_object(outputs[0], verify=False)
    assert store.has_object(outputs[1]) and store.has_object(outputs[2])
    assert len(store.list_refs("plans/")) == 2


def test_young_unreachable_files_survive_the_grace_period(store: Store) -> None:
    young = store.put_blob(b"just written, action entry not yet recorded")
    report = collect_garbage(store, grace_seconds=3600)
    assert report.removed_objects == 0 and report.young_skipped == 1
    assert store.has_object(young)
    assert collect_garbage(store, grace_seconds=0).removed_objects == 1
