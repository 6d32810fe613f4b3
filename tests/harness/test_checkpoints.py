"""Checkpoints: snapshot, restore at the original path, fresh child, exclusive forks."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from continuity.errors import CheckpointError, ScriptExhausted
from continuity.harness import keys
from continuity.harness.checkpoints import (
    CheckpointResult,
    build_checkpoint,
    checkpoint_lock,
    fork,
    run_child,
)
from continuity.harness.keys import ReplayConfig, checkpoint_key
from continuity.harness.tool_history import ROOT_MISMATCH
from continuity.store import Store
from continuity.traces.schema import Session, decode_trace
from continuity.traces.suites import SuiteItem, build_suite
from tests.conftest import store_files


def _original(store: Store, tmp_path: Path, name: str = "brightline-return") -> SuiteItem:
    suite = build_suite(store, "original", out_dir=tmp_path / "out")
    return next(i for i in suite.items if i.trace_id == name)


def _build(store: Store, item: SuiteItem) -> CheckpointResult:
    trace = decode_trace(store.get_blob(item.digest))
    return build_checkpoint(store, trace, trace_key=item.key, trace_digest=item.digest)


def test_snapshot_restore_round_trip_and_child_view(store: Store, tmp_path: Path) -> None:
    item = _original(store, tmp_path)
    result = _build(store, item)
    assert result.status == "built"
    key, tree, root = result.key, result.tree, Path(result.root)
    assert root.is_absolute() and root.parent == store.root / "checkpoints"
    assert _build(store, item).status == "cached"
    shutil.rmtree(root)  # forks restore from the store, not from a leftover directory
    with fork(store, key) as restored:
        assert restored == root
        assert store.put_dir(restored) == tree  # the round trip reproduces the tree
        child = run_child(restored)
    assert child.workspace == str(root) and child.trace_id == "brightline-return"
    assert child.tool_history_status == "ok" and child.tool_history_warnings == []
    assert child.tool_records_visible == child.tool_records_on_disk == 28
    assert child.context_digest == result.receipt.context_digest
    assert child.current_model == ["openai-codex", "gpt-6-luna"]


def test_a_copy_at_another_path_degrades_in_the_child(store: Store, tmp_path: Path) -> None:
    item = _original(store, tmp_path)
    result = _build(store, item)
    elsewhere = tmp_path / "elsewhere"
    store.restore_tree(result.tree.digest, elsewhere)
    child = run_child(elsewhere)
    assert child.tool_history_status == "degraded"
    assert child.tool_history_warnings == [ROOT_MISMATCH]
    assert child.tool_records_visible == 0 and child.tool_records_on_disk == 28


def test_rebuilding_a_checkpoint_gives_the_same_tree(store: Store, tmp_path: Path) -> None:
    item = _original(store, tmp_path, "harbor-market-stall")
    first = _build(store, item)
    store.action_path(first.key).unlink()
    second = _build(store, item)
    assert second.status == "built" and second.tree == first.tree


def test_a_failed_replay_stores_no_checkpoint(store: Store, tmp_path: Path) -> None:
    item = _original(store, tmp_path)
    trace = decode_trace(store.get_blob(item.digest))
    last = trace.sessions[-1]
    broken = msgspec.structs.replace(
        trace,
        sessions=(
            *trace.sessions[:-1],
            Session(session_id=last.session_id, date=last.date, turns=last.turns[:-1]),
        ),
    )
    before = store_files(store)
    with pytest.raises(ScriptExhausted):
        build_checkpoint(store, broken, trace_key=item.key, trace_digest=item.digest)
    assert store_files(store) == before
    assert not (store.root / "checkpoints").exists() or not any(
        (store.root / "checkpoints").iterdir()
    )
    with pytest.raises(CheckpointError) as err, fork(store, checkpoint_key(item.key)):
        pass
    assert err.value.code == "checkpoint_missing"


def test_the_key_follows_trace_config_and_harness_code(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = checkpoint_key("a" * 64)
    assert checkpoint_key("b" * 64) != key
    assert checkpoint_key("a" * 64, ReplayConfig(history_model="gpt-6.1-sol")) != key
    assert not any(
        m.startswith(("continuity.contract", "continuity.report")) for m in keys.HARNESS_CODE
    )
    monkeypatch.setattr(keys, "HARNESS_CODE", (*keys.HARNESS_CODE, "continuity.contract"))
    assert checkpoint_key("a" * 64) != key


def test_every_module_replay_runs_is_in_the_checkpoint_key() -> None:
    # Import replay and checkpoints in a clean interpreter and list the project modules
    # they pull in: each must be covered by HARNESS_CODE, or be infrastructure that
    # cannot change what a replay writes (keys, errors, the store itself).
    probe = (
        "import sys, continuity.harness.replay, continuity.harness.checkpoints; "
        "print('\\n'.join(m for m in sys.modules if m.startswith('continuity')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    # `interrupts` only removes a workspace when an interrupt ends the process.
    infrastructure = (
        "continuity",
        "continuity.digest",
        "continuity.errors",
        "continuity.interrupts",
        "continuity.traces",
    )
    uncovered = [
        m
        for m in loaded
        if m not in infrastructure
        and not m.startswith(("continuity.store", "continuity.errors."))
        and not any(m == p or m.startswith(p + ".") for p in keys.HARNESS_CODE)
    ]
    assert uncovered == []


def test_a_held_checkpoint_is_busy(store: Store) -> None:
    with (
        checkpoint_lock(store, "c" * 64),
        pytest.raises(CheckpointError) as err,
        checkpoint_lock(store, "c" * 64, timeout=0.2),
    ):
        pass
    assert err.value.code == "checkpoint_busy"


FORKER = textwrap.dedent(
    """
    import sys, time
    from continuity.harness.checkpoints import fork
    from continuity.store import Store
    store, key, log = Store(sys.argv[1]), sys.argv[2], sys.argv[3]
    with fork(store, key) as root:
        start = time.time()
        assert (root / "replay.json").is_file()
        time.sleep(0.4)
        end = time.time()
    with open(log, "a") as handle:
        handle.write(f"{start} {end}\\n")
    """
)


def test_two_forks_of_one_checkpoint_never_overlap(store: Store, tmp_path: Path) -> None:
    result = _build(store, _original(store, tmp_path))
    log = tmp_path / "intervals.txt"
    procs = [
        subprocess.Popen([sys.executable, "-c", FORKER, str(store.root), result.key, str(log)])
        for _ in range(3)
    ]
    for proc in procs:
        assert proc.wait(60) == 0
    spans = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert len(spans) == 3
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, f"forks overlapped: {spans}"
    assert spans[-1][1] - spans[0][0] >= 1.2 - 0.05


def test_a_build_and_a_fork_hold_the_workspace_as_scratch(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An interrupt that ends the process removes what `scratch` holds (test_interrupts):
    # the workspace a replay fills in place, and a restore a fork is making.
    from continuity.harness import checkpoints
    from continuity.interrupts import scratch_folders

    held: list[list[Path]] = []
    replay = checkpoints._replay

    def watched(job: checkpoints.ReplayJob) -> checkpoints.ReplayDone:
        held.append(scratch_folders())
        return replay(job)

    monkeypatch.setattr(checkpoints, "_replay", watched)
    result = _build(store, _original(store, tmp_path))
    root = Path(result.root)
    assert held == [[root]]
    assert scratch_folders() == []
    with fork(store, result.key) as restored:
        assert scratch_folders() == [restored] == [root]
    assert scratch_folders() == [] and root.is_dir()  # a fork's workspace stays after it
