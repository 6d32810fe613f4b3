"""The loopback ASGI server stops promptly and still runs the app's lifespan shutdown."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import anyio
import httpx
import pytest
from anyio._backends import _asyncio as anyio_asyncio

from continuity.servers.asgi import SHUTDOWN_GRACE_S, serve_asgi

pytestmark = pytest.mark.anyio


class _App:
    """A trivial ASGI app that records its lifespan events."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                self.events.append(message["type"])
                await send({"type": f"{message['type']}.complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def test_shutdown_never_waits_on_a_fixed_sleep_and_runs_the_lifespan_shutdown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No timing: every sleep the server takes while it serves and stops is recorded.
    uvicorn's stock server sleeps 100 ms per main-loop tick and a fixed 100 ms on
    shutdown; this one polls in milliseconds, and still runs the lifespan shutdown and
    closes a kept-alive connection."""
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, result: Any = None) -> Any:
        delays.append(delay)
        return await real_sleep(delay, result)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)  # uvicorn's stock waits
    monkeypatch.setattr(anyio_asyncio, "sleep", recording_sleep)  # anyio.sleep's
    async with httpx.AsyncClient() as client:
        app = _App()
        async with serve_asgi(app) as base:
            assert (await client.get(base + "/")).text == "ok"  # kept alive
        assert app.events == ["lifespan.startup", "lifespan.shutdown"]
    assert delays, "the recorder saw no sleep at all"
    assert max(delays) < 0.05, sorted(set(delays))


async def test_an_idle_server_does_not_poll_and_stops_without_an_error_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """While it only serves, the main loop waits on its stop event (uvicorn's on_tick
    every 100 ms, nothing between); stopping logs no error and no CancelledError."""
    delays: list[float] = []
    real_sleep = asyncio.sleep

    this_thread = threading.get_ident()

    async def recording_sleep(delay: float, result: Any = None) -> Any:
        if threading.get_ident() == this_thread:  # not a server another test left running
            delays.append(delay)
        return await real_sleep(delay, result)

    caplog.set_level(logging.DEBUG)
    async with httpx.AsyncClient() as client, serve_asgi(_App()) as base:
        assert (await client.get(base + "/")).text == "ok"
        monkeypatch.setattr(asyncio, "sleep", recording_sleep)
        monkeypatch.setattr(anyio_asyncio, "sleep", recording_sleep)
        with anyio.move_on_after(0.3):  # idle, without a sleep of the test's own
            await anyio.Event().wait()
        idle = len(delays)
    assert idle < 5, delays  # a 1 ms poll would have slept about 300 times
    problems = [
        r for r in caplog.records if r.levelno >= logging.ERROR or "CancelledError" in r.message
    ]
    assert problems == []


class _HangingApp(_App):
    """A handler that never answers, as a hung or stalled endpoint does."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await super().__call__(scope, receive, send)
            return
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


async def test_a_handler_that_never_returns_is_cancelled_after_the_grace() -> None:
    """A stopping server waits `SHUTDOWN_GRACE_S` for in-flight requests, then cancels
    them and still runs the lifespan shutdown. uvicorn's default waits forever, so a
    hung call (its client gone after its own timeout) kept the server, and whoever
    stopped it, waiting."""
    app = _HangingApp()
    with anyio.fail_after(SHUTDOWN_GRACE_S + 10):  # the stop must end (forever before)
        async with httpx.AsyncClient() as client, serve_asgi(app) as base:
            with pytest.raises(httpx.ReadTimeout):
                await client.get(base + "/", timeout=0.2)
    assert app.cancelled
    assert app.events == ["lifespan.startup", "lifespan.shutdown"]


def test_a_body_over_the_limit_is_413_and_never_reaches_the_app() -> None:
    """`body_limited` (the MCP fixture server's guard): the app sees a body within the
    limit whole, and never sees one over it."""
    from continuity.servers.asgi import body_limited

    seen: list[bytes] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    def run(chunks: list[bytes]) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []
        queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                 for i, c in enumerate(chunks)]  # fmt: skip

        async def receive() -> dict[str, Any]:
            return queue.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        anyio.run(body_limited(app, limit=10), {"type": "http"}, receive, send)
        return sent

    assert run([b"12345", b"67890"])[0]["status"] == 200 and seen == [b"1234567890"]
    over = run([b"12345", b"678901"])
    assert over[0]["status"] == 413 and b"request_too_large" in over[1]["body"]
    assert seen == [b"1234567890"]  # the app never saw the larger body
