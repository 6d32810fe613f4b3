"""The model proxy's OpenAI Responses format (``POST /<token>/v1/responses``).

`responses_request` reads a Responses body into the format-neutral `WireRequest`, so
the proxy's checks (owner text, tool results, steers, the replay signature) apply to it
unchanged: ``instructions`` and any ``system``/``developer`` input item are the system
text; ``input`` is a string (one user message) or a list of items: messages (``user``,
``assistant``; content a string or ``input_text``/``output_text`` parts),
``function_call`` items (joined to the assistant message they follow, as Chat carries
them in one message) and ``function_call_output`` items (tool messages); ``tools``
names the functions offered (a built-in tool by its type). Conversation state kept by
the server (``previous_response_id``, ``conversation``, ``item_reference`` items) is
refused: the proxy keeps none, so the agent must send its whole input.

`RESPONSES` answers with one ``response`` object (a ``message`` item with its
``output_text``, then one ``function_call`` item per call, and usage) or its stream
(``response.created``, ``response.in_progress``, each item's ``output_item.added``,
text or argument deltas and ``output_item.done``, ``response.completed``), numbered by
``sequence_number`` as the ``openai`` SDK parses them. Refusals are OpenAI's error body.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from continuity.servers.asgi import Events
from continuity.servers.proxy_chat import (
    ProxyFormat,
    Reply,
    content_text,
    openai_error,
    reply_usage,
)
from continuity.servers.proxy_script import WireMessage, WireRequest
from continuity.servers.wire_model import pieces
from continuity.servers.wire_responses import response_frame

__all__ = ["RESPONSES", "responses_request"]

_STATEFUL = ("previous_response_id", "conversation")
_Event = Callable[..., tuple[str, str]]  # (kind, **fields) -> one numbered event


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ValueError("input is not a string or a list of objects")
    return raw


def _call(messages: list[WireMessage], item: dict[str, Any]) -> None:
    """Add the ``function_call`` `item` to the assistant message it follows (or a new one)."""
    call = (str(item.get("name", "")), str(item.get("arguments", "")))
    if messages and messages[-1].role == "assistant":
        last = messages.pop()
        messages.append(WireMessage("assistant", last.text, (*last.tool_calls, call)))
    else:
        messages.append(WireMessage("assistant", "", (call,)))


def responses_request(body: dict[str, Any]) -> WireRequest:
    """`body` (a Responses request) as a `WireRequest` (module doc).

    Raises:
        ValueError: the body is not a Responses request the proxy can serve.
    """
    for field in _STATEFUL:
        if body.get(field) is not None:
            raise ValueError(
                f"{field} is not supported: the proxy keeps no conversation state, "
                "so the agent must send its whole input"
            )
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ValueError("instructions is not a string")
    system = [instructions] if instructions else []
    messages: list[WireMessage] = []
    for item in _input_items(body):
        kind = item.get("type", "message")
        if kind == "message":
            role, text = str(item.get("role", "")), content_text(item.get("content"))
            if role in ("system", "developer"):
                system.append(text)
            else:
                messages.append(WireMessage(role, text))
        elif kind == "function_call":
            _call(messages, item)
        elif kind == "function_call_output":
            messages.append(WireMessage("tool", content_text(item.get("output"))))
        elif kind == "item_reference":
            raise ValueError("item_reference is not supported: the proxy keeps no items")
        # other items (reasoning, ...) hold nothing the replay checks
    offered = body.get("tools") or []
    if not isinstance(offered, list):
        raise ValueError("tools is not a list")
    tools = tuple(str(t.get("name") or t.get("type", "")) for t in offered if isinstance(t, dict))
    parallel = body.get("parallel_tool_calls")
    return WireRequest(
        model=str(body.get("model", "")),
        system="\n".join(system),
        messages=tuple(messages),
        tools=tools,
        stream=body.get("stream") is True,
        parallel_tool_calls=parallel if isinstance(parallel, bool) else None,
    )


def _items(reply: Reply) -> list[dict[str, Any]]:
    """The reply's output items, completed: its text (unless it is only calls), its calls."""
    items: list[dict[str, Any]] = []
    if reply["text"] or not reply["calls"]:
        part = {"type": "output_text", "text": reply["text"], "annotations": [], "logprobs": []}
        items.append(
            {
                "id": "msg_continuity",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for ident, name, arguments in reply["calls"]:
        items.append(
            {
                "id": f"fc_{ident}",
                "type": "function_call",
                "status": "completed",
                "call_id": ident,
                "name": name,
                "arguments": json.dumps(arguments),
            }
        )
    return items


def _response(model: str, output: list[dict[str, Any]], reply: Reply | None) -> dict[str, Any]:
    """The response object: in progress (no `reply` yet), or completed with its usage."""
    status = "in_progress" if reply is None else "completed"
    response = response_frame(model, "resp_continuity", 0, status=status, output=output)
    if reply is not None:
        read, written = reply_usage(reply)
        response["usage"] = {
            "input_tokens": read,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": written,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": read + written,
        }
    return response


def _document(model: str, reply: Reply) -> dict[str, Any]:
    return _response(model, _items(reply), reply)


def _item_events(event: _Event, index: int, item: dict[str, Any]) -> Events:
    """One output item's events, from ``output_item.added`` to ``output_item.done`` (made
    in wire order: each takes the next sequence number)."""
    if item["type"] == "message":
        part = item["content"][0]
        at = {"item_id": item["id"], "output_index": index, "content_index": 0}
        opened = {**item, "status": "in_progress", "content": []}
        events = [
            event("response.output_item.added", output_index=index, item=opened),
            event("response.content_part.added", **at, part={**part, "text": ""}),
        ]
        events += [
            event("response.output_text.delta", **at, delta=piece, logprobs=[])
            for piece in pieces(part["text"])
        ]
        events.append(event("response.output_text.done", **at, text=part["text"], logprobs=[]))
        events.append(event("response.content_part.done", **at, part=part))
    else:
        at = {"item_id": item["id"], "output_index": index}
        opened = {**item, "status": "in_progress", "arguments": ""}
        arguments = item["arguments"]
        events = [event("response.output_item.added", output_index=index, item=opened)]
        events += [
            event("response.function_call_arguments.delta", **at, delta=piece)
            for piece in pieces(arguments)
        ]
        done = {"name": item["name"], "arguments": arguments}
        events.append(event("response.function_call_arguments.done", **at, **done))
    events.append(event("response.output_item.done", output_index=index, item=item))
    return events


def _events(model: str, reply: Reply) -> Events:
    numbers = itertools.count()

    def event(kind: str, **fields: Any) -> tuple[str, str]:
        return kind, json.dumps({"type": kind, "sequence_number": next(numbers), **fields})

    started = _response(model, [], None)
    events = [
        event("response.created", response=started),
        event("response.in_progress", response=started),
    ]
    items = _items(reply)
    for index, item in enumerate(items):
        events += _item_events(event, index, item)
    events.append(event("response.completed", response=_response(model, items, reply)))
    return events


RESPONSES = ProxyFormat(
    name="openai-responses",
    what="Responses request",
    parse=responses_request,
    document=_document,
    events=_events,
    error=openai_error,
)
