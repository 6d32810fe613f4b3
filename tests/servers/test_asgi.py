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

from continuity.servers.asgi import serve_asgi

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
