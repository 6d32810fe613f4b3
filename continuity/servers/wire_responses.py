"""OpenAI Responses: the events (or the one document) the loopback wire server sends.

`responses_events` dresses a scripted reply as named SSE events, each numbered by
``sequence_number``: ``response.created`` and ``response.in_progress``, one output item
(a message with its text part and deltas, or a ``function_call`` with its argument
deltas), ``response.output_item.done`` and ``response.completed`` carrying the usage
(cached prefix as ``input_tokens_details.cached_tokens``), as the ``openai`` SDK parses
them. `responses_object` is the completed response alone: what a request without
``"stream": true`` gets (the same object ``response.completed`` carries).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from continuity.servers.wire_model import HISTORY_TOOL, Events, Usage, pieces

__all__ = ["response_frame", "responses_events", "responses_object"]


class _Sequence:
    """Makes one response's events, numbered in the order they are made."""

    def __init__(self) -> None:
        self._numbers = itertools.count()

    def event(self, kind: str, **fields: Any) -> tuple[str, str]:
        number = next(self._numbers)
        return kind, json.dumps({"type": kind, "sequence_number": number, **fields})


def responses_events(
    model: str, call: int, text: str, tool: dict[str, Any] | None, usage: Usage
) -> Events:
    """The stream for `text`, or for a call of the history tool with arguments `tool`
    (its call id numbered `call`), reporting `usage`."""
    sequence = _Sequence()
    base = _response(model)
    events = [
        sequence.event("response.created", response=base),
        sequence.event("response.in_progress", response=base),
    ]
    if tool is None:
        done = _message_item(sequence, events, text)
    else:
        done = _function_call_item(sequence, events, call, tool)
    events.append(sequence.event("response.output_item.done", output_index=0, item=done))
    events.append(sequence.event("response.completed", response=_completed(base, done, usage)))
    return events


def responses_object(
    model: str, call: int, text: str, tool: dict[str, Any] | None, usage: Usage
) -> dict[str, Any]:
    """The completed response for `text`, or for a call of the history tool with
    arguments `tool` (its call id numbered `call`), reporting `usage`."""
    # The items are built through the stream's own steps, so the two answers agree.
    events: Events = []
    if tool is None:
        done = _message_item(_Sequence(), events, text)
    else:
        done = _function_call_item(_Sequence(), events, call, tool)
    return _completed(_response(model), done, usage)


def _completed(base: dict[str, Any], done: dict[str, Any], usage: Usage) -> dict[str, Any]:
    """The response `base` completed with the one output item `done` and `usage`."""
    total, cached, output = usage
    return {
        **base,
        "status": "completed",
        "output": [done],
        "usage": {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total + output,
        },
    }


def _response(model: str) -> dict[str, Any]:
    """The response object as it stands before any output."""
    return response_frame(model, "resp_loopback", int(time.time()))


def response_frame(
    model: str,
    ident: str,
    created_at: int,
    *,
    status: str = "in_progress",
    output: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Responses ``response`` object without usage: its fixed fields (the ones the
    openai SDK's types require), `status` and `output` (this loopback server's and the
    model proxy's, `continuity.servers.proxy_responses`)."""
    return {
        "id": ident,
        "object": "response",
        "created_at": created_at,
        "model": model,
        "status": status,
        "output": output if output is not None else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
    }


def _message_item(sequence: _Sequence, events: Events, text: str) -> dict[str, Any]:
    """Append the events of a message item carrying `text`; return the item, completed."""
    item_id = "msg_loopback"
    item = {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    at = {"item_id": item_id, "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "text": "", "annotations": []}
    events.append(sequence.event("response.output_item.added", output_index=0, item=item))
    events.append(sequence.event("response.content_part.added", **at, part=part))
    events.extend(
        sequence.event("response.output_text.delta", **at, delta=piece, logprobs=[])
        for piece in pieces(text)
    )
    events.append(sequence.event("response.output_text.done", **at, text=text, logprobs=[]))
    done_part = {"type": "output_text", "text": text, "annotations": []}
    events.append(sequence.event("response.content_part.done", **at, part=done_part))
    return {**item, "status": "completed", "content": [done_part]}


def _function_call_item(
    sequence: _Sequence, events: Events, call: int, tool: dict[str, Any]
) -> dict[str, Any]:
    """Append the events of a history tool call with arguments `tool`; return the
    item, completed."""
    arguments = json.dumps(tool)
    item_id = "fc_loopback"
    item = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "call_id": f"call_{call}",
        "name": HISTORY_TOOL,
        "arguments": "",
    }
    at = {"item_id": item_id, "output_index": 0}
    events.append(sequence.event("response.output_item.added", output_index=0, item=item))
    events.extend(
        sequence.event("response.function_call_arguments.delta", **at, delta=piece)
        for piece in pieces(arguments)
    )
    events.append(
        sequence.event("response.function_call_arguments.done", **at, arguments=arguments)
    )
    return {**item, "status": "completed", "arguments": arguments}
