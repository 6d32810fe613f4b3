"""OpenAI Chat Completions: the chunks (or the one document) the loopback server sends.

`chat_events` dresses a scripted reply as ``chat.completion.chunk`` data lines (no SSE
event names): a role delta, the text or the tool call's argument deltas, a finish
chunk, a usage chunk (cached prefix as ``prompt_tokens_details.cached_tokens``) and
``[DONE]``, as the ``openai`` SDK parses them. `chat_completion` is the same reply as
the ``chat.completion`` object a request without ``"stream": true`` gets.
"""

from __future__ import annotations

import json
import time
from typing import Any

from continuity.servers.wire_model import HISTORY_TOOL, Events, Usage, pieces

__all__ = ["chat_completion", "chat_events"]


def chat_events(
    model: str, call: int, text: str, tool: dict[str, Any] | None, usage: Usage
) -> Events:
    """The stream for `text`, or for a call of the history tool with arguments `tool`
    (its id numbered `call`), reporting `usage`."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None) -> str:
        return json.dumps(
            {
                "id": "chatcmpl-loopback",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    events = [("", chunk({"role": "assistant", "content": ""}, None))]
    if tool is None:
        events.extend(("", chunk({"content": piece}, None)) for piece in pieces(text))
        events.append(("", chunk({}, "stop")))
    else:
        events.extend(("", chunk(delta, None)) for delta in _tool_call_deltas(call, tool))
        events.append(("", chunk({}, "tool_calls")))
    events.append(("", _usage_chunk(model, created, usage)))
    events.append(("", "[DONE]"))
    return events


def chat_completion(
    model: str, call: int, text: str, tool: dict[str, Any] | None, usage: Usage
) -> dict[str, Any]:
    """The ``chat.completion`` object for `text`, or for a call of the history tool with
    arguments `tool` (its id numbered `call`), reporting `usage`."""
    message: dict[str, Any] = {"role": "assistant", "content": text if tool is None else None}
    if tool is not None:
        message["tool_calls"] = [
            {
                "id": f"call_{call}",
                "type": "function",
                "function": {"name": HISTORY_TOOL, "arguments": json.dumps(tool)},
            }
        ]
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if tool is None else "tool_calls",
            }
        ],
        "usage": _usage(usage),
    }


def _usage(usage: Usage) -> dict[str, Any]:
    """Chat Completions usage: the cached prefix as ``prompt_tokens_details``."""
    total, cached, output = usage
    return {
        "prompt_tokens": total,
        "completion_tokens": output,
        "total_tokens": total + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _tool_call_deltas(call: int, tool: dict[str, Any]) -> list[dict[str, Any]]:
    """The deltas of one history tool call: its id and name, then its arguments."""
    opening = {
        "index": 0,
        "id": f"call_{call}",
        "type": "function",
        "function": {"name": HISTORY_TOOL, "arguments": ""},
    }
    arguments = [
        {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        for piece in pieces(json.dumps(tool))
    ]
    return [{"tool_calls": [opening]}, *arguments]


def _usage_chunk(model: str, created: int, usage: Usage) -> str:
    """The closing chunk with no choices that carries the usage."""
    return json.dumps(
        {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": _usage(usage),
        }
    )
