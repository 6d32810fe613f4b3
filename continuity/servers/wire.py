"""A loopback model server speaking the real wire formats, with a scripted reply.

It serves OpenAI Chat Completions (``POST /v1/chat/completions``), OpenAI Responses
(``POST /v1/responses``) and Anthropic Messages (``POST /v1/messages``), each streamed
as server-sent events when the request asks for ``"stream": true`` and answered as one
JSON document otherwise, in the shape the official SDKs parse (tests prove it with the
``openai`` and ``anthropic`` packages); ``GET /v1/models`` lists the one model it serves.
It stands in for a local OpenAI-compatible
server (vLLM, Ollama, llama.cpp) in tests and in the README walkthrough; the model
behind it is scripted:

- when ConversationHistory is offered and not yet called in this turn, it searches with
  the last words of the user's question;
- a ledger extraction request (records offered under their headers) gets a delta of
  one entry per offered record;
- a compaction request (it asks for a summary) gets the summary section skeleton;
- anything else is answered ``UNKNOWN`` (``ANSWER: UNKNOWN`` when the text asks for an
  answer line).

Usage is counted like Pi's faux provider (``ceil(chars / 4)``); the prefix shared with
the previous request is reported as cached, in each format's own convention. Every call
is counted and its body kept (`calls`), and faults can be injected: 429s with
``Retry-After``, auth failures and hangs after a given call. A fixed latency
(`WireServer.latency_ms`, ``--latency-ms``) delays every model call without blocking the
others, the way a remote model's time to answer overlaps across concurrent calls.

This module owns the ASGI app (routing, fault injection, call log, usage) and serving
it; the scripted model is `wire_model`, each format's stream is built by its own
module (`wire_chat`, `wire_responses`, `wire_anthropic`), and the command line's options
and listening socket are `wire_options`.

``python -m continuity.servers.wire [--port N] [--latency-ms N] [--model NAME]`` serves it
on 127.0.0.1 and prints the base URL. ``--port 0`` (the default) lets the kernel choose;
a fixed port keeps the base URL, and with it a confirmed plan's digest, across restarts.
A bad option value or a busy port is one coded line on stderr and exit status 2.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from continuity.errors import UsageError
from continuity.providers.scripted import shared_prefix
from continuity.servers.asgi import (
    Receive,
    Send,
    lifespan,
    read_body,
    send_events,
    send_json,
    too_large,
)
from continuity.servers.wire_anthropic import anthropic_events, anthropic_message
from continuity.servers.wire_chat import chat_completion, chat_events
from continuity.servers.wire_model import (
    Events,
    Usage,
    conversation,
    model_list,
    output_cap,
    scripted_reply,
    tokens,
)
from continuity.servers.wire_options import MAX_LATENCY_MS, listening_socket, parse_arguments
from continuity.servers.wire_responses import responses_events, responses_object
from continuity.servers.wire_validate import active_validators, refusals

__all__ = [
    "MAX_LATENCY_MS",
    "MODELS_ROUTE",
    "ROUTES",
    "Faults",
    "Receive",
    "Send",
    "WireServer",
    "main",
    "serve_in_thread",
]

ROUTES = ("/chat/completions", "/responses", "/messages")
MODELS_ROUTE = "/models"


class Faults(msgspec.Struct, kw_only=True):
    """Injected failures, by 1-based call number (counted over every path)."""

    rate_limit_first: int = 0  # the first N calls get 429 with Retry-After
    retry_after: str = "1"
    auth_fail_from: int | None = None  # calls from this number on get 401
    quota_from: int | None = None  # calls from this number on get 429 insufficient_quota
    hang_from: int | None = None  # calls from this number on never answer
    truncate_from: int | None = None  # calls from this number on stop mid-stream
    # calls from this number on send half their stream, then hold it open (the endpoint
    # stalls mid-stream until it is stopped); the calls log gets ``{"stalled": N}``
    stall_from: int | None = None
    # calls from this number on report their input count but no output count
    partial_usage_from: int | None = None
    # write past the output cap the request sends (a server that ignores the field):
    # each reply is padded to three times the cap
    ignore_output_cap: bool = False
    # refuse a request over the context window as llama-cpp-python does: a streamed one
    # gets a 200 stream that ends before any event (its message stays in the server's
    # log), one without "stream" a 400 with the message (vLLM's refusal otherwise)
    overflow_empty_stream: bool = False


_OUTPUT_COUNTS = ("completion_tokens", "output_tokens")


def _without_output_counts(events: Events) -> Events:
    """`events` with every usage object's output count removed (a server that reports
    only part of its usage)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if not (k in _OUTPUT_COUNTS and isinstance(v, int))
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    stripped: Events = []
    for name, data in events:
        if '"usage"' in data:
            data = json.dumps(strip(json.loads(data)))
        stripped.append((name, data))
    return stripped


class WireServer:
    """The ASGI app. `calls` lists ``(path, body)`` of every model call received (a
    ``GET /v1/models`` is not a model call); each is answered `latency_ms` after it
    arrived. `peak_in_flight` is the most calls it has held at once."""

    def __init__(
        self,
        *,
        model: str = "local-model",
        faults: Faults | None = None,
        log_path: str | None = None,
        latency_ms: int = 0,
        context_window: int | None = None,
    ) -> None:
        self.model = model
        self.log_path = log_path
        self.latency_ms = latency_ms
        self.faults = faults or Faults()
        # The model's context window: listed as vLLM lists it (``max_model_len`` in
        # ``GET /v1/models``), and a request over it refused as vLLM refuses it.
        self.context_window = context_window
        self.refused: list[tuple[str, list[str]]] = []  # (path, problems) of refused bodies
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.in_flight = 0  # model calls received and not yet answered
        self.peak_in_flight = 0
        self._previous = b""
        self._lock = threading.Lock()

    def count(self, path: str | None = None) -> int:
        return sum(1 for p, _ in self.calls if path is None or p.endswith(path))

    def reply(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """The scripted model: (text, tool call arguments or None)."""
        return scripted_reply(*conversation(path, body))

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        raw = await read_body(receive)
        if raw is None:
            await self._json(send, 413, {"error": {"message": too_large()}})
            return
        path = scope["path"]
        if scope["method"] == "GET" and path.endswith(MODELS_ROUTE):
            await self._json(send, 200, model_list(self.model, self.context_window))
            return
        if scope["method"] != "POST" or not path.endswith(ROUTES):
            await self._json(send, 404, {"error": {"message": f"no route {path}"}})
            return
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            await self._json(send, 400, {"error": {"message": "the body is not a JSON object"}})
            return
        number, cached = self._record(path, body, raw)
        try:
            if not await self._refused_body(send, path, body, raw):
                await self._answer_call(send, path, body, raw, number, cached)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _refused_body(self, send: Send, path: str, body: dict[str, Any], raw: bytes) -> bool:
        """Refuse a body the third-party validators refuse (`wire_validate`), or one over
        the context window, as real servers do (400); whether it was refused."""
        route = next(r for r in ROUTES if path.endswith(r))
        problems = refusals(route, body)
        if problems:
            self.refused.append((path, problems))
            await self._json(
                send,
                400,
                {
                    "error": {
                        "message": "invalid request: " + "; ".join(problems),
                        "type": "invalid_request_error",
                        "code": "request_invalid",
                    }
                },
            )
            return True
        window = self.context_window
        cap = output_cap(path, body, default=0)  # vLLM: no cap asks for what is left
        wanted = tokens(len(raw)) + cap
        if window is not None and wanted > window:
            self.refused.append((path, ["context window"]))
            if self.faults.overflow_empty_stream and body.get("stream") is True:
                await send_events(send, [])
                return True
            await self._json(
                send,
                400,
                {
                    "object": "error",
                    "message": f"This model's maximum context length is {window} tokens. "
                    f"However, you requested {wanted} tokens ({tokens(len(raw))} in the "
                    f"messages, {cap} in the completion). Please reduce the length of the "
                    "messages or completion.",
                    "type": "BadRequestError",
                    "code": 400,
                },
            )
            return True
        return False

    async def _answer_call(
        self, send: Send, path: str, body: dict[str, Any], raw: bytes, number: int, cached: int
    ) -> None:
        """Answer model call `number`: after the latency, its fault, or its reply (a
        stream when asked for, else one JSON document)."""
        if self.latency_ms:
            await anyio.sleep(self.latency_ms / 1000)  # other calls proceed meanwhile
        if await self._refused(send, number):
            return
        truncate = self.faults.truncate_from
        truncated = truncate is not None and number >= truncate
        if body.get("stream") is not True:
            await self._document(send, path, body, raw, cached, truncated=truncated)
            return
        events = self._events(path, body, raw, cached)
        if truncated:
            events = events[: len(events) // 2]
        partial = self.faults.partial_usage_from
        if partial is not None and number >= partial:
            events = _without_output_counts(events)
        stall = self.faults.stall_from
        if stall is not None and number >= stall:
            await send_events(send, events[: len(events) // 2], end=False)
            self._note({"stalled": number})
            await anyio.sleep_forever()
        await send_events(send, events)

    def _record(self, path: str, body: dict[str, Any], raw: bytes) -> tuple[int, int]:
        """Log the call (with how many calls are in flight, itself included); return
        its 1-based number and the bytes it shares with the previous request."""
        with self._lock:
            self.calls.append((path, body))
            number = len(self.calls)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            cached = shared_prefix(self._previous, raw)
            self._note({"path": path, "body": body, "in_flight": self.in_flight})
            self._previous = raw
        return number, cached

    def _note(self, entry: dict[str, Any]) -> None:
        """Append `entry` to the calls log, when there is one."""
        if self.log_path is not None:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")

    async def _refused(self, send: Send, number: int) -> bool:
        """Answer call `number` with its injected fault, if it has one (a hang never
        returns); whether it did."""
        faults = self.faults
        if faults.hang_from is not None and number >= faults.hang_from:
            await anyio.sleep_forever()
        if faults.auth_fail_from is not None and number >= faults.auth_fail_from:
            await self._json(
                send, 401, {"error": {"message": "invalid api key", "type": "authentication_error"}}
            )
            return True
        if faults.quota_from is not None and number >= faults.quota_from:
            await self._json(
                send,
                429,
                {"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}},
            )
            return True
        if number <= faults.rate_limit_first:
            await self._json(
                send,
                429,
                {"error": {"message": "slow down"}},
                [(b"retry-after", faults.retry_after.encode())],
            )
            return True
        return False

    def _answer(
        self, path: str, body: dict[str, Any], raw: bytes, cached: int
    ) -> tuple[str, dict[str, Any] | None, Usage, bool]:
        """The scripted reply to `body`: (text, tool call arguments or None, usage,
        whether an Anthropic request reads and writes the cache)."""
        text, tool = self.reply(path, body)
        cap = output_cap(path, body)
        if tool is None and self.faults.ignore_output_cap:
            text = (text + " ") * (3 * cap * 4 // (len(text) + 1) + 1)
        elif tool is None and tokens(len(text)) > cap:
            text = text[: cap * 4]  # the cap honoured: the reply stops at it
        # Anthropic caches only up to explicit cache_control breakpoints: an unmarked
        # request neither reads nor writes the cache.
        anthropic_cache = path.endswith("/messages") and b'"cache_control"' in raw
        usage = Usage(
            tokens(len(raw)),
            cached // 4 if anthropic_cache or not path.endswith("/messages") else 0,
            tokens(len(text) + (len(json.dumps(tool)) if tool else 0)),
        )
        return text, tool, usage, anthropic_cache

    def _events(self, path: str, body: dict[str, Any], raw: bytes, cached: int) -> Events:
        """The scripted reply to `body`, as the stream of the format `path` names."""
        text, tool, usage, caching = self._answer(path, body, raw, cached)
        call = len(self.calls)
        if path.endswith("/chat/completions"):
            return chat_events(self.model, call, text, tool, usage)
        if path.endswith("/responses"):
            return responses_events(self.model, call, text, tool, usage)
        return anthropic_events(self.model, call, text, tool, usage, caching=caching)

    async def _document(
        self,
        send: Send,
        path: str,
        body: dict[str, Any],
        raw: bytes,
        cached: int,
        *,
        truncated: bool,
    ) -> None:
        """Answer a request that did not ask to stream: the reply as one JSON document of
        the format `path` names (`truncated`: only its first half, then the end)."""
        text, tool, usage, caching = self._answer(path, body, raw, cached)
        call = len(self.calls)
        if path.endswith("/chat/completions"):
            document = chat_completion(self.model, call, text, tool, usage)
        elif path.endswith("/responses"):
            document = responses_object(self.model, call, text, tool, usage)
        else:
            document = anthropic_message(self.model, call, text, tool, usage, caching=caching)
        encoded = json.dumps(document).encode()
        await send_json(send, 200, encoded[: len(encoded) // 2] if truncated else encoded)

    async def _json(
        self,
        send: Send,
        status: int,
        payload: dict[str, Any],
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        await send_json(send, status, json.dumps(payload).encode(), headers or [])


@contextmanager
def serve_in_thread(app: Any, *, unix: Path | None = None) -> Iterator[str]:
    """Serve `app` (a `WireServer` or any ASGI app) on 127.0.0.1 from a background
    thread (so blocking code in this thread, such as a runner with child processes, can
    call it); yield its base URL. `unix`: serve it on that Unix socket too."""
    from continuity.servers.asgi import serve_asgi

    ready: list[str] = []
    stop = threading.Event()

    async def run() -> None:
        async with serve_asgi(app, unix=unix) as url:
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
    """Serve until interrupted; 2 with one coded line on stderr for bad options or a
    port that cannot be bound."""
    try:
        args = parse_arguments(argv)
        sock = listening_socket(args.port)
    except UsageError as error:
        print(f"error {error}", file=sys.stderr)
        return 2
    app = WireServer(
        model=args.model,
        faults=Faults(
            hang_from=args.hang_from,
            stall_from=args.stall_from,
            ignore_output_cap=args.ignore_output_cap,
        ),
        log_path=args.calls_log,
        latency_ms=args.latency_ms,
        context_window=args.context_window,
    )

    checks = active_validators()  # built now, not on the first request

    async def run() -> None:
        from continuity.servers.asgi import serve_asgi

        async with serve_asgi(app, sock=sock) as url:
            # Both lines in one write: a caller may read the first and close the pipe,
            # and a second write would then fail (EPIPE) and stop the server.
            with contextlib.suppress(BrokenPipeError):
                sys.stdout.write(
                    f"listening {url}/v1\nvalidating requests with: {'; '.join(checks)}\n"
                )
                sys.stdout.flush()
            await anyio.sleep_forever()

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
