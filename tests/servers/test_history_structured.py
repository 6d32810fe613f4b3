"""ConversationHistory's structured output and annotations, over real MCP sessions.

The standalone stdio command is the one the README gives the MCP Inspector CLI; the HTTP
server is the one the harness connects to.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from continuity.memory.retained import RetainedStore
from continuity.servers.history import HISTORY_TOOL, OUTPUT_SCHEMA, serve_history

pytestmark = pytest.mark.anyio
LONG = "".join(f"Line {i:04d}: the marquee lamps arrive on Thursday.\n" for i in range(400))


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "retained.sqlite3"
    store = RetainedStore(path)
    store.retain_owner("Book the rehearsal room for Friday.", source="steer", entry_ref="e1")
    store.retain_tool_result(LONG, tool="document_open", tool_kind="document", entry_ref="e2")
    for index in range(4):
        store.retain_tool_result(
            f"Marquee lamps update {index}.",
            tool="chat_history",
            tool_kind="chat",
            entry_ref=f"e{index + 3}",
        )
    store.close()
    return path


def _structured(result: types.CallToolResult) -> dict[str, Any]:
    """The structured content, after checking it against the schema and the text twin."""
    assert not result.is_error
    assert result.structured_content is not None
    jsonschema.validate(result.structured_content, OUTPUT_SCHEMA)
    [text] = result.content
    assert isinstance(text, types.TextContent)
    assert json.loads(text.text) == result.structured_content
    structured: dict[str, Any] = result.structured_content
    return structured


async def _exercise(session: ClientSession) -> None:
    listed = await session.list_tools()
    [tool] = listed.tools
    assert tool.name == HISTORY_TOOL
    assert tool.output_schema == OUTPUT_SCHEMA
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.idempotent_hint is True
    assert tool.annotations.open_world_hint is False
    assert tool.annotations.destructive_hint is None  # meaningless for a read-only tool
    page = _structured(
        await session.call_tool(
            HISTORY_TOOL, {"action": "search", "query": "marquee lamps", "limit": 2}
        )
    )
    assert len(page["hits"]) == 2 and page["next_cursor"] is not None
    assert {hit["kind"] for hit in page["hits"]} == {"tool"}
    record = _structured(
        await session.call_tool(HISTORY_TOOL, {"action": "get", "id": "tool-00002"})
    )
    assert record["offset"] == 0 and record["total_bytes"] == len(LONG.encode())
    assert LONG.startswith(record["text"]) and record["next_cursor"] is not None
    # Idempotent: the same call answers the same page.
    again = _structured(
        await session.call_tool(HISTORY_TOOL, {"action": "get", "id": "tool-00002"})
    )
    assert again == record
    # An error stays a plain text error result, with no structured content to validate.
    failed = await session.call_tool(HISTORY_TOOL, {"action": "get", "id": "tool-09999"})
    assert failed.is_error and failed.structured_content is None
    [text] = failed.content
    assert isinstance(text, types.TextContent) and text.text.startswith("history_record_unknown")


async def test_stdio_lists_schema_and_annotations_and_answers_structured(store_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "continuity.servers.history", "--store", str(store_path)],
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await _exercise(session)


async def test_http_answers_structured(store_path: Path) -> None:
    store = RetainedStore(store_path, readonly=True)
    try:
        async with (
            serve_history(store) as url,
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await _exercise(session)
    finally:
        store.close()


def test_output_schema_rejects_a_page_of_neither_shape() -> None:
    """The schema is not vacuous: a mixed or incomplete page fails it."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"hits": [], "next_cursor": None, "text": "x"}, OUTPUT_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": "tool-00001", "text": "x", "next_cursor": None}, OUTPUT_SCHEMA)
    jsonschema.validate({"hits": [], "next_cursor": None}, OUTPUT_SCHEMA)


# The MCP Inspector CLI cannot pass a leading-dash argument (``-m``, ``--store``) to a
# stdio server on its command line, so the README gives it this server entry
# (``--config mcp.json --server conversation-history``); this test starts that entry.
INSPECTOR_CONFIG = """{
  "mcpServers": {
    "conversation-history": {
      "type": "stdio",
      "command": "python3",
      "args": ["-m", "continuity.servers.history", "--store", "WORKSPACE"]
    }
  }
}"""


async def test_the_inspector_config_entry_starts_the_server(store_path: Path) -> None:
    workspace = store_path.parent / "workspace"
    (workspace / "continuity").mkdir(parents=True)
    store_path.rename(workspace / "continuity" / "retained.sqlite3")
    config = json.loads(INSPECTOR_CONFIG.replace("WORKSPACE", str(workspace)))
    entry = config["mcpServers"]["conversation-history"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await _exercise(session)
