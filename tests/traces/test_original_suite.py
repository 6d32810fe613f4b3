"""The original suite: four hand-written traces of exactly the seed's shape."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import msgspec
import pytest

from continuity.traces.bounds import retained_bytes
from continuity.traces.generator import generate_trace
from continuity.traces.schema import (
    CommitmentStatusExpectation,
    OwnerMessage,
    RedactionExpectation,
    ReplayTrace,
    Steer,
    ToolIdentifierExpectation,
    ToolResult,
    Trace,
    encode_trace,
    iter_turns,
    replay_projection,
)
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS

FILES = sorted(ORIGINALS.glob("*.json"))
SEVEN = {
    "tool_identifier",
    "active_constraint",
    "superseded_current",
    "commitment_status",
    "artifact_status",
    "next_action",
    "abstention",
}


@functools.cache
def load(path: Path) -> Trace:
    return load_trace(path.read_bytes(), source=str(path))


def test_four_traces_including_brightline_return() -> None:
    assert len(FILES) == 4
    assert "brightline-return" in {load(p).trace_id for p in FILES}
    assert all(load(p).trace_id == p.stem for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_original_shape(path: Path) -> None:
    trace = load(path)
    assert trace.fictional is True and trace.family == "original" and trace.seed is None
    turns = [t for _, _, t in iter_turns(trace)]
    results = [t for t in turns if isinstance(t, ToolResult)]
    # One conversation over five days, 36-38 owner turns, about 28 tool results.
    assert len({s.date for s in trace.sessions}) == 5
    assert 36 <= sum(isinstance(t, OwnerMessage) for t in turns) <= 38
    assert 24 <= len(results) <= 32
    assert {r.tool_kind for r in results} == {
        "email",
        "chat",
        "web",
        "document",
        "calendar",
        "parcel",
    }
    # One mid-turn steer.
    assert sum(isinstance(t, Steer) for t in turns) == 1
    # 13 probes in the seven categories; sent versus drafted.
    assert len(trace.probes) == 13
    assert {p.category for p in trace.probes} == SEVEN
    statuses = {
        p.expectation.status
        for p in trace.probes
        if isinstance(p.expectation, CommitmentStatusExpectation)
    }
    assert {"SENT", "DRAFTED"} <= statuses
    # Fits inside the cold-rebuild bounds (32 records / 64 KiB of retained results).
    assert sum(retained_bytes(r) for r in results) <= 65536
    # Tool-only identifiers never appear in what the owner or assistant said.
    spoken = "\n".join(getattr(t, "text", "") for t in turns if not isinstance(t, ToolResult))
    for probe in trace.probes:
        if isinstance(probe.expectation, ToolIdentifierExpectation):
            assert probe.expectation.answer.value not in spoken
            assert any(probe.expectation.answer.value in r.output for r in results)
    # Every probe counts tool results as part of the conversation.
    assert all("tool result" in p.text.lower() for p in trace.probes)


@pytest.mark.parametrize("trace", [load(FILES[0]), generate_trace(104)], ids=["original", "hard"])
def test_replay_projection_has_no_probes_or_expectations(trace: Trace) -> None:
    projection = replay_projection(trace)
    data = encode_trace(projection)
    document = json.loads(data)
    assert set(document) == {
        "schema_version",
        "trace_id",
        "fictional",
        "family",
        "scenario",
        "title",
        "seed",
        "sessions",
    }
    text = data.decode()
    for word in ('"probes"', '"expectation"', '"category"', '"design_role"', '"evidence"'):
        assert word not in text
    for probe in trace.probes:
        assert probe.text not in text
        if isinstance(probe.expectation, RedactionExpectation):
            # the secret is in the conversation (a tool result), never in metadata
            assert text.count(probe.expectation.secret.value) == 1
    assert projection.sessions == trace.sessions
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(encode_trace(trace), type=ReplayTrace)
