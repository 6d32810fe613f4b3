"""`verify_store` / `doit verify [--repair]`: every corrupt store file is found and moved
aside, repair makes the refs whole, and `gc` hashes what it keeps."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from continuity.commands.store_upkeep import VerifyRequest, rebuilders, verify
from continuity.errors import StoreError, UsageError
from continuity.runner.checkpoints import build_checkpoints
from continuity.store import Ref, Store, collect_garbage, verify_store
from continuity.traces.suites import build_suite, store_trace_file
from tests.graph.test_dodo import doit

UNITS = (
    "units",
    "--suite",
    "original",
    "--trace",
    "brightline-return",
    "--arms",
    "native,cold-rebuild",
    "--probe-limit",
    "2",
)


def flip_byte(path: Path, rng: random.Random) -> None:
    """Flip one bit of one byte in place (objects are read-only, like on disk)."""
    data = bytearray(path.read_bytes())
    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    path.chmod(0o644)
    path.write_bytes(bytes(data))


def store_files(store: Store) -> list[Path]:
    return sorted(
        p
        for folder in ("objects", "actions", "refs")
        for p in (store.root / folder).rglob("*")
        if p.is_file()
    )


def quarantined(store: Store) -> list[Path]:
    return sorted(store.quarantine_dir.iterdir()) if store.quarantine_dir.exists() else []


@pytest.fixture
def suite_store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "store")
    build_suite(store, "original", out_dir=tmp_path / "out")
    return store


def test_a_clean_store_verifies(suite_store: Store) -> None:
    report = verify_store(suite_store)
    assert report.corrupt == 0 and report.findings == [] and quarantined(suite_store) == []
    assert report.counts["object"].checked == 5  # four traces and their tree
    assert report.counts["action"].checked == 4
    assert report.counts["ref"].checked == 2  # traces/original and its plan
    assert "0 corrupt" in report.summary()


def test_each_kind_of_corruption_is_found_and_moved_aside(suite_store: Store) -> None:
    store = suite_store
    rng = random.Random(3)
    obj = next(store.iter_objects())
    action = next(store.iter_actions())
    ref = store.ref_path("traces/original")
    for path in (obj, action, ref):
        flip_byte(path, rng)
    kept = {path.name: path.read_bytes() for path in (obj, action, ref)}
    report = verify_store(store)
    assert {(c, report.counts[c].corrupt, report.counts[c].quarantined) for c in report.counts} == {
        ("object", 1, 1),
        ("action", 1, 1),
        ("ref", 1, 1),
    }
    assert sorted(f.path for f in report.findings) == sorted(str(p) for p in (obj, action, ref))
    assert not any(p.exists() for p in (obj, action, ref))
    moved = {p.name.split(".")[0]: p.read_bytes() for p in quarantined(store)}
    assert sorted(moved.values()) == sorted(kept.values())  # moved, never deleted
    again = verify_store(store)
    assert again.corrupt == 0


def test_misplaced_and_misnamed_files_are_corrupt(suite_store: Store) -> None:
    store = suite_store
    obj = next(store.iter_objects())
    wrong_fan = store.objects_dir / "zz" / obj.name
    wrong_fan.parent.mkdir()
    shutil.copy(obj, wrong_fan)
    action = next(store.iter_actions())
    other = "f" * 64
    misnamed = store.actions_dir / other[:2] / f"{other}.json"
    misnamed.parent.mkdir(exist_ok=True)
    shutil.copy(action, misnamed)
    ref = store.get_ref("traces/original")
    assert ref is not None
    shutil.copy(store.ref_path("traces/original"), store.refs_dir / "copy.json")
    report = verify_store(store)
    problems = {Path(f.path).name: f.problem for f in report.findings}
    assert problems == {
        obj.name: "misplaced (not objects/<ab>/<digest>)",
        misnamed.name: f"names key {action.name.removesuffix('.json')}",
        "copy.json": "names ref traces/original",
    }


def test_repair_rebuilds_a_trace_suite_byte_for_byte(suite_store: Store, tmp_path: Path) -> None:
    store = suite_store
    before = {p.relative_to(store.root): p.read_bytes() for p in store_files(store)}
    rng = random.Random(5)
    for path in [*store.iter_objects(), store.ref_path("traces/original")]:
        flip_byte(path, rng)
    report = verify_store(store, repair=True, rebuild=rebuilders(), out_dir=tmp_path / "out")
    assert report.corrupt == 6
    assert len(report.orphaned_actions) == 4  # every trace lost its blob
    by_name = {r.name: r.status for r in report.refs}
    assert by_name["traces/original"] == "rebuilt"
    assert {s for n, s in by_name.items() if n.startswith("plans/")} == {"next-run"}
    ref = store.get_ref("traces/original")
    assert ref is not None and all(store.get_action(k) is not None for k in ref.actions)
    for rel, data in before.items():
        if rel.parts[0] == "objects":
            assert (store.root / rel).read_bytes() == data  # regenerated, same bytes
    assert verify_store(store).corrupt == 0


def test_repair_lists_what_it_cannot_rebuild(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    source = tmp_path / "mine.json"
    shutil.copy(
        Path(__file__).resolve().parents[2] / "fixtures" / "original" / "brightline-return.json",
        source,
    )
    item = store_trace_file(store, source, out_dir=tmp_path / "out")
    flip_byte(store.object_path(item.digest), random.Random(1))
    with pytest.raises(StoreError) as raised:
        verify(VerifyRequest(store=str(store.root), out=str(tmp_path / "out"), repair=True))
    assert raised.value.code == "store_repair_incomplete"
    assert f"traces/file/{item.trace_id}" in raised.value.message
    assert "doit traces --file" in raised.value.message
    report = json.loads((tmp_path / "out" / "verify" / "report.json").read_text())
    assert [r["status"] for r in report["refs"]] == ["unrepaired"]


def test_verify_without_repair_fails_with_store_corrupt(suite_store: Store, tmp_path: Path) -> None:
    flip_byte(next(suite_store.iter_objects()), random.Random(2))
    with pytest.raises(StoreError) as raised:
        verify(VerifyRequest(store=str(suite_store.root), out=str(tmp_path / "out"), repair=False))
    assert raised.value.code == "store_corrupt"
    assert raised.value.location == str(tmp_path / "out" / "verify" / "report.json")
    assert verify(
        VerifyRequest(store=str(suite_store.root), out=str(tmp_path / "out"), repair=False)
    ).startswith("verify report at")


def test_gc_hashes_the_objects_it_keeps(suite_store: Store) -> None:
    store = suite_store
    ref = store.get_ref("traces/original")
    assert ref is not None
    entry = store.get_action(ref.actions[0])
    assert entry is not None
    victim = store.object_path(entry.output.digest)  # a blob: marking never reads it
    flip_byte(victim, random.Random(4))
    preview = collect_garbage(store, dry_run=True, grace_seconds=0)
    assert preview.corrupt_objects == [str(victim)] and victim.exists()
    assert "1 corrupt files found (run `doit verify --repair`)" in preview.summary()
    real = collect_garbage(store, grace_seconds=0)
    assert real.corrupt_objects == [str(victim)] and not victim.exists()
    assert len(quarantined(store)) == 1 and "quarantined" in real.summary()
    assert collect_garbage(store, grace_seconds=0).corrupt_objects == []


def test_gc_reports_a_corrupt_tree_its_marking_read(suite_store: Store) -> None:
    ref = suite_store.get_ref("traces/original")
    assert ref is not None
    tree = suite_store.object_path(ref.objects[0].digest)
    flip_byte(tree, random.Random(6))
    report = collect_garbage(suite_store, dry_run=True, grace_seconds=0)
    assert report.corrupt_objects == [str(tree)] and not tree.exists()


def test_doit_verify_on_a_clean_run_exits_zero(tmp_path: Path) -> None:
    doit(tmp_path, "traces", "--suite", "original")
    result = doit(tmp_path, "verify")
    assert "(0 corrupt, 0 quarantined)" in result.stdout
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"verify report at {tmp_path / 'out' / 'verify' / 'report.json'}"


def test_bit_rot_in_a_finished_run_is_found_and_repaired(tmp_path: Path) -> None:
    doit(tmp_path, *UNITS)
    doit(tmp_path, "aggregate")
    run = tmp_path / "out" / "runs" / "offline"
    clean = {name: (run / name).read_bytes() for name in ("results.json", "summary.md")}
    store = Store(tmp_path / "store")
    rng = random.Random(11)
    flipped = rng.sample(store_files(store), 10)
    for path in flipped:
        flip_byte(path, rng)

    found = doit(tmp_path, "verify", check=False)
    assert found.returncode != 0 and "store_corrupt" in found.stdout + found.stderr
    report = json.loads((tmp_path / "out" / "verify" / "report.json").read_text())
    assert sorted(f["path"] for f in report["findings"]) == sorted(map(str, flipped))  # 10/10
    assert sum(c["quarantined"] for c in report["counts"].values()) == 10
    assert len(quarantined(store)) == 10

    repaired = doit(tmp_path, "verify", "--repair")  # exit 0: every ref it needs is whole
    assert "0 unrepaired" in repaired.stdout
    for path in run.iterdir():  # the run's outputs are rebuilt from the store
        if path.is_file():
            path.unlink()
    doit(tmp_path, *UNITS)
    doit(tmp_path, "aggregate")
    assert {name: (run / name).read_bytes() for name in clean} == clean
    assert doit(tmp_path, "verify").returncode == 0
    assert os.listdir(store.quarantine_dir)  # the corrupt bytes are still kept aside


def test_a_finished_run_whose_checkpoints_rotted_aggregates_the_same_after_repair(
    tmp_path: Path,
) -> None:
    checkpoints = ("checkpoints", "--suite", "original", "--trace", "brightline-return")
    doit(tmp_path, *checkpoints)
    doit(tmp_path, *UNITS)
    doit(tmp_path, "aggregate")
    run = tmp_path / "out" / "runs" / "offline"
    clean = {name: (run / name).read_bytes() for name in ("results.json", "summary.md")}
    store = Store(tmp_path / "store")
    ref = store.get_ref("checkpoints/original")
    assert ref is not None
    entry = store.get_action(ref.actions[0])
    assert entry is not None
    rotted = sorted(store.object_path(d) for d in store.walk(entry.output))
    rng = random.Random(15)
    for path in rotted:
        flip_byte(path, rng)
    rotted[0].unlink()  # lost outright, not just flipped

    repaired = doit(tmp_path, "verify", "--repair")
    assert "ref checkpoints/original: rebuilt (replayed 1 of 1 original checkpoints)" in (
        repaired.stdout
    )
    assert "0 unrepaired" in repaired.stdout
    assert all(path.exists() for path in rotted)  # replayed under the same names
    assert store.get_action(ref.actions[0]) is not None
    for path in run.iterdir():
        if path.is_file():
            path.unlink()
    doit(tmp_path, *UNITS)
    doit(tmp_path, "aggregate")
    assert {name: (run / name).read_bytes() for name in clean} == clean
    assert doit(tmp_path, "verify").returncode == 0


def test_repair_rebuilds_a_ref_an_earlier_scrub_quarantined(suite_store: Store) -> None:
    store = suite_store
    flip_byte(store.ref_path("traces/original"), random.Random(8))
    assert verify_store(store).counts["ref"].quarantined == 1
    assert store.get_ref("traces/original") is None
    assert [p.name.startswith("refs~traces~original.json.") for p in quarantined(store)] == [True]
    report = verify_store(
        store, repair=True, rebuild=rebuilders(), out_dir=store.root.parent / "out"
    )
    assert report.corrupt == 0
    assert [(r.name, r.status) for r in report.refs] == [("traces/original", "rebuilt")]
    assert store.get_ref("traces/original") is not None
    assert (
        verify_store(store, repair=True, rebuild=rebuilders()).refs == []
    )  # rebuilt: no longer lost


def test_the_store_rebuilds_nothing_it_was_not_given_a_rebuilder_for(suite_store: Store) -> None:
    flip_byte(suite_store.ref_path("traces/original"), random.Random(9))
    report = verify_store(suite_store, repair=True)  # the store alone knows no builders
    assert [(r.name, r.status) for r in report.refs] == [("traces/original", "unrepaired")]
    assert report.refs[0].hint == "run `doit traces --suite original`"
    assert suite_store.get_ref("traces/original") is None


def checkpoint_store(tmp_path: Path) -> tuple[Store, list[str], dict[str, bytes]]:
    """A store holding one replayed checkpoint; its ref's action keys and object bytes."""
    store = Store(tmp_path / "store")
    build_checkpoints(store, "original", traces="brightline-return", out_dir=tmp_path / "out")
    ref = store.get_ref("checkpoints/original")
    assert ref is not None and ref.meta == {"seeds": []}
    objects = {}
    for key in ref.actions:
        entry = store.get_action(key)
        assert entry is not None
        for digest in store.walk(entry.output):
            objects[digest] = store.object_path(digest).read_bytes()
    return store, ref.actions, objects


def test_repair_replays_a_checkpoint_that_lost_its_objects(tmp_path: Path) -> None:
    store, keys, objects = checkpoint_store(tmp_path)
    manifest = tmp_path / "out" / "checkpoints" / "original" / "manifest.json"
    clean_manifest = manifest.read_bytes()
    rng = random.Random(12)
    for digest in objects:
        flip_byte(store.object_path(digest), rng)
    manifest.unlink()
    report = verify_store(store, repair=True, rebuild=rebuilders(), out_dir=tmp_path / "out")
    assert report.counts["object"].corrupt == len(objects)
    assert report.orphaned_actions == keys  # the checkpoint's entry lost its tree
    statuses = {r.name: r.status for r in report.refs if not r.name.startswith("plans/")}
    assert statuses == {"checkpoints/original": "rebuilt"}
    assert [r.hint for r in report.refs if r.name == "checkpoints/original"] == [
        "replayed 1 of 1 original checkpoints"
    ]
    ref = store.get_ref("checkpoints/original")
    assert ref is not None and ref.actions == keys
    for digest, data in objects.items():  # replayed: the same bytes under the same names
        assert store.object_path(digest).read_bytes() == data
    assert manifest.read_bytes() == clean_manifest
    assert verify_store(store).corrupt == 0


def test_repair_replays_a_checkpoint_ref_that_was_itself_corrupt(tmp_path: Path) -> None:
    store, keys, _ = checkpoint_store(tmp_path)
    flip_byte(store.ref_path("checkpoints/original"), random.Random(13))
    report = verify_store(store, repair=True, rebuild=rebuilders(), out_dir=tmp_path / "out")
    repaired = [r for r in report.refs if r.name == "checkpoints/original"]
    assert [r.status for r in repaired] == ["rebuilt"]
    assert "every trace of the suite was replayed" in repaired[0].hint
    ref = store.get_ref("checkpoints/original")
    assert ref is not None and set(keys) < set(ref.actions) and len(ref.actions) == 4


def test_repair_refuses_a_checkpoint_ref_its_seeds_do_not_build(tmp_path: Path) -> None:
    store, keys, _ = checkpoint_store(tmp_path)
    stranger = "e" * 64  # a checkpoint no trace of these seeds replays into
    store.set_ref("checkpoints/original", actions=[*keys, stranger], meta={"seeds": []})
    report = verify_store(store, repair=True, rebuild=rebuilders(), out_dir=tmp_path / "out")
    assert [(r.name, r.status, r.hint) for r in report.refs] == [
        (
            "checkpoints/original",
            "unrepaired",
            "run `doit checkpoints --suite original` with the seeds you used",
        )
    ]


def test_a_rebuilder_error_is_reported_not_raised(suite_store: Store) -> None:
    flip_byte(suite_store.ref_path("traces/original"), random.Random(14))

    def broken(store: Store, name: str, ref: Ref | None, out_dir: Path | None) -> str | None:
        raise UsageError("no fixtures here", code="trace_file_unreadable", location="fixtures")

    report = verify_store(suite_store, repair=True, rebuild={"traces": broken})
    assert [(r.name, r.status) for r in report.refs] == [("traces/original", "unrepaired")]
    assert report.refs[0].hint.startswith("trace_file_unreadable: no fixtures here")
