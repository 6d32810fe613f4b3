"""ConversationHistory in a process of its own that witnesses its calls, for fault
qualification (``python -m continuity.sampling.history_witness``).

The same MCP server as ``python -m continuity.servers.history --http`` (the retained
store, read-only, on an ephemeral 127.0.0.1 port; ``--delay-ms`` answers each call that
late), with every history call written to the ``--calls`` log as it happens, one synced
JSON line each: ``{"event": "started", "call": n}`` once the n-th ``tools/call``
request's body has arrived and before the server sees it, and ``{"event": "answered",
"call": n}`` just before its answer's last bytes are sent. A call the log shows started
and not answered was never answered: so ``doit qualify --case kill-history-server``
kills the server on the first ``started`` line and its receipt proves the call was in
flight (`continuity.qualify.faults.servers`). The lines carry no request content.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from continuity.errors import HistoryError
from continuity.memory.retained import RetainedStore

__all__ = ["CallWitness", "main", "read_calls"]

_CALL_METHOD = "tools/call"


def _is_call(body: bytes) -> bool:
    """Whether a JSON-RPC request body (one message or a batch) calls a tool."""
    try:
        found: Any = json.loads(body)
    except ValueError:
        return False
    messages = found if isinstance(found, list) else [found]
    return any(isinstance(m, dict) and m.get("method") == _CALL_METHOD for m in messages)


class CallWitness:
    """An ASGI app around `app` that logs each history call to `log` (module doc)."""

    def __init__(self, app: Any, log: Path) -> None:
        self.app, self.log = app, log
        self.calls = 0

    def _write(self, event: str, call: int) -> None:
        line = json.dumps({"event": event, "call": call}).encode() + b"\n"
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)  # a kill right after this line cannot take it back
        finally:
            os.close(fd)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        from continuity.servers.asgi import read_body

        read = await read_body(receive)
        body = read if read is not None else b""  # over the limit: passed on as empty
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> dict[str, Any]:
            return pending.pop() if pending else dict(await receive())

        if not _is_call(body):
            await self.app(scope, replay, send)
            return
        self.calls += 1
        call = self.calls
        self._write("started", call)

        async def witnessed(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self._write("answered", call)  # before the bytes leave: never after
            await send(message)

        await self.app(scope, replay, witnessed)


def read_calls(log: Path) -> dict[int, set[str]]:
    """Each call's events so far (call number -> {"started", "answered"}); a missing log
    is no call, and a line cut short by a kill is skipped."""
    try:
        text = log.read_text()
    except OSError:
        return {}
    calls: dict[int, set[str]] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("call"), int):
            calls.setdefault(entry["call"], set()).add(str(entry.get("event")))
    return calls


async def _serve(store: RetainedStore, delay_s: float, log: Path) -> None:
    from continuity.servers.asgi import serve_asgi
    from continuity.servers.history import ensure_available, history_server

    ensure_available(store)
    server = history_server(store, delay_s=delay_s)
    app = server.streamable_http_app(host="127.0.0.1", json_response=True)
    async with serve_asgi(CallWitness(app, log)) as base:
        print(f"listening {base}/mcp", flush=True)
        await anyio.sleep_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m continuity.sampling.history_witness")
    parser.add_argument("--store", type=Path, required=True, help="retained.sqlite3")
    parser.add_argument("--calls", type=Path, required=True, help="the call log (JSON lines)")
    parser.add_argument(
        "--delay-ms", type=int, default=0, help="answer each call after this many milliseconds"
    )
    args = parser.parse_args(argv)
    try:
        store = RetainedStore(args.store, readonly=True)
    except HistoryError as exc:
        print(f"error {exc}", file=sys.stderr)
        return 2
    anyio.run(_serve, store, args.delay_ms / 1000, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
