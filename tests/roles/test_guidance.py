"""The pack's retrieval guidance as a treatment: the frozen patch builds R0 from HEAD,
and the pack carries the guidance only in lookup mode."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from continuity.arms import ARMS
from continuity.memory.history import CanonicalHistory
from continuity.memory.pack import PACK_RETRIEVAL_GUIDANCE, build_pack
from continuity.memory.retained import RetainedStore
from continuity.roles.guidance import GUIDANCE_PATCH, GUIDANCE_PATHS, RENDERER_PATH, WITNESS
from continuity.roles.receipt import witness_present
from continuity.runner.units.build import run_unit
from continuity.runner.units.execution import Execution
from continuity.store import Store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace
from tests.lookup.test_lookup_run import frozen_run

REPO = Path(__file__).resolve().parents[2]


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=120
    ).stdout


def test_the_patch_touches_only_the_guidance_paths() -> None:
    patch = (REPO / GUIDANCE_PATCH).read_text()
    touched = {line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff")}
    assert touched == {RENDERER_PATH} <= set(GUIDANCE_PATHS)
    added = [line for line in patch.splitlines() if line.startswith("+") and WITNESS in line]
    assert added, "the patch adds the witness"


def test_r0_is_head_with_the_patch_reversed(tmp_path: Path) -> None:
    r0 = tmp_path / "r0"
    head = _git("rev-parse", "HEAD").strip()
    _git("worktree", "add", "--detach", str(r0), head)
    try:
        _git("apply", "--reverse", "--3way", str(REPO / GUIDANCE_PATCH), cwd=r0)
        _git(
            "-c", "user.name=roles test", "-c", "user.email=roles@example.invalid",
            "commit", "-qam", "test: isolate pre-guidance lookup code", cwd=r0,
        )  # fmt: skip
        changed = _git("diff", "--no-renames", "--name-only", head, "HEAD", cwd=r0).split()
        assert changed and set(changed) <= set(GUIDANCE_PATHS) and RENDERER_PATH in changed
        assert WITNESS not in (r0 / RENDERER_PATH).read_text()
        assert WITNESS in _git("show", f"{head}:{RENDERER_PATH}")
    finally:
        _git("worktree", "remove", "--force", str(r0))
        _git("worktree", "prune")
    assert not r0.exists()
    assert witness_present()


@pytest.fixture
def sources(tmp_path: Path) -> tuple[RetainedStore, CanonicalHistory]:
    store = RetainedStore(tmp_path / "retained.sqlite3")
    history = CanonicalHistory.create(tmp_path / "history.jsonl")
    store.retain_owner("Ship the crate to Dock 4.", source="owner", entry_ref="e1")
    history.append("user", "Ship the crate.", attribution="owner", source="owner", entry_id="e1")
    return store, history


def test_the_renderer_adds_guidance_only_when_asked(
    sources: tuple[RetainedStore, CanonicalHistory],
) -> None:
    store, history = sources
    try:
        plain = build_pack(store, history)
        guided = build_pack(store, history, lookup_history=True)
        assert PACK_RETRIEVAL_GUIDANCE not in plain.text
        assert PACK_RETRIEVAL_GUIDANCE in guided.text and "[c1]" in guided.text
        assert guided.text.replace(PACK_RETRIEVAL_GUIDANCE + "\n", "") == plain.text
        assert guided.receipt.total_tokens > plain.receipt.total_tokens
        assert build_pack(None, history, lookup_history=True).text == ""  # invalid: no text
    finally:
        store.close()
        history.close()


@pytest.mark.parametrize("mode", ["recall", "lookup"])
def test_the_pack_arm_carries_guidance_in_lookup_mode_only(tmp_path: Path, mode: str) -> None:
    store = Store(tmp_path / "store")
    item = build_suite(store, "original", out_dir=tmp_path / "out").items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    dump = tmp_path / "requests.jsonl"
    lookup = frozen_run() if mode == "lookup" else None
    run_unit(
        store,
        trace,
        item,
        ARMS["continuity-pack-cold"],
        probe_limit=1,
        dump_requests=dump,
        execution=Execution(lookup=lookup),
    )  # fmt: skip
    texts = [
        m["content"]
        for line in dump.read_text().splitlines()
        for m in json.loads(line)["messages"]
        if isinstance(m.get("content"), str)
    ]
    packs = [t for t in texts if t.startswith("<continuity-pack v1>")]
    assert packs, "the pack arm injects a pack"
    assert all((PACK_RETRIEVAL_GUIDANCE in t) == (mode == "lookup") for t in packs)
