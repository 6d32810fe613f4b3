"""What the reader saw at the probe, kept in the store (`continuity.sampling.context`):
split at the probe question, stored once per content, the same bytes for two runs of
one key, pinned by the run's plan against ``doit gc``, never holding an evaluator-only
value the reader was not sent, and a store ``doit verify`` still passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.arms import ARMS, replay_config_for
from continuity.errors import ObjectCorrupt, ObjectMissing
from continuity.harness.checkpoints import build_checkpoint
from continuity.messages import (
    AssistantMessage,
    ModelRequest,
    ToolCallRequest,
    ToolResultMessage,
    UserMessage,
)
from continuity.runner.units.build import UnitRecord, build_units
from continuity.runner.units.selection import limited, probe_slots
from continuity.runner.units.store import context_refs
from continuity.sampling.context import (
    CONTEXT_FILE,
    TURN_FILE,
    load_context,
    put_context,
    reader_context,
)
from continuity.sampling.worker import UnitRequest, run_unit, warm_imports
from continuity.store import ObjectRef, Store, collect_garbage, verify_store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace

REPO = Path(__file__).resolve().parents[2]
SENTINEL = "evaluator-only-needle-7f3c91"


def _request(*messages: Any, model: str = "reader-1") -> ModelRequest:
    return ModelRequest(
        session_id="s", provider="scripted", model=model, system="sys", messages=messages
    )


def test_the_last_request_is_split_at_the_probe_question() -> None:
    summary = UserMessage("the summary", source="summary")
    question = UserMessage("where is it?", source="probe")
    call = AssistantMessage(tool_calls=(ToolCallRequest("c1", "ConversationHistory", {"q": 1}),))
    result = ToolResultMessage("c1", "ConversationHistory", '{"hits": []}')
    first = _request(summary, question)
    last = _request(summary, question, call, result)
    context = reader_context([first, last])
    assert context is not None
    assert [(m.role, m.source, m.text) for m in context.context.messages] == [
        ("user", "summary", "the summary")
    ]
    assert [m.role for m in context.turn.messages] == ["user", "assistant", "tool"]
    assert context.turn.requests == 2
    assert [(c.name, c.arguments) for c in context.tool_calls()] == [
        ("ConversationHistory", {"q": 1})
    ]
    assert context.context.model == "reader-1" and context.context.system == "sys"
    assert reader_context([]) is None


def test_a_context_is_a_tree_of_two_parts_stored_once(store: Store) -> None:
    shared = UserMessage("kept after the boundary", source="pack")
    one = reader_context([_request(shared, UserMessage("first?", source="probe"))])
    two = reader_context([_request(shared, UserMessage("second?", source="probe"))])
    assert one is not None and two is not None
    ref_one, ref_two = put_context(store, one), put_context(store, two)
    assert ref_one.kind == "tree" and ref_one != ref_two
    parts = [store.get_tree(r.digest).entries for r in (ref_one, ref_two)]
    assert parts[0][CONTEXT_FILE] == parts[1][CONTEXT_FILE]  # one blob for both
    assert parts[0][TURN_FILE] != parts[1][TURN_FILE]
    assert put_context(store, one) == ref_one  # idempotent: same key, same bytes
    back = load_context(store, ref_one)
    assert back.context == one.context and back.turn == one.turn
    assert back.digest == parts[0][CONTEXT_FILE].digest


def test_a_context_the_store_cannot_give_back_is_coded(store: Store) -> None:
    with pytest.raises(ObjectMissing) as missing:
        load_context(store, ObjectRef("tree", "0" * 64, 0))
    assert missing.value.code == "object_missing"
    not_a_context = store.put_tree({})
    with pytest.raises(ObjectCorrupt) as corrupt:
        load_context(store, not_a_context)
    assert corrupt.value.code == "object_corrupt"


def test_needles_never_reach_the_reader_nor_its_stored_context(
    store: Store, out_dir: Path, tmp_path: Path
) -> None:
    """A sentinel needle travels with the real ones in every probe's request: it is in
    neither what the reader was sent (the request dump) nor the stored context."""
    item = build_suite(store, "original", out_dir=out_dir).items[0]
    trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
    arm = ARMS["continuity-store"]  # retrieves: the probe turn has tool calls and results
    checkpoint = build_checkpoint(
        store, trace, trace_key=item.key, trace_digest=item.digest, config=replay_config_for(arm)
    )
    specs, _ = probe_slots(trace, arm, limited(trace, 2), None)
    specs = [msgspec.structs.replace(s, needles=[*s.needles, SENTINEL]) for s in specs]
    dump = tmp_path / "requests.jsonl"
    request = UnitRequest(
        store_root=str(store.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=arm.id,
        probes=specs,
        dump_requests=str(dump),
    )
    warm_imports(request)
    outcomes = run_unit(request).outcomes
    assert SENTINEL.encode() not in dump.read_bytes() and dump.stat().st_size > 0
    for outcome in outcomes:
        assert outcome.evidence is not None, outcome.error
        ref = outcome.evidence.context
        assert isinstance(ref, ObjectRef) and store.verify_ref(ref)
        stored = [store.get_blob(d) for d in store.walk(ref)]
        assert all(SENTINEL.encode() not in blob for blob in stored)
        context = load_context(store, ref)
        assert context.tool_calls(), "the store arm's reader searched at the probe"
        assert context.turn.messages[0].source == "probe"


def _contexts(root: Path) -> tuple[Store, list[UnitRecord]]:
    store = Store(root / "store")
    records, _, built = build_units(
        store,
        "original",
        arms="continuity-store-compaction",
        traces="harbor-market-stall",
        probe_limit=2,
        run_dir=root / "out" / "runs" / "ctx",
    )
    assert built == 1
    return store, records


def test_two_runs_of_one_key_keep_the_same_context_and_gc_and_verify_keep_it(
    tmp_path: Path,
) -> None:
    first_store, first = _contexts(tmp_path / "one")
    second_store, second = _contexts(tmp_path / "two")
    assert [r.key for r in first] == [r.key for r in second]
    refs = context_refs(first)
    assert len(refs) == 2 and refs == context_refs(second)  # two probes, two contexts
    assert msgspec.json.encode(first) == msgspec.json.encode(second)
    collect_garbage(first_store, grace_seconds=0)  # (it removes the unpinned checkpoints)
    assert all(first_store.verify_ref(ref) for ref in refs)  # the units' plan pins them
    assert verify_store(first_store).findings == []
    verified = subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "verify"],
        cwd=REPO,
        env={**os.environ, "CONTINUITY_STORE": str(first_store.root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert second_store.root != first_store.root
