"""A loopback Responses endpoint whose replies the test scripts, event by event.

`ScriptedSse` is an ASGI app: each POST takes the next `Reply` — the server-sent events
to stream, and optionally a point after which the connection is cut (a lost stream) or
a status other than 200, or a point after which it hangs until the test
releases it. It records every request's headers and body. It is served by
the project's own loopback server (`continuity.servers.asgi.serve_asgi`) on 127.0.0.1
at an ephemeral port.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anyio

from continuity.servers.asgi import lifespan, read_body

__all__ = ["Reply", "ScriptedSse", "completed", "text_reply", "tool_reply"]


@dataclass
class Reply:
    events: list[dict[str, Any]] = field(default_factory=list)
    cut_after: int | None = None  # close the connection after this many events
    status: int = 200
    hang_after: int | None = None  # stop sending (without closing) after this many events


def completed(
    *,
    text: str = "an answer",
    usage: dict[str, Any] | None = None,
    tier: Any = "default",
    kind: str = "response.completed",
    calls: tuple[tuple[str, str, str], ...] = (),
    omit_tier: bool = False,
    omit_usage: bool = False,
    incomplete_reason: str | None = None,
) -> list[dict[str, Any]]:
    """The events of one reply: text deltas, then the terminal response."""
    output: list[dict[str, Any]] = []
    if text:
        output.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            }
        )
    output.extend(
        {"type": "function_call", "call_id": c, "name": n, "arguments": a} for c, n, a in calls
    )
    response: dict[str, Any] = {"id": "resp-1", "model": "gpt-6.1-sol", "output": output}
    if not omit_usage:
        response["usage"] = (
            usage
            if usage is not None
            else {
                "input_tokens": 1200,
                "input_tokens_details": {"cached_tokens": 200},
                "output_tokens": 300,
                "output_tokens_details": {"reasoning_tokens": 100},
            }
        )
    if not omit_tier:
        response["service_tier"] = tier
    if incomplete_reason is not None:
        response["incomplete_details"] = {"reason": incomplete_reason}
    events: list[dict[str, Any]] = []
    if text:
        events.append({"type": "response.output_text.delta", "delta": text})
    events.append({"type": kind, "response": response})
    return events


def text_reply(**kwargs: Any) -> Reply:
    return Reply(events=completed(**kwargs))


def tool_reply(call_id: str = "call-1", **kwargs: Any) -> Reply:
    return Reply(
        events=completed(
            text="", calls=((call_id, "ConversationHistory", '{"action": "search"}'),), **kwargs
        )
    )


class ScriptedSse:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.released = anyio.Event()  # set at teardown: every hanging reply then ends

    def release(self) -> None:
        self.released.set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = await read_body(receive) or b""  # a test server: no body is over its limit
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.requests.append((headers, body))
        reply = self.replies.pop(0) if self.replies else Reply(status=500)
        if reply.status != 200:
            await send(
                {
                    "type": "http.response.start",
                    "status": reply.status,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": b'{"error": "scripted"}'})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for index, event in enumerate(reply.events):
            if reply.cut_after is not None and index >= reply.cut_after:
                raise RuntimeError("scripted cut: the connection drops mid-stream")
            if reply.hang_after is not None and index >= reply.hang_after:
                await self.released.wait()
                return
            chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        if reply.cut_after is not None and reply.cut_after >= len(reply.events):
            raise RuntimeError("scripted cut: the connection drops before the end")
        await send({"type": "http.response.body", "body": b"", "more_body": False})
