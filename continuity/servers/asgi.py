"""Serve an ASGI app on 127.0.0.1 at an ephemeral port, inside the caller's event loop."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import uvicorn

from continuity.interrupts import handles_signals

__all__ = ["bound_socket", "serve_asgi"]


def bound_socket(host: str = "127.0.0.1") -> socket.socket:
    """A listening TCP socket on `host` with a port chosen by the kernel."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY on Linux; without it a response written
    # as headers then body waits ~40 ms for the client's delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, 0))
    sock.listen(128)
    return sock


def _quiet_shutdown(record: logging.LogRecord) -> bool:
    """Drop uvicorn's note about a streaming response cut off by our own shutdown (an
    MCP session's idle event stream when a loopback server closes): noise, not an error."""
    return "ASGI callable returned without completing response" not in record.getMessage()


logging.getLogger("uvicorn.error").addFilter(_quiet_shutdown)


class _LoopbackServer(uvicorn.Server):
    """uvicorn's server, minus its signal handling inside a doit command: uvicorn swaps
    in its own SIGINT/SIGTERM handlers while it serves (a graceful shutdown, then the
    signal raised again from inside its task), which would delay and garble the
    command's interrupt (`continuity.interrupts`)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if handles_signals():
            yield
            return
        with super().capture_signals():
            yield


@asynccontextmanager
async def serve_asgi(
    app: Any, *, host: str = "127.0.0.1", sock: socket.socket | None = None
) -> AsyncIterator[str]:
    """Run `app` with uvicorn until the block exits; yield its base URL. `sock`: an
    already bound listening socket (when the app must know its port up front)."""
    sock = sock or bound_socket(host)
    port = sock.getsockname()[1]
    # log_config=None: uvicorn must not reconfigure the process's logging.
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="on"
    )
    server = _LoopbackServer(config)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [sock])
            with anyio.fail_after(10):
                while not server.started:
                    await anyio.sleep(0.005)
            try:
                yield f"http://{host}:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()
