"""The metering forwarding server in front of ConversationHistory (lookup mode).

Every lookup probe gets a fresh `Meter` with the policy's call and byte budgets (8 calls
and 126,976 bytes by default), never pooled across arms or probes. The proxy:

- preserves the upstream server's identity (name and version), its tool listing and
  schemas, and forwards calls to it over MCP;
- serves on an unguessable path (``/<uuid4>/mcp``) and answers only requests whose Host
  is exactly its own loopback address, with the SDK's DNS-rebinding protection on top;
  any other path or host fails closed (404/421), and only the ConversationHistory tool
  is forwarded;
- reserves a call atomically before dispatch (a call over the budget is never sent);
- charges the exact UTF-8 bytes of the result's JSON content array
  (``JSON.stringify(result.content)``, compact separators, structured content excluded)
  before delivery; a response that would cross the byte budget is withheld whole, never
  clipped, and the lookup is aborted with its cause.

Meter state is content-free (counts, sizes, the cause) and survives a failing probe.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings

from continuity.lookup.policy import LookupPolicy
from continuity.lookup.reader import HISTORY_TOOL
from continuity.lookup.state import Cause, MeterState

if TYPE_CHECKING:
    from continuity.harness.toolbox import McpToolbox

__all__ = ["Meter", "MeterState", "content_bytes", "metered_history"]


class Meter:
    """Thread-safe call reservation and byte charging for one probe."""

    def __init__(self, calls: int, budget_bytes: int) -> None:
        self.call_budget = calls
        self.byte_budget = budget_bytes
        self._lock = threading.Lock()
        self._calls = self._refused = self._bytes = self._withheld = 0
        self._responses: list[int] = []
        self._exhausted: Cause | None = None
        self._bytes_aborted = False

    def reserve(self) -> Cause | None:
        """Reserve one call before dispatch; the refusal cause, or None when reserved.
        After a byte abort every call is refused; past the call budget too."""
        with self._lock:
            cause: Cause | None = None
            if self._bytes_aborted:
                cause = "bytes"
            elif self._calls >= self.call_budget:
                cause = "calls"
            if cause is not None:
                self._exhausted = self._exhausted or cause
                self._refused += 1
                return cause
            self._calls += 1
            return None

    def charge(self, size: int) -> Cause | None:
        """Charge a reserved call's response before delivery; the withholding cause, or
        None. A response that would cross the byte budget aborts the lookup."""
        with self._lock:
            if not self._bytes_aborted and self._bytes + size > self.byte_budget:
                self._bytes_aborted = True
                self._exhausted = self._exhausted or "bytes"
            if self._bytes_aborted:
                self._withheld += 1
                return "bytes"
            self._bytes += size
            self._responses.append(size)
            return None

    def state(self) -> MeterState:
        with self._lock:
            return MeterState(
                self.call_budget,
                self.byte_budget,
                self._calls,
                self._refused,
                self._bytes,
                self._withheld,
                list(self._responses),
                self._exhausted,
            )


def content_bytes(result: types.CallToolResult) -> int:
    """UTF-8 bytes of ``JSON.stringify(result.content)`` (structured content excluded)."""
    items = [
        item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in result.content
    ]
    return len(json.dumps(items, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _refusal(meter: Meter, cause: Cause, what: str) -> types.CallToolResult:
    state = meter.state()
    text = (
        f"lookup_budget_exhausted: {cause} ({what}; {state.calls} of "
        f"{state.call_budget} calls, {state.bytes:,} of {state.byte_budget:,} bytes used)"
    )
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _proxy_server(upstream: McpToolbox, meter: Meter) -> Server[Any]:
    """A low-level MCP server that forwards ConversationHistory through `meter`."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        assert upstream.listing is not None
        return types.ListToolsResult(
            tools=[t for t in upstream.listing.tools if t.name == HISTORY_TOOL]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != HISTORY_TOOL:  # fail closed: nothing else is metered
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text=f"lookup_endpoint_refused: {params.name}")
                ],
                is_error=True,
            )
        cause = meter.reserve()
        if cause is not None:
            return _refusal(meter, cause, "call refused before dispatch")
        result = await upstream.call_raw(HISTORY_TOOL, dict(params.arguments or {}))
        cause = meter.charge(content_bytes(result))
        if cause is not None:
            return _refusal(meter, cause, "response withheld whole")
        return result

    return Server(
        upstream.server_name,
        version=upstream.server_version,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _guard(app: Callable[..., Awaitable[None]], host: str, path: str) -> Any:
    """Only `path` under exactly `host`; everything else fails closed."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        status = 0
        if headers.get("host") != host:
            status = 421
        elif scope.get("path") != path:
            status = 404
        if status:
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(b"content-type", b"text/plain")],
                }
            )
            await send({"type": "http.response.body", "body": b"lookup endpoint refused"})
            return
        await app(scope, receive, send)

    return guarded


@asynccontextmanager
async def metered_history(
    upstream_url: str,
    policy: LookupPolicy | None = None,
    *,
    calls: int | None = None,
    budget_bytes: int | None = None,
    unix: Path | None = None,
) -> AsyncIterator[tuple[str, Meter]]:
    """Serve a metered proxy of the ConversationHistory server at `upstream_url`; yield
    its URL (the only endpoint a lookup probe may use) and the probe's fresh meter.
    `unix`: serve it on that Unix socket too (a sandboxed outside agent's way in)."""
    from continuity.harness.toolbox import McpToolbox
    from continuity.servers.asgi import bound_socket, serve_asgi

    meter = Meter(
        calls if calls is not None else policy.calls if policy else 8,
        budget_bytes if budget_bytes is not None else policy.bytes if policy else 126_976,
    )
    async with McpToolbox(upstream_url) as upstream:
        sock = bound_socket()
        host = f"127.0.0.1:{sock.getsockname()[1]}"
        path = f"/{uuid.uuid4()}/mcp"
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[host],
            allowed_origins=[f"http://{host}"],
        )
        app = _proxy_server(upstream, meter).streamable_http_app(
            streamable_http_path=path, json_response=True, transport_security=security
        )
        async with serve_asgi(_guard(app, host, path), sock=sock, unix=unix) as base:
            yield base + path, meter
