"""The model proxy's Anthropic Messages format (``POST /<token>/v1/messages``: the
``anthropic`` SDK's path under a base URL of ``http://127.0.0.1:<port>/<token>``).

`messages_request` reads a Messages body into the format-neutral `WireRequest`, so the
proxy's checks (owner text, tool results, steers, the replay signature) apply to it
unchanged: ``system`` (a string or text blocks) is the system text; each message's
content is a string or blocks: ``text`` blocks are its text, an assistant's
``tool_use`` blocks its tool calls (the input as JSON, as Chat carries arguments), and a
user message holding ``tool_result`` blocks becomes one tool message per result (its
content a string or text blocks), followed by a user message with its text blocks if it
has any (a steer sent beside the results); ``tools`` names the tools offered, and
``tool_choice.disable_parallel_tool_use`` sets ``parallel_tool_calls`` (disabled: False).

`MESSAGES` answers with one ``message`` object (a ``text`` block unless the reply is only
calls, one ``tool_use`` block per call, stop reason ``end_turn`` or ``tool_use``, usage)
or its stream (``message_start``, ``ping``, each block's ``content_block_start``, text or
``input_json_delta`` deltas and ``content_block_stop``, ``message_delta`` with the stop
reason and output tokens, ``message_stop``), as the ``anthropic`` SDK parses them.
Refusals are Anthropic's error body (``{"type": "error", "error": {"type", "message"}}``)
with the proxy's ``code`` beside them and at the head of the message.
"""

from __future__ import annotations

import json
from typing import Any

from continuity.servers.asgi import Events
from continuity.servers.proxy_chat import ProxyFormat, Reply, content_text, reply_usage
from continuity.servers.proxy_script import WireMessage, WireRequest
from continuity.servers.wire_model import pieces

__all__ = ["MESSAGES", "anthropic_error", "messages_request"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        raise ValueError("a message's content is not a string or a list of blocks")
    return content


def _wire_messages(role: str, content: Any) -> list[WireMessage]:
    """One Messages message as wire messages (module doc)."""
    blocks = _blocks(content)
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    if role == "assistant":
        calls = tuple(
            (str(b.get("name", "")), json.dumps(b.get("input", {})))
            for b in blocks
            if b.get("type") == "tool_use"
        )
        return [WireMessage(role, "".join(texts), calls)]
    results = [
        WireMessage("tool", content_text(b.get("content")))
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    if results and not texts:
        return results
    return [*results, WireMessage(role, "".join(texts))]


def messages_request(body: dict[str, Any]) -> WireRequest:
    """`body` (a Messages request) as a `WireRequest` (module doc).

    Raises:
        ValueError: the body is not a Messages request.
    """
    raw = body.get("messages")
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        raise ValueError("messages is not a list of objects")
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        raise ValueError("system is not a string or a list of text blocks")
    messages = [w for m in raw for w in _wire_messages(str(m.get("role", "")), m.get("content"))]
    offered = body.get("tools") or []
    if not isinstance(offered, list):
        raise ValueError("tools is not a list")
    tools = tuple(str(t.get("name", "")) for t in offered if isinstance(t, dict))
    choice = body.get("tool_choice")
    if choice is not None and not isinstance(choice, dict):
        raise ValueError("tool_choice is not an object")
    disabled = (choice or {}).get("disable_parallel_tool_use")
    return WireRequest(
        model=str(body.get("model", "")),
        system=content_text(system),
        messages=tuple(messages),
        tools=tools,
        stream=body.get("stream") is True,
        parallel_tool_calls=not disabled if isinstance(disabled, bool) else None,
    )


def anthropic_error(status: int, code: str, message: str) -> dict[str, Any]:
    """Anthropic's error body, the proxy's `code` beside its type and in its message."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "code": code, "message": f"{code}: {message}"}}


def _content(reply: Reply) -> list[dict[str, Any]]:
    """The reply's blocks: its text (unless it is only calls), then its calls."""
    blocks: list[dict[str, Any]] = []
    if reply["text"] or not reply["calls"]:
        blocks.append({"type": "text", "text": reply["text"]})
    blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in reply["calls"]]
    return blocks


def _message(model: str, reply: Reply, content: list[dict[str, Any]]) -> dict[str, Any]:
    read, written = reply_usage(reply)
    return {
        "id": "msg_continuity",
        "type": "message",
        "role": "assistant",
        "content": content,
        "model": model,
        "stop_reason": "tool_use" if reply["calls"] else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": read, "output_tokens": written},
    }


def _document(model: str, reply: Reply) -> dict[str, Any]:
    return _message(model, reply, _content(reply))


def _event(kind: str, **fields: Any) -> tuple[str, str]:
    return kind, json.dumps({"type": kind, **fields})


def _block_events(index: int, block: dict[str, Any]) -> Events:
    """One content block's events: its start, its deltas, its stop."""
    if block["type"] == "text":
        opened: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
    else:
        opened = {**block, "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": piece}
            for piece in pieces(json.dumps(block["input"]))
        ]
    return [
        _event("content_block_start", index=index, content_block=opened),
        *(_event("content_block_delta", index=index, delta=delta) for delta in deltas),
        _event("content_block_stop", index=index),
    ]


def _events(model: str, reply: Reply) -> Events:
    started = _message(model, reply, [])
    started.update(stop_reason=None, usage={**started["usage"], "output_tokens": 0})
    events = [_event("message_start", message=started), _event("ping")]
    for index, block in enumerate(_content(reply)):
        events += _block_events(index, block)
    stop = {"stop_reason": "tool_use" if reply["calls"] else "end_turn", "stop_sequence": None}
    written = {"output_tokens": reply_usage(reply)[1]}
    events.append(_event("message_delta", delta=stop, usage=written))
    events.append(_event("message_stop"))
    return events


MESSAGES = ProxyFormat(
    name="anthropic",
    what="Messages request",
    parse=messages_request,
    document=_document,
    events=_events,
    error=anthropic_error,
)
