"""The ConversationHistory MCP server over a retained evidence store.

One tool, ``ConversationHistory``, with two operations:

- ``{"action": "search", "query": "...", "limit": 5, "cursor": null}``: ranked hits
  (record id, packed id, kind, source, size, snippet) and a ``next_cursor`` for the next
  page;
- ``{"action": "get", "id": "tool-00031" | "c31", "cursor": null}``: one 8 KiB page of
  the record and a ``next_cursor`` until the end.

Each result is a JSON object, sent twice: as ``structured_content`` (validated by clients
against the tool's ``output_schema``, `OUTPUT_SCHEMA`: a search page or a record page) and
as the same JSON in text content, for clients older than structured output. The tool is
annotated ``readOnlyHint`` and ``idempotentHint`` (it never changes the store, and the same
call answers the same page) and ``openWorldHint: false`` (it only reads this conversation).
A request the store cannot answer is an MCP error result
whose text starts with its code (``history_invalid_request``, ``history_record_unknown``,
``history_cursor_invalid``, ``history_unavailable``). ``history_unavailable`` also answers
every call once the store's file is deleted, replaced or unreadable while serving; a store
that is missing or not a retained SQLite store at start is refused before serving
(standalone: one ``error history_unavailable: ...`` line on stderr, exit 2).

Standalone, for any MCP client::

    python -m continuity.servers.history --store PATH/retained.sqlite3           # stdio
    python -m continuity.servers.history --store PATH/retained.sqlite3 --http    # HTTP
    python -m continuity.servers.history --store WORKSPACE_OR_DIR                # a directory:
        its continuity/retained.sqlite3 (a checkpoint workspace) or retained.sqlite3
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import msgspec
from mcp.server.lowlevel.server import Server

from continuity.errors import HistoryError
from continuity.memory.retained import SEARCH_LIMIT_MAX, RetainedStore

__all__ = [
    "DESCRIPTION",
    "HISTORY_TOOL",
    "INPUT_SCHEMA",
    "OUTPUT_SCHEMA",
    "TOOL_ANNOTATIONS",
    "ensure_available",
    "history_in_thread",
    "history_server",
    "main",
    "serve_history",
]

HISTORY_TOOL = "ConversationHistory"
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["search", "get"],
            "description": "search the retained conversation, or get one record",
        },
        "query": {"type": "string", "description": "words to search for (search)"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": SEARCH_LIMIT_MAX,
            "description": "hits per page (search; default 5)",
        },
        "id": {"type": "string", "description": "a record id or packed id (get)"},
        "cursor": {"type": "string", "description": "next_cursor of the previous page"},
    },
    "required": ["action"],
    "additionalProperties": False,
}
_NEXT_CURSOR: dict[str, Any] = {
    # anyOf, not a type list: strict validators (Ajv, in JavaScript clients) warn on those
    "anyOf": [{"type": "string"}, {"type": "null"}],
    "description": "pass as cursor for the next page; null on the last page",
}
_RECORD_REF: dict[str, Any] = {
    "id": {"type": "string", "description": "record id (tool-NNNNN or owner-NNNNN)"},
    "packed_id": {"type": "string", "description": "the id the packed context used (cN)"},
    "kind": {"type": "string", "enum": ["owner", "tool"]},
    "source": {"type": "string", "description": "the tool or owner channel it came from"},
}
_SEARCH_PAGE: dict[str, Any] = {
    "type": "object",
    "title": "SearchPage",
    "properties": {
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    **_RECORD_REF,
                    "bytes": {"type": "integer", "minimum": 0},
                    "snippet": {"type": "string"},
                },
                "required": ["id", "packed_id", "kind", "source", "bytes", "snippet"],
                "additionalProperties": False,
            },
        },
        "next_cursor": _NEXT_CURSOR,
    },
    "required": ["hits", "next_cursor"],
    "additionalProperties": False,
}
_RECORD_PAGE: dict[str, Any] = {
    "type": "object",
    "title": "RecordPage",
    "properties": {
        **_RECORD_REF,
        "total_bytes": {"type": "integer", "minimum": 0},
        "offset": {"type": "integer", "minimum": 0, "description": "byte offset of text"},
        "text": {"type": "string", "description": "one page (at most 8 KiB) of the record"},
        "next_cursor": _NEXT_CURSOR,
    },
    "required": [
        "id",
        "packed_id",
        "kind",
        "source",
        "total_bytes",
        "offset",
        "text",
        "next_cursor",
    ],
    "additionalProperties": False,
}
# Self-contained (no $ref): clients validate structured_content against it as is. The root
# is an object, as the 2025-11-25 protocol requires; oneOf tells the two answers apart.
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "action=search answers a SearchPage; action=get answers a RecordPage",
    "oneOf": [_SEARCH_PAGE, _RECORD_PAGE],
}
TOOL_ANNOTATIONS = types.ToolAnnotations(
    title="Conversation history",
    read_only_hint=True,
    idempotent_hint=True,
    open_world_hint=False,
)
DESCRIPTION = (
    "Look up earlier parts of this conversation that may no longer be in context: owner "
    "messages and tool results (emails, chats, pages, documents, calendars, tracking). "
    "Use action=search with a query, then action=get with a result's id; follow "
    "next_cursor to page through long records."
)


def ensure_available(store: RetainedStore) -> None:
    """Raise `HistoryError` ``history_unavailable`` unless `store.path` still names the
    file the store opened (deleted, or replaced by another file, it does not: the open
    handle would go on answering from a file nobody can see)."""
    try:
        info = store.path.stat()
    except OSError as exc:
        raise HistoryError(
            f"the retained store is gone ({exc.strerror})",
            code="history_unavailable",
            location=str(store.path),
        ) from None
    if (info.st_dev, info.st_ino) != store.identity:
        raise HistoryError(
            "the retained store was replaced while serving",
            code="history_unavailable",
            location=str(store.path),
        )


def _answer(store: RetainedStore, arguments: dict[str, Any]) -> types.CallToolResult:
    try:
        ensure_available(store)
        unknown = set(arguments) - set(INPUT_SCHEMA["properties"])
        if unknown:
            raise HistoryError(f"unknown arguments {sorted(unknown)}", location="arguments")
        action = arguments.get("action")
        cursor = arguments.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise HistoryError("cursor must be a string", location="cursor")
        if action == "search":
            query = arguments.get("query")
            limit = arguments.get("limit", 5)
            if not isinstance(query, str) or not isinstance(limit, int) or isinstance(limit, bool):
                raise HistoryError(
                    "search needs a string query and an integer limit", location="query"
                )
            payload: Any = store.search(query, limit=limit, cursor=cursor)
        elif action == "get":
            record = arguments.get("id")
            if not isinstance(record, str):
                raise HistoryError("get needs an id", location="id")
            payload = store.get(record, cursor=cursor)
        else:
            raise HistoryError("action must be search or get", location="action")
    except HistoryError as exc:
        return _error(exc)
    except sqlite3.Error as exc:  # the file broke under the open handle
        return _error(
            HistoryError(
                f"the retained store cannot be read ({exc})",
                code="history_unavailable",
                location=str(store.path),
            )
        )
    structured: dict[str, Any] = msgspec.to_builtins(payload)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=msgspec.json.encode(payload).decode())],
        structured_content=structured,
    )


def _error(exc: HistoryError) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=str(exc))], is_error=True
    )


def history_server(store: RetainedStore, *, delay_s: float = 0.0) -> Server[Any]:
    """A low-level MCP server exposing `store` as the ConversationHistory tool; each call
    is answered after `delay_s` seconds (a fault-qualification knob, like the fixture
    tool server's ``--delay-ms``)."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=HISTORY_TOOL,
                    description=DESCRIPTION,
                    input_schema=INPUT_SCHEMA,
                    output_schema=OUTPUT_SCHEMA,
                    annotations=TOOL_ANNOTATIONS,
                )
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != HISTORY_TOOL:
            return types.CallToolResult(
                content=[
                    types.TextContent(
                        type="text", text=f"history_invalid_request: no tool {params.name}"
                    )
                ],
                is_error=True,
            )
        if delay_s:
            await anyio.sleep(delay_s)
        return _answer(store, dict(params.arguments or {}))

    return Server(
        "continuity-conversation-history",
        version="1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


@asynccontextmanager
async def serve_history(store: RetainedStore, *, delay_s: float = 0.0) -> AsyncIterator[str]:
    """Serve ConversationHistory on 127.0.0.1 at an ephemeral port; yield the MCP URL.

    Raises:
        HistoryError: ``history_unavailable`` when the store's file is gone or replaced
            before serving starts (a store that fails later answers each call with it).
    """
    from continuity.servers.asgi import serve_asgi

    ensure_available(store)
    server = history_server(store, delay_s=delay_s)
    app = server.streamable_http_app(host="127.0.0.1", json_response=True)
    async with serve_asgi(app) as base:
        yield base + "/mcp"


@contextmanager
def history_in_thread(store: RetainedStore) -> Iterator[str]:
    """Serve ConversationHistory over `store` on 127.0.0.1 from a background thread
    (`continuity.servers.wire.serve_in_thread`), for blocking callers; yield the MCP URL.
    The caller keeps `store` open while it is served."""
    from continuity.servers.wire import serve_in_thread

    app = history_server(store).streamable_http_app(host="127.0.0.1", json_response=True)
    with serve_in_thread(app) as base:
        yield base + "/mcp"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m continuity.servers.history")
    parser.add_argument(
        "--store",
        type=Path,
        required=True,
        help="a retained evidence store (retained.sqlite3), or a directory holding one "
        "(a checkpoint workspace: continuity/retained.sqlite3)",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on loopback")
    parser.add_argument(
        "--delay-ms", type=int, default=0, help="answer each call after this many milliseconds"
    )
    args = parser.parse_args(argv)
    path: Path = args.store
    if path.is_dir():
        nested = path / "continuity" / "retained.sqlite3"
        path = nested if nested.exists() else path / "retained.sqlite3"
    try:
        store = RetainedStore(path, readonly=True)
    except HistoryError as exc:
        print(f"error {exc}", file=sys.stderr)
        return 2
    server = history_server(store)

    async def run() -> None:
        if args.http:
            async with serve_history(store, delay_s=args.delay_ms / 1000) as url:
                print(f"listening {url}", flush=True)
                await anyio.sleep_forever()
        else:
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
