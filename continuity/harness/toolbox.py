"""The harness's MCP client: real tool calls over streamable HTTP.

Transport failures, protocol errors and malformed results each end the run with a typed
`ToolError`: ``tool_server_unavailable`` (connection refused or closed, the server died,
a timeout), ``tool_response_malformed`` (a result that is not exactly text content, or
an unparsable message), ``tool_call_failed`` (the server reported an error).

The HTTP client's TLS context is built once, when this module is imported (the unit
worker imports it before it forks its probe children), and shared by every client: a
fresh client would otherwise load the certificate store again (about 28 ms) for a
plain-HTTP loopback address. Timeouts are the SDK's own defaults.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Callable

import anyio
import httpx2  # the MCP SDK's HTTP client library
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.exceptions import MCPError

from continuity.errors import ContinuityError, ToolError
from continuity.messages import ToolCallRequest, ToolDefinition

__all__ = ["TLS_CONTEXT", "McpToolbox", "http_client"]

_UNAVAILABLE = {types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT}
TLS_CONTEXT = ssl.create_default_context()  # once per process, inherited across fork


def http_client() -> httpx2.AsyncClient:
    """An MCP HTTP client with the SDK's default timeouts and the shared TLS context."""
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(timeout=timeout, verify=TLS_CONTEXT)


class McpToolbox:
    """An open MCP client session. Use as ``async with McpToolbox(url) as toolbox``."""

    def __init__(
        self,
        url: str,
        *,
        read_timeout: float = 30.0,
        on_call_started: Callable[[ToolCallRequest], None] | None = None,
    ) -> None:
        self.url = url
        self.read_timeout = read_timeout
        self.on_call_started = on_call_started
        self.definitions: tuple[ToolDefinition, ...] = ()
        self.calls = 0
        self.server_name = ""
        self.server_version = ""
        self.listing: types.ListToolsResult | None = None
        self._stack = contextlib.AsyncExitStack()
        self._session: ClientSession | None = None

    async def __aenter__(self) -> McpToolbox:
        try:
            client = await self._stack.enter_async_context(http_client())
            read, write = await self._stack.enter_async_context(
                streamable_http_client(self.url, http_client=client)
            )
            session = await self._stack.enter_async_context(
                ClientSession(read, write, read_timeout_seconds=self.read_timeout)
            )
            initialized = await session.initialize()
            listing = await session.list_tools()
        except BaseException as exc:  # the transport closes first; _close_after re-raises it
            await self._close_after(exc, "connecting")
            raise  # unreachable: _close_after always raises
        self._session = session
        self.server_name = initialized.server_info.name
        self.server_version = initialized.server_info.version or ""
        self.listing = listing
        self.definitions = tuple(
            ToolDefinition(
                name=t.name, description=t.description or "", input_schema=dict(t.input_schema)
            )
            for t in listing.tools
        )
        return self

    async def refresh(self) -> tuple[ToolDefinition, ...]:
        """List the server's tools again; they become `definitions`."""
        assert self._session is not None, "use McpToolbox as an async context manager"
        try:
            listing = await self._session.list_tools()
        except (MCPError, OSError) as exc:
            raise _mapped(exc, self.url, "listing tools") from None
        self.listing = listing
        self.definitions = tuple(
            ToolDefinition(
                name=t.name, description=t.description or "", input_schema=dict(t.input_schema)
            )
            for t in listing.tools
        )
        return self.definitions

    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        """Close the transport. If it failed underneath the body (the SDK then cancels
        the waiting request), raise that failure as a typed error; an exception raised
        by the body itself is left to propagate untouched."""
        try:
            await self._stack.aclose()
        except Exception as close_error:  # the SDK transport's errors are open-ended: _mapped
            if exc is None or isinstance(exc, anyio.get_cancelled_exc_class()):
                raise _mapped(close_error, self.url, "calling a tool") from None

    async def _close_after(self, exc: BaseException, doing: str) -> None:
        """Close the transport after `exc` and raise the most telling typed error.

        When the transport's own task group fails (connection refused, the server
        died), the SDK cancels the waiting request; the real cause only surfaces when
        the transport is closed, so it is mapped here instead of the cancellation.
        """
        try:
            await self._stack.aclose()
        except Exception as close_error:  # the SDK transport's errors are open-ended: _mapped
            if isinstance(exc, ContinuityError):
                raise exc from None
            raise _mapped(close_error, self.url, doing) from None
        if isinstance(exc, Exception) and not isinstance(exc, ContinuityError):
            raise _mapped(exc, self.url, doing) from None
        raise exc

    async def call_raw(self, name: str, arguments: dict[str, object]) -> types.CallToolResult:
        """Call a tool and return the MCP result as received (for forwarding)."""
        assert self._session is not None, "use McpToolbox as an async context manager"
        try:
            return await self._session.call_tool(name, arguments)
        except Exception as exc:  # the SDK transport's errors are open-ended: _mapped types them
            raise _mapped(exc, self.url, f"calling {name}") from None

    async def call(self, call: ToolCallRequest) -> str:
        """Call a tool and return its text. Raises `ToolError` (see the module doc)."""
        assert self._session is not None, "use McpToolbox as an async context manager"
        self.calls += 1
        if self.on_call_started is not None:
            self.on_call_started(call)
        try:
            result = await self._session.call_tool(call.name, call.arguments)
        except Exception as exc:  # cancellation (a BaseException) propagates untouched
            raise _mapped(exc, self.url, f"calling {call.name} ({call.call_id})") from None
        if result.is_error:
            raise ToolError(
                f"{call.name} failed: {_text_of(result)[:300]}",
                code="tool_call_failed",
                location=f"{self.url} {call.call_id}",
            )
        if not result.content or not all(
            isinstance(item, types.TextContent) for item in result.content
        ):
            kinds = sorted({type(item).__name__ for item in result.content})
            raise ToolError(
                f"{call.name} returned {kinds or 'no content'}, not text",
                code="tool_response_malformed",
                location=f"{self.url} {call.call_id}",
            )
        return _text_of(result)


def _text_of(result: types.CallToolResult) -> str:
    return "".join(item.text for item in result.content if isinstance(item, types.TextContent))


def _mapped(exc: Exception, url: str, doing: str) -> ToolError:
    leaf = _first_leaf(exc)
    if isinstance(leaf, MCPError):
        if leaf.code in _UNAVAILABLE:
            code = "tool_server_unavailable"
        elif leaf.code in (types.PARSE_ERROR, types.INVALID_REQUEST):
            code = "tool_response_malformed"
        else:
            code = "tool_call_failed"
        return ToolError(f"{doing}: {leaf.message}", code=code, location=url)
    name = type(leaf).__name__
    if name in ("ValidationError", "JSONDecodeError", "DecodeError"):
        return ToolError(
            f"{doing}: malformed MCP message ({leaf})", code="tool_response_malformed", location=url
        )
    return ToolError(f"{doing}: {name}: {leaf}", code="tool_server_unavailable", location=url)


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
