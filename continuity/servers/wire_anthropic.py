"""Anthropic Messages: the events (or the one document) the loopback wire server sends.

`anthropic_events` dresses a scripted reply as named SSE events (``message_start``,
``ping``, one content block of text or ``tool_use`` input deltas, ``message_delta`` with
the stop reason and output tokens, ``message_stop``), as the ``anthropic`` SDK parses
them. Usage follows Anthropic's cache convention: a request with ``cache_control``
breakpoints reads its shared prefix from the cache and writes the rest; an unmarked one
neither reads nor writes. `anthropic_message` is the same reply as the one ``message``
object a request without ``"stream": true`` gets.
"""

from __future__ import annotations

import json
from typing import Any

from continuity.servers.wire_model import HISTORY_TOOL, Events, Usage, pieces

__all__ = ["anthropic_events", "anthropic_message"]


def _event(kind: str, **fields: Any) -> tuple[str, str]:
    return kind, json.dumps({"type": kind, **fields})


def anthropic_events(
    model: str,
    call: int,
    text: str,
    tool: dict[str, Any] | None,
    usage: Usage,
    *,
    caching: bool = True,
) -> Events:
    """The stream for `text`, or for a call of the history tool with input `tool` (its
    id numbered `call`), reporting `usage` (cached and written only when `caching`)."""
    start_usage = _usage(usage, caching, output=1)
    message: dict[str, Any] = {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events = [_event("message_start", message=message), ("ping", json.dumps({"type": "ping"}))]
    if tool is None:
        events.extend(_text_block(text))
        stop = "end_turn"
    else:
        events.extend(_tool_use_block(call, tool))
        stop = "tool_use"
    events.append(_event("content_block_stop", index=0))
    events.append(
        _event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": usage.output},
        )
    )
    events.append(_event("message_stop"))
    return events


def anthropic_message(
    model: str,
    call: int,
    text: str,
    tool: dict[str, Any] | None,
    usage: Usage,
    *,
    caching: bool = True,
) -> dict[str, Any]:
    """The ``message`` object for `text`, or for a call of the history tool with input
    `tool` (its id numbered `call`), reporting `usage` (cached and written only when
    `caching`)."""
    block: dict[str, Any] = (
        {"type": "text", "text": text}
        if tool is None
        else {"type": "tool_use", "id": f"toolu_{call}", "name": HISTORY_TOOL, "input": tool}
    )
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "content": [block],
        "model": model,
        "stop_reason": "end_turn" if tool is None else "tool_use",
        "stop_sequence": None,
        "usage": _usage(usage, caching, output=usage.output),
    }


def _usage(usage: Usage, caching: bool, *, output: int) -> dict[str, int]:
    """Anthropic usage: with `caching`, the shared prefix is read from the cache and the
    rest written to it (no uncached input); without, all of it is plain input."""
    total, cached, _ = usage
    return {
        "input_tokens": 0 if caching else total,
        "cache_creation_input_tokens": total - cached if caching else 0,
        "cache_read_input_tokens": cached,
        "output_tokens": output,
    }


def _text_block(text: str) -> Events:
    """Content block 0 as text: its start and its text deltas."""
    block = {"type": "text", "text": ""}
    events = [_event("content_block_start", index=0, content_block=block)]
    events.extend(
        _event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
        for piece in pieces(text)
    )
    return events


def _tool_use_block(call: int, tool: dict[str, Any]) -> Events:
    """Content block 0 as a history tool call: its start and its input JSON deltas."""
    block = {"type": "tool_use", "id": f"toolu_{call}", "name": HISTORY_TOOL, "input": {}}
    events = [_event("content_block_start", index=0, content_block=block)]
    events.extend(
        _event(
            "content_block_delta",
            index=0,
            delta={"type": "input_json_delta", "partial_json": piece},
        )
        for piece in pieces(json.dumps(tool))
    )
    return events
