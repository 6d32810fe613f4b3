"""The durable session: an append-only JSONL tree that reloads to the same context."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.errors import SessionCorrupt
from continuity.harness.replay import ReplayClock
from continuity.harness.session import DurableSession, MessageEntry, recorded_operations
from continuity.messages import (
    AssistantMessage,
    ToolCallRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def _session(tmp_path: Path) -> DurableSession:
    return DurableSession.create(
        tmp_path / "s" / "session.jsonl", session_id="abc", clock=ReplayClock("2027-01-04")
    )


def _fill(session: DurableSession) -> None:
    session.append_model_change("openai-codex", "gpt-6-luna", reason="bound")
    session.append_message(UserMessage(text="find the kiln email"))
    session.append_message(
        AssistantMessage(tool_calls=(ToolCallRequest("c1", "email_search", {"query": "kiln"}),)),
        provider="openai-codex",
        model="gpt-6-luna",
        usage=Usage(10, 0, 10, 3),
        stop_reason="tool_use",
    )
    session.append_message(ToolResultMessage(call_id="c1", tool="email_search", text="found"))
    session.append_message(UserMessage(text="draft it only", source="steer"))
    session.append_custom("sitting", {"date": "2027-01-04"})
    session.append_boundary("model_change", {"from": "a", "to": "b"})
    session.append_message(AssistantMessage(text="Drafted."), stop_reason="stop")


def test_reload_gives_back_exactly_the_in_memory_context(tmp_path: Path) -> None:
    session = _session(tmp_path)
    _fill(session)
    session.close()
    reloaded = DurableSession.load(session.path)
    assert reloaded.header == session.header
    assert reloaded.entries == session.entries
    assert reloaded.context() == session.context()
    assert reloaded.leaf_id == session.leaf_id
    assert reloaded.current_model() == ("openai-codex", "gpt-6-luna")
    assert [type(m).__name__ for m in session.context()] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    lines = session.path.read_bytes().splitlines()
    assert lines[0].startswith(b'{"type":"session"') and len(lines) == 1 + len(session.entries)
    reloaded.close()


def test_entries_form_a_tree_and_a_branch_survives_reload(tmp_path: Path) -> None:
    session = _session(tmp_path)
    _fill(session)
    fork_point = session.entries[1].id  # the first user message
    session.branch(fork_point)
    session.append_message(AssistantMessage(text="A different answer."))
    assert [m for m in session.context() if isinstance(m, AssistantMessage)][-1].text == (
        "A different answer."
    )
    assert len(session.context()) == 2
    session.close()
    reloaded = DurableSession.load(session.path)
    assert reloaded.context() == session.context()
    assert {e.parent_id for e in reloaded.entries} >= {fork_point}
    reloaded.close()


def test_compaction_context_is_summary_then_kept_entries(tmp_path: Path) -> None:
    session = _session(tmp_path)
    _fill(session)
    kept = session.entries[4].id  # the steer
    session.append_compaction("Goal: return the lamps.", kept, tokens_before=1234)
    session.append_message(UserMessage(text="what now?"))
    context = session.context()
    assert isinstance(context[0], UserMessage) and context[0].source == "summary"
    assert context[0].text.startswith("<summary>\nGoal: return the lamps.")
    assert [getattr(m, "text", "") for m in context[1:]] == [
        "draft it only",
        "Drafted.",
        "what now?",
    ]
    session.close()
    assert DurableSession.load(session.path).context() == context


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda lines: [*lines[:2], b"{not json", *lines[3:]], ":3"),
        (lambda lines: [b'{"type":"message"}', *lines[1:]], ":1"),
        (lambda lines: [*lines, lines[0]], f":{9 + 1}"),
        (lambda lines: [lines[0], *lines[2:]], ":2"),  # first entry's child loses its parent
    ],
    ids=["torn-line", "no-header", "second-header", "unknown-parent"],
)
def test_a_damaged_session_is_a_typed_error(tmp_path: Path, damage: object, where: str) -> None:
    session = _session(tmp_path)
    _fill(session)
    session.close()
    lines = session.path.read_bytes().splitlines()
    assert callable(damage)
    session.path.write_bytes(b"\n".join(damage(lines)) + b"\n")
    with pytest.raises(SessionCorrupt) as err:
        DurableSession.load(session.path)
    assert err.value.code == "session_corrupt"
    assert err.value.location.endswith(where)


def test_a_missing_session_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(SessionCorrupt):
        DurableSession.load(tmp_path / "nothing.jsonl")


def test_message_entries_carry_provider_metadata(tmp_path: Path) -> None:
    session = _session(tmp_path)
    _fill(session)
    entry = session.entries[2]
    assert isinstance(entry, MessageEntry)
    assert (entry.provider, entry.model, entry.usage, entry.stop_reason) == (
        "openai-codex",
        "gpt-6-luna",
        Usage(10, 0, 10, 3),
        "tool_use",
    )
    session.close()


def test_recorded_operations_are_read_back_from_the_file(tmp_path: Path) -> None:
    session = _session(tmp_path)
    _fill(session)  # the checkpoint's entries (including its own model_change boundary)
    session.sync()
    start = session.path.stat().st_size
    session.append_boundary("restart", {"child_pid": 2})
    session.append_boundary("model_change", {"from": "a", "to": "b"}, new_root=True)
    session.append_message(UserMessage(text="replayed"))
    session.append_compaction("Goal.", session.entries[-1].id, tokens_before=99)
    session.append_custom("note")
    session.sync()
    assert recorded_operations(session.path, start) == ["restart", "model_change", "compaction"]
    assert recorded_operations(session.path, session.path.stat().st_size) == []
    session.close()
