"""The loopback ASGI server stops promptly and still runs the app's lifespan shutdown."""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx
import pytest

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


async def test_shutdown_is_prompt_and_runs_the_lifespan_shutdown() -> None:
    stops: list[float] = []
    async with httpx.AsyncClient() as client:
        for _ in range(5):
            app = _App()
            async with serve_asgi(app) as base:
                # A kept-alive connection the shutdown must close.
                assert (await client.get(base + "/")).text == "ok"
                start = time.perf_counter()
            stops.append(time.perf_counter() - start)
            assert app.events == ["lifespan.startup", "lifespan.shutdown"]
    # uvicorn's stock shutdown takes at least 100 ms (its fixed sleep) plus up to 100 ms
    # of main-loop tick.
    assert statistics.median(stops) < 0.080, stops
