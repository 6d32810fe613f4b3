"""Model-change reseed: last 64 text messages plus the bounded tool projection."""

from __future__ import annotations

from pathlib import Path

import anyio

from continuity.harness.keys import ReplayConfig
from continuity.harness.replay import replay_trace
from continuity.harness.reseed import PROJECTION_HEADER, reseed
from continuity.harness.session import SessionBoundaryEntry
from continuity.harness.tool_history import ROOT_MISMATCH
from continuity.harness.workspace import Workspace
from continuity.messages import AssistantMessage, ToolResultMessage, UserMessage
from continuity.traces.bounds import PROJECTION_MAX_BYTES, projection_indexes
from continuity.traces.generator import generate_trace
from continuity.traces.schema import replay_projection


def test_reseed_rebuilds_from_canonical_history_and_the_projection(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    trace = replay_projection(generate_trace(105))
    anyio.run(lambda: replay_trace(trace, root, config=ReplayConfig(history_model="gpt-6.1-sol")))
    session, history, tools = Workspace(root).open()
    entries_before = len(session.entries)
    event = reseed(
        session, history, tools, provider="openai-codex", model="gpt-6-luna", history_tool=True
    )
    context = session.context()
    records = tools.records()
    kept = projection_indexes([r.retained_bytes for r in records])
    assert event.text_messages == 64 and event.from_model == "openai-codex:gpt-6.1-sol"
    assert event.projected_records == len(kept) and event.dropped_records == len(records) - len(
        kept
    )
    assert event.dropped_records >= 32 and event.projected_bytes <= PROJECTION_MAX_BYTES
    assert session.current_model() == ("openai-codex", "gpt-6-luna")
    # The new context: exactly the canonical last 64 text messages, then the projection.
    texts = [m.text for m in context[:-1]]
    assert texts == [r.text for r in history.last(64)]
    assert not any(isinstance(m, ToolResultMessage) for m in context)
    projection = context[-1]
    assert isinstance(projection, UserMessage) and projection.text.startswith(
        f"[{PROJECTION_HEADER}"
    )
    assert "ConversationHistory" in projection.text
    for index in kept:
        assert records[index].record_id in projection.text
    assert records[0].record_id not in projection.text
    owner = [m for m in context if isinstance(m, UserMessage) and m.attribution == "owner"]
    assert owner and all(m.source == "reseed" for m in owner)
    assert any(isinstance(m, AssistantMessage) for m in context)
    boundary = session.by_id[event.entry_id]
    assert isinstance(boundary, SessionBoundaryEntry) and boundary.parent_id is None
    assert len(session.entries) > entries_before  # the old transcript stays on disk
    session.close()
    history.close()


def test_a_degraded_sidecar_projects_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    anyio.run(lambda: replay_trace(replay_projection(generate_trace(106)), root))
    moved = tmp_path / "moved"
    root.rename(moved)
    session, history, tools = Workspace(moved).open()
    assert tools.warnings == [ROOT_MISMATCH]
    event = reseed(session, history, tools, provider="p", model="m")
    assert event.projected_records == 0 and event.tool_history_status == "degraded"
    assert "ConversationHistory" not in session.context()[-1].text
    session.close()
    history.close()
