"""Model-change reseed ("cold rebuild").

When the bound model changes, the new model does not inherit the native transcript.
Its context is rebuilt from the canonical history store's last 64 text messages, followed
by a projection of the tool-history sidecar: the newest records, at most 32 of them and
64 KiB of retained bytes. The rebuild starts a new root in the session (a
``session_boundary`` of kind ``model_change``, then a ``model_change`` entry), so the
old transcript stays on disk but out of context. When ConversationHistory is offered,
the projection's header names it, as the product's projection hint does.
"""

from __future__ import annotations

import msgspec

from continuity.harness.session import DurableSession
from continuity.harness.tool_history import ToolHistory
from continuity.memory.history import CanonicalHistory
from continuity.messages import AssistantMessage, Attribution, UserMessage
from continuity.traces.bounds import RESEED_TEXT_MESSAGES, projection_indexes

__all__ = ["PROJECTION_HEADER", "ReseedEvent", "reseed"]

PROJECTION_HEADER = "Tool history projection"


class ReseedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """Content-free facts about a reseed, kept as the boundary's evidence."""

    from_model: str
    to_model: str
    text_messages: int
    projected_records: int
    dropped_records: int
    projected_bytes: int
    tool_history_status: str
    history_tool_hint: bool
    entry_id: str


def _projection_text(
    tool_history: ToolHistory, indexes: list[int], total: int, history_tool: bool
) -> str:
    records = tool_history.records()
    hint = (
        " Older results are not in context; call ConversationHistory to look them up."
        if history_tool
        else " Older results are not in context."
    )
    parts = [f"[{PROJECTION_HEADER}: the newest {len(indexes)} of {total} tool results.{hint}]"]
    for index in indexes:
        record = records[index]
        kept = f"first {record.retained_bytes:,} bytes kept" if record.truncated else "complete"
        parts.append(
            f"=== {record.record_id} {record.tool} ({record.kind}, {record.bytes:,} bytes; "
            f"{kept}) ===\n{tool_history.retained(record)}"
        )
    return "\n\n".join(parts)


def _attribution(value: str) -> Attribution:
    """Canonical history keeps attribution as text; only owner and unknown survive as such."""
    if value == "owner":
        return "owner"
    return "unknown" if value == "unknown" else "host"


def reseed(
    session: DurableSession,
    history: CanonicalHistory,
    tool_history: ToolHistory,
    *,
    provider: str,
    model: str,
    history_tool: bool = False,
) -> ReseedEvent:
    """Rebuild the session's context for `provider:model` from canonical history."""
    previous = session.current_model()
    from_model = ":".join(previous) if previous else "unknown"
    texts = history.last(RESEED_TEXT_MESSAGES)
    records = tool_history.records()
    indexes = projection_indexes([r.retained_bytes for r in records])
    projected_bytes = sum(records[i].retained_bytes for i in indexes)
    boundary = session.append_boundary(
        "model_change",
        {"from": from_model, "to": f"{provider}:{model}", "mode": "resume_replay"},
        new_root=True,
    )
    session.append_model_change(provider, model, reason="model change (reseed)")
    for record in texts:
        if record.role == "user":
            session.append_message(
                UserMessage(
                    text=record.text, attribution=_attribution(record.attribution), source="reseed"
                )
            )
        else:
            session.append_message(AssistantMessage(text=record.text))
    session.append_message(
        UserMessage(
            text=_projection_text(tool_history, indexes, tool_history.record_count, history_tool),
            attribution="host",
            source="reseed",
        )
    )
    return ReseedEvent(
        from_model=from_model,
        to_model=f"{provider}:{model}",
        text_messages=len(texts),
        projected_records=len(indexes),
        dropped_records=tool_history.record_count - len(indexes),
        projected_bytes=projected_bytes,
        tool_history_status=tool_history.status,
        history_tool_hint=history_tool,
        entry_id=boundary.id,
    )
