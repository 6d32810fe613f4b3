"""Preflight (issue 17 item 9) without a registration: the tree limits and the dry
restore on planted workspaces, and real preparation children of this checkout on the
smallest workload (original, brightline-return), each in a private root that is gone
afterwards, also after a failure or a watchdog kill."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.digest import digest_bytes
from continuity.errors import ObjectCorrupt, UsageError
from continuity.runner.preflight import run as preflight
from continuity.runner.preflight.child import TraceInput
from continuity.runner.preflight.launch import PRIVATE_PREFIX
from continuity.runner.preflight.records import SlotCode, checkout_code
from continuity.runner.preflight.run import (
    PROBES_NOTE,
    REPORT_SCHEMA,
    PreflightReport,
    PreflightSlot,
    PreflightSource,
    preflight_failure,
    run_preflight,
    summary_lines,
)
from continuity.runner.preflight.slot import run_slot
from continuity.runner.preflight.tree import (
    MIB,
    PreflightSnapshot,
    TreeLimits,
    dry_restore,
    scan_tree,
    tree_modes,
)
from continuity.store import Store
from tests.conftest import ORIGINALS

TRACE = "brightline-return"
SOURCE = PreflightSource(kind="test", path="-", sha256="-", digest="-")


@pytest.fixture
def private_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temporary directory the private roots are made in (empty afterwards)."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    yield base


def _left(base: Path) -> list[str]:
    return sorted(path.name for path in base.iterdir() if path.name.startswith(PRIVATE_PREFIX))


def _slot(arm: str = "native-lookup", trace_id: str = TRACE, **extra: object) -> PreflightSlot:
    slot = PreflightSlot(
        role=None,
        arm=arm,
        soul="continuity-soul-v1.md",
        reader_binding="default",
        suite="original",
        trace_id=trace_id,
        code=checkout_code(),
    )
    return msgspec.structs.replace(slot, **extra)


def _workspace(root: Path) -> Path:
    """A small clean workspace: a nested directory, a data file, an executable."""
    (root / "session").mkdir(parents=True)
    (root / "session" / "history.jsonl").write_bytes(b"x" * 1000)
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


# -- tree limits ----------------------------------------------------------------------


def test_a_clean_workspace_is_within_the_limits(tmp_path: Path) -> None:
    scan = scan_tree(_workspace(tmp_path / "ws"))
    assert (scan.files, scan.total_bytes, scan.largest_file_bytes) == (2, 1010, 1000)
    assert scan.within_limits and scan.rejected == {}


def _hard_link(root: Path) -> str:
    os.link(root / "session" / "history.jsonl", root / "linked.jsonl")
    return "linked.jsonl"


def _group_writable(root: Path) -> str:
    (root / "session" / "history.jsonl").chmod(0o664)
    return "session/history.jsonl"


def _other_writable_dir(root: Path) -> str:
    (root / "session").chmod(0o757)
    return "session"


def _sparse_over_64_mib(root: Path) -> str:
    with (root / "big.bin").open("wb") as handle:
        handle.truncate(64 * MIB + 1)  # sparse: no data block is written
    return "big.bin"


def _symlink(root: Path) -> str:
    # to a large file outside the workspace: never followed, never counted
    target = root.parent / "outside.bin"
    with target.open("wb") as handle:
        handle.truncate(600 * MIB)
    (root / "session" / "out").symlink_to(target)
    return "session/out"


def _fifo(root: Path) -> str:
    os.mkfifo(root / "pipe")
    return "pipe"


@pytest.mark.parametrize(
    ("plant", "kind"),
    [
        (_hard_link, "hard_linked"),
        (_group_writable, "group_or_other_writable"),
        (_other_writable_dir, "group_or_other_writable"),
        (_sparse_over_64_mib, "file_over_64_mib"),
        (_symlink, "symlink"),
        (_fifo, "not_regular"),
    ],
)
def test_every_rejected_entry_class_is_found(tmp_path: Path, plant: object, kind: str) -> None:
    root = _workspace(tmp_path / "ws")
    assert callable(plant)
    where = plant(root)
    scan = scan_tree(root)
    assert not scan.within_limits
    assert kind in scan.rejected and scan.first[kind] in (where, "session/history.jsonl")
    assert set(scan.rejected) == {kind}  # nothing else is blamed
    assert scan.total_bytes < 512 * MIB  # the symlink's large target is not counted


def test_the_tree_total_is_checked_against_its_limit(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    assert scan_tree(root, TreeLimits(tree_bytes=1010)).within_limits  # at the limit: fine
    scan = scan_tree(root, TreeLimits(tree_bytes=1009))
    assert scan.rejected == {"tree_over_512_mib": 1}
    assert scan_tree(root, TreeLimits(file_bytes=999)).rejected == {"file_over_64_mib": 1}


# -- the dry restore --------------------------------------------------------------------


def _snapshot(store: Store, root: Path) -> str:
    record = PreflightSnapshot(
        checkpoint="c" * 64, tree=store.put_dir(root).digest, modes=tree_modes(root)
    )
    return store.put_blob(msgspec.json.encode(record)).digest


def test_the_dry_restore_removes_read_only_directories_and_reapplies_modes(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "store")
    root = _workspace(tmp_path / "ws")
    sealed = root / "sealed"
    sealed.mkdir()
    (sealed / "record.txt").write_bytes(b"sealed record\n")
    (sealed / "record.txt").chmod(0o400)
    sealed.chmod(0o500)  # owner-read-only: its entries cannot be removed as it is
    snapshot = _snapshot(store, root)
    recorded = tree_modes(root)
    # What a preparation or an earlier probe might leave: a file the snapshot lacks, a
    # new owner-read-only directory with content, a changed mode.
    sealed.chmod(0o700)
    (sealed / "stray.txt").write_bytes(b"stray\n")
    sealed.chmod(0o500)
    extra = root / "locked"
    extra.mkdir()
    (extra / "inner").mkdir()
    (extra / "inner" / "file").write_bytes(b"x")
    (extra / "inner").chmod(0o500)
    extra.chmod(0o500)
    (root / "run.sh").chmod(0o700)
    done = dry_restore(store, snapshot, root)
    assert done.mismatches == []
    assert done.read_only_dirs_removed == 3  # sealed, locked, locked/inner
    assert done.files_restored == 3
    assert tree_modes(root) == recorded
    assert stat.S_IMODE(sealed.stat().st_mode) == 0o500  # closed again after its file
    assert not (sealed / "stray.txt").exists() and not extra.exists()
    assert (
        store.put_dir(root).digest
        == msgspec.json.decode(store.get_blob(snapshot), type=PreflightSnapshot).tree
    )
    sealed.chmod(0o700)  # let pytest remove it


def test_the_dry_restore_reports_a_tree_that_differs_from_the_snapshot(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    root = _workspace(tmp_path / "ws")
    modes = tree_modes(root)
    del modes["run.sh"]  # the record lacks a file the tree holds
    record = PreflightSnapshot(checkpoint="c" * 64, tree=store.put_dir(root).digest, modes=modes)
    digest = store.put_blob(msgspec.json.encode(record)).digest
    assert dry_restore(store, digest, root).mismatches == ["mode of run.sh"]


def test_the_dry_restore_refuses_a_snapshot_that_does_not_verify(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    root = _workspace(tmp_path / "ws")
    snapshot = _snapshot(store, root)
    blob = store.put_blob(b"x" * 1000)  # the history file's object
    path = store.object_path(blob.digest)
    path.chmod(0o644)
    path.write_bytes(b"y" * 1000)
    with pytest.raises(ObjectCorrupt) as caught:
        dry_restore(store, snapshot, root)
    assert caught.value.code == "object_corrupt"


# -- real preparation children ----------------------------------------------------------


def _trace_input() -> TraceInput:
    from continuity.traces.keys import suite_specs

    spec = next(s for s in suite_specs("original") if s.label == f"{TRACE}.json")
    data = (ORIGINALS / f"{TRACE}.json").read_bytes()
    return TraceInput(key=spec.spec.key(), digest=digest_bytes(data), data=data)


def test_every_slot_is_prepared_in_a_private_root_that_is_removed(
    private_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")  # preflight never refuses because CI is set
    given = _trace_input()
    broken = msgspec.structs.replace(given, data=given.data + b" ")
    slots = [
        _slot("native-lookup"),
        _slot("continuity-pack-cold", trace=given),  # a frozen trace handed in
        _slot("native-lookup", soul="continuity-soul-v2.md"),  # shares the first's checkpoint
        _slot("native-lookup", trace_id="no-such-trace"),
        _slot("continuity-pack-cold", trace=broken),
    ]
    path, report = run_preflight(slots, SOURCE, tmp_path / "out")
    assert _left(private_base) == []
    assert msgspec.json.decode(path.read_bytes(), type=PreflightReport) == report
    assert (report.schema, report.authorizes, report.probes_included) == (
        REPORT_SCHEMA,
        False,
        False,
    )
    assert report.deadlines.run_deadline == "LookupRun.watchdog_seconds"
    assert report.deadlines.run_deadline_seconds == 720.0
    assert report.limits == TreeLimits(file_bytes=64 * MIB, tree_bytes=512 * MIB)
    good, frozen, shared, unknown, tampered = report.slots
    for slot in (good, frozen, shared):
        assert slot.eligible and slot.prepared and slot.within_limits and slot.restored
        assert slot.failure is None and slot.rejected == {}
        assert slot.files > 10 and slot.largest_file_bytes <= slot.total_bytes < MIB
        assert slot.preparation is not None and slot.dry_restore is not None
        assert slot.preparation.watchdog_seconds == 720.0
        assert slot.dry_restore.watchdog_seconds == pytest.approx(
            720.0 - slot.preparation.seconds, abs=0.01
        )
    # the same key, prepared again in its own root (whose path the workspace pins)
    assert shared.checkpoint == good.checkpoint and shared.tree != good.tree
    assert frozen.checkpoint != good.checkpoint  # another arm's replay configuration
    assert good.trace_key == frozen.trace_key == given.key  # built here, and handed in
    assert (report.totals.slots, report.totals.eligible, report.totals.distinct_checkpoints) == (
        5,
        3,
        2,
    )
    assert unknown.failure is not None and unknown.failure.kind == "preparation_failed"
    assert unknown.failure.message.startswith("trace_unknown: ")
    assert (
        tampered.failure is not None and "lookup_preparation_invalid: " in tampered.failure.message
    )
    assert not unknown.prepared and unknown.dry_restore is None
    lines = summary_lines(report, path)
    assert lines[-1] == f"preflight in {path}"
    assert PROBES_NOTE in lines[-2] and "authorizes nothing" in lines[-2]
    error = preflight_failure(report, path)
    assert error is not None and error.code == "lookup_preparation_invalid"
    assert error.location == "slot native-lookup original no-such-trace"
    assert "preparation_failed" in error.message and "2 of 5 slots" in error.message


def test_a_workspace_over_a_limit_is_not_eligible_but_still_restored(
    private_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The retained store of this trace is 143,360 bytes: over a 100,000-byte file limit.
    monkeypatch.setattr(preflight, "TREE_LIMITS", TreeLimits(file_bytes=100_000))
    path, report = run_preflight([_slot()], SOURCE, tmp_path / "out")
    (slot,) = report.slots
    assert report.limits.file_bytes == 100_000
    assert slot.prepared and slot.restored and not slot.within_limits and not slot.eligible
    assert slot.rejected == {"file_over_64_mib": 1}
    assert slot.rejected_first == {"file_over_64_mib": "continuity/retained.sqlite3"}
    error = preflight_failure(report, path)
    assert error is not None and error.code == "lookup_preparation_invalid"
    assert "file_over_64_mib x1 (first continuity/retained.sqlite3)" in error.message
    assert _left(private_base) == []


def test_a_preparation_past_its_watchdog_is_killed_and_its_root_removed(
    private_base: Path,
) -> None:
    slot = run_slot(_slot(), limits=TreeLimits(), deadline=0.3, forbidden=[])
    assert slot.failure is not None and slot.failure.kind == "preparation_watchdog"
    assert slot.preparation is not None and slot.preparation.watchdog_seconds == 0.3
    assert not slot.eligible and slot.dry_restore is None
    assert _left(private_base) == []


def test_code_that_cannot_prepare_is_reported_without_a_launch(private_base: Path) -> None:
    code = SlotCode(label="r0", command=["/nonexistent/python"], missing="no preflight child")
    slot = run_slot(_slot(code=code), limits=TreeLimits(), deadline=60.0, forbidden=[])
    assert slot.failure is not None
    assert (slot.failure.kind, slot.failure.message) == (
        "preparation_unavailable",
        "no preflight child",
    )
    assert slot.preparation is None and _left(private_base) == []
    gone = msgspec.structs.replace(code, missing=None)  # an interpreter that is not there
    slot = run_slot(_slot(code=gone), limits=TreeLimits(), deadline=60.0, forbidden=[])
    assert slot.failure is not None and slot.failure.kind == "preparation_failed"
    assert slot.failure.message.startswith("cannot start /nonexistent/python: ")
    assert _left(private_base) == []


def test_a_code_check_that_fails_stops_the_slot_before_its_preparation(private_base: Path) -> None:
    def changed(label: str) -> None:
        raise UsageError(f"{label} changed", code="role_build_changed")

    slot = run_slot(_slot(), limits=TreeLimits(), deadline=60.0, forbidden=[], check_code=changed)
    assert slot.failure is not None and slot.failure.kind == "build_changed"
    assert slot.failure.message.startswith("role_build_changed: checkout changed")
    assert slot.preparation is None and _left(private_base) == []


def test_a_temporary_directory_inside_the_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside = tmp_path / "env-store" / "tmp"  # the conftest's $CONTINUITY_STORE
    inside.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(inside))
    with pytest.raises(UsageError) as caught:
        run_preflight([_slot()], SOURCE, tmp_path / "out")
    assert caught.value.code == "lookup_preflight_root_invalid"
    assert caught.value.location == str(inside.resolve())
    assert list(inside.iterdir()) == [] and not (tmp_path / "out").exists()
