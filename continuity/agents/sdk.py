"""The Python side of CAP/0: implement `AgentAdapter`, then ``serve_stdio(adapter)``.

`serve_stdio` reads one JSON-RPC request per line from stdin and answers each on
stdout; requests run concurrently, so a ``turn/steer`` reaches the adapter while its
``turn/run`` is still pending. An exception raised by the adapter becomes a JSON-RPC
error (code -32000) carrying its message; an adapter without `steer` answers
``turn/steer`` with method-not-found (-32601). ``shutdown`` is answered after the
adapter's `shutdown` returns, and then the loop ends. Anything the adapter wants to log
goes to stderr: stdout is the protocol's.
"""

from __future__ import annotations

import os
import sys
from typing import Any, BinaryIO, Protocol

import anyio
import msgspec

from continuity.agents.protocol import (
    AgentInfo,
    InitParams,
    McpServer,
    SteerResult,
    TurnResult,
    decode_line,
    encode,
)
from continuity.errors import AdapterError

__all__ = ["AgentAdapter", "serve_stdio"]


class AgentAdapter(Protocol):
    async def initialize(self, params: InitParams) -> AgentInfo: ...
    async def open_session(self, key: str) -> str: ...
    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> TurnResult: ...

    # async def steer(self, session_id, turn_id, steer_id, text) -> SteerResult: required
    # when the capabilities declare steer "injected" or "queued" (answer with the delivery)
    # optional: async def shutdown(self) -> None (persist and return; the process then ends)
    # async def compact(self, session_id) -> bool: required with compaction "manual"
    #   (compact the session's context now, with the agent's own mechanism)
    # async def switch_model(self, session_id, model) -> None: required with model_switch
    # async def inject(self, session_id, text) -> None: required with context_inject
    # open_session(key, mcp_servers) with session_tools: the session's extra servers


_NO_METHOD = object()  # what `_dispatch` returns for a method the adapter lacks


async def _dispatch(adapter: Any, method: str, params: dict[str, Any]) -> Any:
    if method == "initialize":
        return await adapter.initialize(msgspec.convert(params, InitParams))
    if method == "session/open":
        servers = params.get("mcp_servers")
        if servers:  # session_tools: the new session's extra MCP servers
            extra = msgspec.convert(servers, list[McpServer])
            return {"session_id": await adapter.open_session(str(params["key"]), extra)}
        return {"session_id": await adapter.open_session(str(params["key"]))}
    if method == "turn/run":
        turn = (params["session_id"], params["turn_id"], params["text"], params.get("at", ""))
        result: TurnResult = await adapter.run_turn(*turn)
        return result
    if method == "turn/steer" and hasattr(adapter, "steer"):
        steer = (params["session_id"], params["turn_id"], params["steer_id"], params["text"])
        delivery: SteerResult = await adapter.steer(*steer)
        return delivery
    if method == "session/compact" and hasattr(adapter, "compact"):
        return {"compacted": bool(await adapter.compact(str(params["session_id"])))}
    if method == "session/switch_model" and hasattr(adapter, "switch_model"):
        await adapter.switch_model(str(params["session_id"]), str(params["model"]))
        return {}
    if method == "context/inject" and hasattr(adapter, "inject"):
        await adapter.inject(str(params["session_id"]), str(params["text"]))
        return {}
    if method == "shutdown":  # optional: an adapter that saves as it goes needs none
        if hasattr(adapter, "shutdown"):
            await adapter.shutdown()
        return {}
    return _NO_METHOD


async def serve_stdio(
    adapter: AgentAdapter, *, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve `adapter` over CAP/0 until ``shutdown`` or the end of stdin. The protocol
    keeps its own copy of stdout; anything the agent prints goes to stderr instead."""
    if stdout is None:
        sys.stdout.flush()
        stdout = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)  # a write to fd 1 lands in the log, not in the protocol
        sys.stdout = sys.stderr  # and so does a print() in agent code, unbuffered
    reader = anyio.wrap_file(stdin or sys.stdin.buffer)
    writer = anyio.wrap_file(stdout)
    lock = anyio.Lock()

    async def send(message: dict[str, Any]) -> None:
        async with lock:
            await writer.write(encode(message))
            await writer.flush()

    async def handle(message: dict[str, Any], done: anyio.Event) -> None:
        ident, method = message.get("id"), str(message.get("method", ""))
        try:
            value = await _dispatch(adapter, method, message.get("params") or {})
        except Exception as exc:  # the adapter's own failure: reported, the loop goes on
            why = f"{type(exc).__name__}: {exc}"
            await send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32000, "message": why}})
            return
        if value is _NO_METHOD:
            await send(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
            )
            return
        await send({"jsonrpc": "2.0", "id": ident, "result": msgspec.to_builtins(value)})
        if method == "shutdown":
            done.set()

    done = anyio.Event()
    async with anyio.create_task_group() as group:

        async def read() -> None:
            async for line in reader:
                if not line.strip():
                    continue
                try:
                    message = decode_line(line)
                except AdapterError as error:
                    print(f"cap: {error}", file=sys.stderr)
                    continue
                group.start_soon(handle, message, done)
            done.set()

        group.start_soon(read)
        await done.wait()
        group.cancel_scope.cancel()
