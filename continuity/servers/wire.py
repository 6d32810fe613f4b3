"""A loopback model server speaking the real wire formats, with a scripted reply.

It serves OpenAI Chat Completions (``POST /v1/chat/completions``), OpenAI Responses
(``POST /v1/responses``) and Anthropic Messages (``POST /v1/messages``), each streamed
as server-sent events in the shape the official SDKs parse (tests prove it with the
``openai`` and ``anthropic`` packages). It stands in for a local OpenAI-compatible
server (vLLM, Ollama, llama.cpp) in tests and in the README walkthrough; the model
behind it is scripted:

- when ConversationHistory is offered and not yet called in this turn, it searches with
  the last words of the user's question;
- a compaction request (it asks for a summary) gets the summary section skeleton;
- anything else is answered ``UNKNOWN``.

Usage is counted like Pi's faux provider (``ceil(chars / 4)``); the prefix shared with
the previous request is reported as cached, in each format's own convention. Every call
is counted and its body kept (`calls`), and faults can be injected: 429s with
``Retry-After``, auth failures and hangs after a given call.

``python -m continuity.servers.wire`` serves it on 127.0.0.1 and prints the base URL.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import msgspec

from continuity.providers.scripted import shared_prefix

__all__ = ["Faults", "WireServer", "main", "serve_in_thread"]

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
HISTORY_TOOL = "ConversationHistory"
SECTIONS = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Next Steps",
    "Critical Context",
)


class Faults(msgspec.Struct, kw_only=True):
    """Injected failures, by 1-based call number (counted over every path)."""

    rate_limit_first: int = 0  # the first N calls get 429 with Retry-After
    retry_after: str = "1"
    auth_fail_from: int | None = None  # calls from this number on get 401
    quota_from: int | None = None  # calls from this number on get 429 insufficient_quota
    hang_from: int | None = None  # calls from this number on never answer
    truncate_from: int | None = None  # calls from this number on stop mid-stream


def _tokens(chars: int) -> int:
    return -(-chars // 4)


def _conversation(path: str, body: dict[str, Any]) -> tuple[str, bool, bool]:
    """(last user text, history tool offered, a tool was already called this turn)."""
    tools = body.get("tools") or []
    names = {t.get("name") or (t.get("function") or {}).get("name") for t in tools}
    offered = HISTORY_TOOL in names
    if path.endswith("/responses"):
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        user = [i for i, m in enumerate(items) if m.get("role") == "user"]
        last = user[-1] if user else -1
        text = str(items[last].get("content", "")) if user else ""
        called = any(m.get("type") == "function_call_output" for m in items[last + 1 :])
        return text, offered, called
    messages = body.get("messages") or []

    def user_text(message: dict[str, Any]) -> str | None:
        content = message.get("content")
        if message.get("role") != "user":
            return None
        if isinstance(content, str):
            return content
        texts = [c.get("text", "") for c in content or [] if c.get("type") == "text"]
        return texts[-1] if texts else None

    last, text = -1, ""
    for index, message in enumerate(messages):
        found = user_text(message)
        if found is not None:
            last, text = index, found
    after = messages[last + 1 :] if last >= 0 else []
    called = any(
        m.get("role") in ("tool",)
        or (
            m.get("role") == "assistant"
            and (
                m.get("tool_calls")
                or any(
                    c.get("type") == "tool_use"
                    for c in m.get("content") or []
                    if isinstance(c, dict)
                )
            )
        )
        for m in after
    )
    if last >= 0 and not isinstance(messages[last].get("content"), str):
        called = called or any(
            c.get("type") == "tool_result" for c in messages[last].get("content") or []
        )
    return text, offered, called


class WireServer:
    """The ASGI app. `calls` lists ``(path, body)`` of every request received."""

    def __init__(
        self,
        *,
        model: str = "local-model",
        faults: Faults | None = None,
        log_path: str | None = None,
    ) -> None:
        self.model = model
        self.log_path = log_path
        self.faults = faults or Faults()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._previous = b""
        self._lock = threading.Lock()

    def count(self, path: str | None = None) -> int:
        return sum(1 for p, _ in self.calls if path is None or p.endswith(path))

    def reply(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """The scripted model: (text, tool call arguments or None)."""
        text, offered, called = _conversation(path, body)
        if "summar" in text.lower() and not offered:
            return "\n".join(f"## {s}\n(summary from the loopback model)" for s in SECTIONS), None
        if offered and not called:
            words = " ".join(text.replace(":", " ").split()[-8:])
            return "", {"action": "search", "query": words, "limit": 5}
        return "UNKNOWN", None

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        if scope["method"] != "POST" or not path.endswith(
            ("/chat/completions", "/responses", "/messages")
        ):
            await self._json(send, 404, {"error": {"message": f"no route {path}"}})
            return
        body = json.loads(raw)
        with self._lock:
            self.calls.append((path, body))
            number = len(self.calls)
            cached = shared_prefix(self._previous, raw)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as log:
                    log.write(json.dumps({"path": path, "body": body}) + "\n")
            self._previous = raw
        faults = self.faults
        if faults.hang_from is not None and number >= faults.hang_from:
            await anyio.sleep_forever()
        if faults.auth_fail_from is not None and number >= faults.auth_fail_from:
            await self._json(
                send, 401, {"error": {"message": "invalid api key", "type": "authentication_error"}}
            )
            return
        if faults.quota_from is not None and number >= faults.quota_from:
            await self._json(
                send,
                429,
                {"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}},
            )
            return
        if number <= faults.rate_limit_first:
            await self._json(
                send,
                429,
                {"error": {"message": "slow down"}},
                [(b"retry-after", faults.retry_after.encode())],
            )
            return
        text, tool = self.reply(path, body)
        # Anthropic caches only up to explicit cache_control breakpoints: an unmarked
        # request neither reads nor writes the cache.
        anthropic_cache = path.endswith("/messages") and b'"cache_control"' in raw
        usage = (
            _tokens(len(raw)),
            cached // 4 if anthropic_cache or not path.endswith("/messages") else 0,
            _tokens(len(text) + (len(json.dumps(tool)) if tool else 0)),
        )
        if path.endswith("/chat/completions"):
            events = self._chat(text, tool, usage)
        elif path.endswith("/responses"):
            events = self._responses(text, tool, usage)
        else:
            events = self._anthropic(text, tool, usage, caching=anthropic_cache)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        if faults.truncate_from is not None and number >= faults.truncate_from:
            events = events[: len(events) // 2]
        for event, data in events:
            chunk = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _json(
        self,
        send: Send,
        status: int,
        payload: dict[str, Any],
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(payload).encode()})

    def _chat(
        self, text: str, tool: dict[str, Any] | None, usage: tuple[int, int, int]
    ) -> list[tuple[str, str]]:
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None) -> str:
            return json.dumps(
                {
                    "id": "chatcmpl-loopback",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )

        events = [("", chunk({"role": "assistant", "content": ""}, None))]
        if tool is None:
            for piece in _pieces(text):
                events.append(("", chunk({"content": piece}, None)))
            events.append(("", chunk({}, "stop")))
        else:
            arguments = json.dumps(tool)
            events.append(
                (
                    "",
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": f"call_{len(self.calls)}",
                                    "type": "function",
                                    "function": {"name": HISTORY_TOOL, "arguments": ""},
                                }
                            ]
                        },
                        None,
                    ),
                )
            )
            for piece in _pieces(arguments):
                events.append(
                    (
                        "",
                        chunk(
                            {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, None
                        ),
                    )
                )
            events.append(("", chunk({}, "tool_calls")))
        total, cached, output = usage
        events.append(
            (
                "",
                json.dumps(
                    {
                        "id": "chatcmpl-loopback",
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": self.model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": total,
                            "completion_tokens": output,
                            "total_tokens": total + output,
                            "prompt_tokens_details": {"cached_tokens": cached},
                        },
                    }
                ),
            )
        )
        events.append(("", "[DONE]"))
        return events

    def _responses(
        self, text: str, tool: dict[str, Any] | None, usage: tuple[int, int, int]
    ) -> list[tuple[str, str]]:
        total, cached, output = usage
        sequence = iter(range(1_000_000))
        base = {
            "id": "resp_loopback",
            "object": "response",
            "created_at": int(time.time()),
            "model": self.model,
            "status": "in_progress",
            "output": [],
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

        def event(kind: str, **fields: Any) -> tuple[str, str]:
            return kind, json.dumps({"type": kind, "sequence_number": next(sequence), **fields})

        events = [
            event("response.created", response=base),
            event("response.in_progress", response=base),
        ]
        if tool is None:
            item_id = "msg_loopback"
            item = {
                "id": item_id,
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            events.append(event("response.output_item.added", output_index=0, item=item))
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                event(
                    "response.content_part.added",
                    item_id=item_id,
                    output_index=0,
                    content_index=0,
                    part=part,
                )
            )
            for piece in _pieces(text):
                events.append(
                    event(
                        "response.output_text.delta",
                        item_id=item_id,
                        output_index=0,
                        content_index=0,
                        delta=piece,
                        logprobs=[],
                    )
                )
            events.append(
                event(
                    "response.output_text.done",
                    item_id=item_id,
                    output_index=0,
                    content_index=0,
                    text=text,
                    logprobs=[],
                )
            )
            done_part = {"type": "output_text", "text": text, "annotations": []}
            events.append(
                event(
                    "response.content_part.done",
                    item_id=item_id,
                    output_index=0,
                    content_index=0,
                    part=done_part,
                )
            )
            done = {**item, "status": "completed", "content": [done_part]}
        else:
            arguments = json.dumps(tool)
            item_id = "fc_loopback"
            item = {
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "call_id": f"call_{len(self.calls)}",
                "name": HISTORY_TOOL,
                "arguments": "",
            }
            events.append(event("response.output_item.added", output_index=0, item=item))
            for piece in _pieces(arguments):
                events.append(
                    event(
                        "response.function_call_arguments.delta",
                        item_id=item_id,
                        output_index=0,
                        delta=piece,
                    )
                )
            events.append(
                event(
                    "response.function_call_arguments.done",
                    item_id=item_id,
                    output_index=0,
                    arguments=arguments,
                )
            )
            done = {**item, "status": "completed", "arguments": arguments}
        events.append(event("response.output_item.done", output_index=0, item=done))
        final = {
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
        events.append(event("response.completed", response=final))
        return events

    def _anthropic(
        self,
        text: str,
        tool: dict[str, Any] | None,
        usage: tuple[int, int, int],
        *,
        caching: bool = True,
    ) -> list[tuple[str, str]]:
        total, cached, output = usage
        written = total - cached if caching else 0
        start_usage = {
            "input_tokens": 0 if caching else total,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": cached,
            "output_tokens": 1,
        }

        def event(kind: str, **fields: Any) -> tuple[str, str]:
            return kind, json.dumps({"type": kind, **fields})

        events = [
            event(
                "message_start",
                message={
                    "id": "msg_loopback",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": self.model,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            )
        ]
        events.append(("ping", json.dumps({"type": "ping"})))
        if tool is None:
            events.append(
                event("content_block_start", index=0, content_block={"type": "text", "text": ""})
            )
            for piece in _pieces(text):
                events.append(
                    event(
                        "content_block_delta", index=0, delta={"type": "text_delta", "text": piece}
                    )
                )
            stop = "end_turn"
        else:
            events.append(
                event(
                    "content_block_start",
                    index=0,
                    content_block={
                        "type": "tool_use",
                        "id": f"toolu_{len(self.calls)}",
                        "name": HISTORY_TOOL,
                        "input": {},
                    },
                )
            )
            for piece in _pieces(json.dumps(tool)):
                events.append(
                    event(
                        "content_block_delta",
                        index=0,
                        delta={"type": "input_json_delta", "partial_json": piece},
                    )
                )
            stop = "tool_use"
        events.append(event("content_block_stop", index=0))
        events.append(
            event(
                "message_delta",
                delta={"stop_reason": stop, "stop_sequence": None},
                usage={"output_tokens": output},
            )
        )
        events.append(event("message_stop"))
        return events


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@contextmanager
def serve_in_thread(app: WireServer) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 from a background thread (so blocking code in this
    thread, such as a runner with child processes, can call it); yield its base URL."""
    from continuity.servers.asgi import serve_asgi

    ready: list[str] = []
    stop = threading.Event()

    async def run() -> None:
        async with serve_asgi(app) as url:
            ready.append(url)
            while not stop.is_set():
                await anyio.sleep(0.02)

    thread = threading.Thread(target=anyio.run, args=(run,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not ready:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the loopback model server did not start")
        time.sleep(0.01)
    try:
        yield ready[0]
    finally:
        stop.set()
        thread.join(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m continuity.servers.wire")
    parser.add_argument("--model", default="local-model")
    parser.add_argument("--calls-log", help="append every request body to this JSONL file")
    parser.add_argument("--hang-from", type=int, help="never answer calls from this number on")
    args = parser.parse_args(argv)
    app = WireServer(
        model=args.model, faults=Faults(hang_from=args.hang_from), log_path=args.calls_log
    )

    async def run() -> None:
        from continuity.servers.asgi import serve_asgi

        async with serve_asgi(app) as url:
            print(f"listening {url}/v1", flush=True)
            await anyio.sleep_forever()

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
