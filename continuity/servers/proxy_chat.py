"""The model proxy's wire formats, and OpenAI Chat Completions among them.

A `ProxyFormat` is what `continuity.servers.model_proxy` needs of one wire format: how
a request body is read into the format-neutral `WireRequest`, how a reply is sent as one
document or as a server-sent event stream, and how a refusal is shaped so the format's
SDK parses it (its ``code``, such as ``replay_fidelity_failed``, readable in the body).

A reply (`Reply`) is ``{"text": str, "calls": [(call_id, tool_name, arguments), ...],
"usage": (input_tokens, output_tokens)}``. `CHAT` is the Chat Completions format
(``POST /v1/chat/completions``); the others are `continuity.servers.proxy_responses`
(OpenAI Responses) and `continuity.servers.proxy_anthropic` (Anthropic Messages).
`content_text` reads a content field given as a string or as a list of text parts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from continuity.servers.asgi import Events
from continuity.servers.proxy_script import WireRequest, wire_request

__all__ = [
    "CHAT",
    "ProxyFormat",
    "Reply",
    "content_text",
    "openai_error",
    "reply_usage",
]

Reply = dict[str, Any]  # {"text", "calls": [(id, name, arguments)], "usage": (in, out)}


class ProxyFormat(NamedTuple):
    """One wire format of the proxy (module doc)."""

    name: str  # as a manifest's ``api`` names it
    what: str  # the request's name in a refusal: "not a <what>: ..."
    parse: Callable[[dict[str, Any]], WireRequest]  # raises ValueError
    document: Callable[[str, Reply], dict[str, Any]]  # (model, reply) -> the body
    events: Callable[[str, Reply], Events]  # (model, reply) -> the stream
    error: Callable[[int, str, str], dict[str, Any]]  # (status, code, message) -> the body


def content_text(content: Any) -> str:
    """A content field's text: a string, or the texts of a list of parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def reply_usage(reply: Reply) -> tuple[int, int]:
    """(input tokens, output tokens) of `reply` ((0, 0) when it carries none)."""
    usage = reply.get("usage") or (0, 0)
    return int(usage[0]), int(usage[1])


def openai_error(status: int, code: str, message: str) -> dict[str, Any]:
    """OpenAI's error body (both OpenAI formats): the SDK reads ``error.code``."""
    del status  # one type for every refusal, as the chat route always answered
    return {"error": {"code": code, "message": message, "type": "invalid_request_error"}}


def _message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply["text"] or None}
    if reply["calls"]:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in reply["calls"]
        ]
    return message


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply["calls"] else "stop"


def _document(model: str, reply: Reply) -> dict[str, Any]:
    prompt, completion = reply_usage(reply)
    return {
        "id": "chatcmpl-continuity",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": _message(reply), "finish_reason": _finish(reply)}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _events(model: str, reply: Reply) -> Events:
    def chunk(delta: dict[str, Any], finish: str | None) -> tuple[str, str]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        data = {
            "id": "chatcmpl-continuity",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [choice],
        }
        return "", json.dumps(data)

    events = [chunk({"role": "assistant", "content": reply["text"] or ""}, None)]
    for number, (ident, name, arguments) in enumerate(reply["calls"]):
        call = {
            "index": number,
            "id": ident,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        events.append(chunk({"tool_calls": [call]}, None))
    events += [chunk({}, _finish(reply)), ("", "[DONE]")]
    return events


CHAT = ProxyFormat(
    name="openai-chat",
    what="chat request",
    parse=wire_request,
    document=_document,
    events=_events,
    error=openai_error,
)
