"""ConversationHistory over real MCP: in-process HTTP, standalone stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from continuity.errors import ToolError
from continuity.harness.toolbox import McpToolbox
from continuity.memory.retained import RetainedStore
from continuity.messages import ToolCallRequest
from continuity.servers.history import HISTORY_TOOL, INPUT_SCHEMA, serve_history

pytestmark = pytest.mark.anyio
LONG = "".join(f"Entry {i:05d}: the lighting board ships from Quayside.\n" for i in range(600))


@pytest.fixture
def store_path(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "retained.sqlite3"
    store = RetainedStore(path)
    store.retain_owner("Keep the side entrance for deliveries.", source="steer", entry_ref="e1")
    store.retain_tool_result(LONG, tool="document_open", tool_kind="document", entry_ref="e2")
    for index in range(7):
        store.retain_tool_result(
            f"Quayside board update {index}.",
            tool="chat_history",
            tool_kind="chat",
            entry_ref=f"e{index + 3}",
        )
    store.close()
    yield path


def _call(action: str, **arguments: object) -> ToolCallRequest:
    return ToolCallRequest("c", HISTORY_TOOL, {"action": action, **arguments})


async def test_search_pagination_and_cursor_traversal(store_path: Path) -> None:
    store = RetainedStore(store_path, readonly=True)
    try:
        async with serve_history(store) as url, McpToolbox(url) as toolbox:
            assert [(d.name, d.input_schema) for d in toolbox.definitions] == [
                (HISTORY_TOOL, INPUT_SCHEMA)
            ]
            seen: list[str] = []
            cursor = None
            while True:
                arguments: dict[str, object] = {"query": "Quayside board", "limit": 3}
                if cursor:
                    arguments["cursor"] = cursor
                page = json.loads(await toolbox.call(_call("search", **arguments)))
                seen += [hit["id"] for hit in page["hits"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert len(seen) == len(set(seen)) == 8
            long_id = next(i for i in seen if i == "tool-00002")
            text, cursor, pages = "", None, 0
            while True:
                arguments = {"id": long_id}
                if cursor:
                    arguments["cursor"] = cursor
                page = json.loads(await toolbox.call(_call("get", **arguments)))
                text += page["text"]
                pages += 1
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert text == LONG and len(LONG.encode()) > 16 * 1024 and pages >= 4
            for bad, code in (
                (_call("get", id="tool-77777"), "history_record_unknown"),
                (_call("search", query="x", limit=50), "history_invalid_request"),
                (_call("teleport"), "history_invalid_request"),
                (_call("get", id="c2", cursor="bogus"), "history_cursor_invalid"),
                (
                    ToolCallRequest("c", HISTORY_TOOL, {"action": "get", "id": "c1", "x": 1}),
                    "history_invalid_request",
                ),
            ):
                with pytest.raises(ToolError) as err:
                    await toolbox.call(bad)
                assert err.value.code == "tool_call_failed" and code in err.value.message
    finally:
        store.close()


async def test_standalone_over_stdio(store_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "continuity.servers.history", "--store", str(store_path)],
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        assert [t.name for t in tools.tools] == [HISTORY_TOOL]
        result = await session.call_tool(
            HISTORY_TOOL, {"action": "search", "query": "side entrance"}
        )
        hits = json.loads(result.content[0].text)["hits"]  # type: ignore[union-attr]
        assert hits[0]["kind"] == "owner" and hits[0]["source"] == "steer"


async def test_standalone_over_http_given_a_workspace_directory(store_path: Path) -> None:
    # A checkpoint workspace keeps its store at continuity/retained.sqlite3.
    workspace = store_path.parent / "workspace"
    (workspace / "continuity").mkdir(parents=True)
    store_path.rename(workspace / "continuity" / "retained.sqlite3")
    proc = subprocess.Popen(
        [sys.executable, "-m", "continuity.servers.history", "--store", str(workspace), "--http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        assert url.startswith("http://127.0.0.1:")
        async with McpToolbox(url) as toolbox:
            page = json.loads(await toolbox.call(_call("get", id="c1")))
            assert page["text"] == "Keep the side entrance for deliveries."
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def test_standalone_refuses_a_missing_store(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "continuity.servers.history",
            "--store",
            str(tmp_path / "none.sqlite3"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "history_unavailable" in result.stderr


async def test_connecting_builds_no_tls_context(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The toolbox's HTTP clients share the TLS context built when the module was
    imported: connecting (three times) loads no certificate store."""
    import ssl

    built: list[object] = []
    real = ssl.create_default_context

    def counting(*args: object, **kwargs: object) -> ssl.SSLContext:
        built.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    store = RetainedStore(store_path, readonly=True)
    try:
        async with serve_history(store) as url:
            for _ in range(3):
                async with McpToolbox(url) as toolbox:
                    assert toolbox.definitions
    finally:
        store.close()
    assert built == []
