"""Serve an ASGI app on 127.0.0.1 at an ephemeral port, inside the caller's event loop;
and the raw-ASGI pieces the loopback servers share (the lifespan handshake, reading a
request body, a JSON answer, a server-sent event stream)."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from continuity.interrupts import handles_signals

__all__ = [
    "MAX_BODY",
    "SHUTDOWN_GRACE_S",
    "Events",
    "Receive",
    "Send",
    "body_limited",
    "bound_socket",
    "lifespan",
    "read_body",
    "send_events",
    "send_json",
    "serve_asgi",
    "too_large",
    "unix_socket",
]

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Events = list[tuple[str, str]]  # (SSE event name, or "" for none; the data line)


async def lifespan(receive: Receive, send: Send) -> None:
    """Acknowledge startup and shutdown; return at shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


# The largest request body a loopback server reads (a chat request carrying a long
# conversation is a few MiB); a larger one is refused before it is decoded.
MAX_BODY = 32 * 1024 * 1024


async def read_body(receive: Receive, *, limit: int = MAX_BODY) -> bytes | None:
    """The request body, read in linear time; None as soon as it passes `limit` bytes
    (the rest is never read: the caller answers 413)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def too_large(limit: int = MAX_BODY) -> str:
    """What a 413 says: the body is over `limit`."""
    return f"the request body is over the {limit:,}-byte limit"


def body_limited(app: Any, limit: int = MAX_BODY) -> Any:
    """`app` behind `read_body`'s limit: an HTTP request's body is read (linear, at most
    `limit` bytes) before `app` sees it, and a larger one is a 413 that `app` never
    sees. For apps that read bodies unbounded themselves (the MCP SDK's)."""

    async def limited(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body = await read_body(receive, limit=limit)
        if body is None:
            error = {"error": {"code": "request_too_large", "message": too_large(limit)}}
            await send_json(send, 413, json.dumps(error).encode())
            return
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> dict[str, Any]:
            return pending.pop() if pending else dict(await receive())

        await app(scope, replay, send)

    return limited


async def send_events(send: Send, events: Events, *, end: bool = True) -> None:
    """Send `events` as a server-sent event stream (left open unless `end`)."""
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
    for event, data in events:
        chunk = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
        await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
    if end:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def send_json(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Send `body` (JSON) with `status` and any extra `headers`, in one body message."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": body})


def bound_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on `host` at `port` (0: a port chosen by the kernel).
    Raises OSError when it cannot be bound (the socket is closed first)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY on Linux; without it a response written
    # as headers then body waits ~40 ms for the client's delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _quiet_shutdown(record: logging.LogRecord) -> bool:
    """Drop uvicorn's note about a streaming response cut off by our own shutdown (an
    MCP session's idle event stream when a loopback server closes): noise, not an error."""
    return "ASGI callable returned without completing response" not in record.getMessage()


_log = logging.getLogger("uvicorn.error")
_log.addFilter(_quiet_shutdown)

# How often the loopback server looks at draining connections, and at `started`.
# uvicorn polls every 100 ms and sleeps a fixed 100 ms on shutdown: about 150 ms idle
# per server, paid once per tool sample. A 1 ms poll costs microseconds of CPU.
_POLL_S = 0.001
# uvicorn's own tick: `on_tick` refreshes the Date header every tenth call.
_TICK_S = 0.1
# How long a stopping server lets in-flight requests finish before it cancels them.
# uvicorn's default waits forever: a handler that never returns (a hung or stalled
# call, its client long gone) would keep the server, and whoever stops it, waiting.
SHUTDOWN_GRACE_S = 1  # seconds (uvicorn takes a whole number)


class _LoopbackServer(uvicorn.Server):
    """uvicorn's server, minus its signal handling inside a doit command, and minus its
    fixed shutdown waits.

    Signals: uvicorn swaps in its own SIGINT/SIGTERM handlers while it serves (a
    graceful shutdown, then the signal raised again from inside its task), which would
    delay and garble the command's interrupt (`continuity.interrupts`).

    Waits: uvicorn notices `should_exit` on a 100 ms tick, then sleeps 100 ms after
    asking connections to close and polls their draining every 100 ms. Here `stop` wakes
    the main loop at once (an event, no polling while it serves), the draining is polled
    every millisecond; `on_tick` (Date header,
    request limit) still runs every 100 ms, and the shutdown sequence is uvicorn's own:
    stop listening, shut connections down, wait for them and for background tasks
    (bounded by `timeout_graceful_shutdown`), then the lifespan shutdown.
    """

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if handles_signals():
            yield
            return
        with super().capture_signals():
            yield

    async def main_loop(self) -> None:
        """Run `on_tick` every 100 ms until asked to exit (`stop`), and leave at once when
        asked: no polling while the server just serves."""
        counter = 0
        should_exit = await self.on_tick(counter)
        next_tick = time.monotonic() + _TICK_S
        while not should_exit:
            with anyio.move_on_after(max(0.0, next_tick - time.monotonic())):
                await self._stop.wait()
            if self.should_exit:
                return
            if time.monotonic() >= next_tick:
                next_tick += _TICK_S
                counter = (counter + 1) % 864000
                should_exit = await self.on_tick(counter)

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._stop = anyio.Event()  # made in the server's own event loop
        await super().serve(sockets)

    def stop(self) -> None:
        """Ask the server to exit: `main_loop` wakes at once (the flag alone waits for
        the next tick)."""
        self.should_exit = True
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        _log.info("Shutting down")
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        # uvicorn sleeps a fixed 100 ms here; the drain below polls instead.
        with anyio.move_on_after(self.config.timeout_graceful_shutdown) as scope:
            await self._drain()
        if scope.cancelled_caught:
            _log.error(
                "Cancel %s running task(s), timeout graceful shutdown exceeded",
                len(self.server_state.tasks),
            )
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _drain(self) -> None:
        """Wait until the connections have closed and background tasks have finished."""
        while self.server_state.connections and not self.force_exit:
            await anyio.sleep(_POLL_S)
        while self.server_state.tasks and not self.force_exit:
            await anyio.sleep(_POLL_S)
        for server in self.servers:
            await server.wait_closed()


def unix_socket(path: Path) -> socket.socket:
    """A listening Unix socket at `path` (a sandboxed agent's way to a loopback server).
    Raises OSError when it cannot be bound (the socket is closed first)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


@asynccontextmanager
async def serve_asgi(
    app: Any,
    *,
    host: str = "127.0.0.1",
    sock: socket.socket | None = None,
    unix: Path | None = None,
) -> AsyncIterator[str]:
    """Run `app` with uvicorn until the block exits; yield its base URL. `sock`: an
    already bound listening socket (when the app must know its port up front); `unix`:
    a path to serve the same app on as a Unix socket too."""
    sock = sock or bound_socket(host)
    port = sock.getsockname()[1]
    listeners = [sock] if unix is None else [sock, unix_socket(unix)]
    # log_config=None: uvicorn must not reconfigure the process's logging.
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )
    server = _LoopbackServer(config)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, listeners)
            with anyio.fail_after(10):
                while not server.started:
                    await anyio.sleep(_POLL_S)
            try:
                yield f"http://{host}:{port}"
            finally:
                server.stop()
    finally:
        for listener in listeners:
            listener.close()
        if unix is not None:
            unix.unlink(missing_ok=True)
