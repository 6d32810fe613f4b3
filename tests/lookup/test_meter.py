"""The metering forwarding proxy over a real ConversationHistory server, on loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import mcp_types as types
import pytest

from continuity.errors import ToolError
from continuity.harness.toolbox import McpToolbox
from continuity.lookup.meter import Meter, content_bytes, metered_history
from continuity.memory.retained import RetainedStore
from continuity.servers.history import INPUT_SCHEMA, serve_history

pytestmark = pytest.mark.anyio

RECORD = "The spare key sits under the blue pot by the shed door. " * 300  # ~17 KB


@asynccontextmanager
async def proxied(
    tmp_path: Path, calls: int = 8, budget: int = 126_976
) -> AsyncIterator[tuple[str, Meter, RetainedStore]]:
    store = RetainedStore(tmp_path / "retained.sqlite3")
    for index in range(12):
        store.retain_tool_result(
            f"record {index}: " + RECORD, tool="mail", tool_kind="email", entry_ref=f"e{index}"
        )
    async with (
        serve_history(store) as upstream,
        metered_history(upstream, calls=calls, budget_bytes=budget) as (url, meter),
    ):
        yield url, meter, store


async def test_identity_listing_and_schema_are_preserved(tmp_path: Path) -> None:
    async with proxied(tmp_path) as (url, _, _), McpToolbox(url) as client:
        assert client.server_name == "continuity-conversation-history"
        assert [d.name for d in client.definitions] == ["ConversationHistory"]
        assert client.definitions[0].input_schema == INPUT_SCHEMA
        assert "/mcp" in url and len(url.split("/")[3]) == 36  # an unguessable uuid4 path


async def test_wrong_host_and_wrong_path_fail_closed(tmp_path: Path) -> None:
    async with proxied(tmp_path) as (url, meter, _), httpx.AsyncClient() as http:
        host = url.split("/")[2]
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        wrong_host = await http.post(url, json=body, headers={"host": "evil.example"})
        assert wrong_host.status_code == 421
        rebinding = await http.post(url, json=body, headers={"host": f"localhost:{host[10:]}"})
        assert rebinding.status_code == 421
        wrong_path = await http.post(f"http://{host}/mcp", json=body)
        assert wrong_path.status_code == 404
        other = await http.post(url.replace("/mcp", "/other"), json=body)
        assert other.status_code == 404
        assert meter.state().calls == 0


async def test_unlisted_endpoint_is_refused(tmp_path: Path) -> None:
    async with proxied(tmp_path) as (url, meter, _), McpToolbox(url) as client:
        result = await client.call_raw("SessionHistory", {"action": "search", "query": "key"})
        assert result.is_error
        assert "lookup_endpoint_refused" in result.content[0].text  # type: ignore[union-attr]
        assert meter.state().calls == 0


async def test_the_ninth_call_is_refused_before_dispatch(tmp_path: Path) -> None:
    async with proxied(tmp_path, budget=10**6) as (url, meter, _), McpToolbox(url) as client:
        for _ in range(8):
            result = await client.call_raw(
                "ConversationHistory", {"action": "search", "query": "spare key"}
            )
            assert not result.is_error
        ninth = await client.call_raw(
            "ConversationHistory", {"action": "search", "query": "spare key"}
        )
    assert ninth.is_error
    text = ninth.content[0].text  # type: ignore[union-attr]
    assert text.startswith("lookup_budget_exhausted: calls")
    state = meter.state()
    assert state.calls == 8 and state.refused_calls == 1 and state.exhausted == "calls"


async def test_an_over_budget_response_is_withheld_whole(tmp_path: Path) -> None:
    async with proxied(tmp_path, budget=12_000) as (url, meter, _), McpToolbox(url) as client:
        first = await client.call_raw("ConversationHistory", {"action": "get", "id": "c1"})
        size = content_bytes(first)
        second = await client.call_raw("ConversationHistory", {"action": "get", "id": "c2"})
        after = await client.call_raw("ConversationHistory", {"action": "get", "id": "c3"})
    assert not first.is_error and size > 8_000
    assert second.is_error and after.is_error
    text = second.content[0].text  # type: ignore[union-attr]
    assert text.startswith("lookup_budget_exhausted: bytes (response withheld whole")
    assert "record 1:" not in text  # nothing of the withheld page leaks
    state = meter.state()
    assert state.bytes == size and state.withheld == 1 and state.exhausted == "bytes"
    assert state.calls == 2  # the withheld call was dispatched; the third was refused
    assert state.refused_calls == 1


async def test_parallel_calls_never_exceed_the_budget(tmp_path: Path) -> None:
    async with proxied(tmp_path, calls=5, budget=10**6) as (url, meter, _):
        results: list[types.CallToolResult] = []

        async def one(index: int) -> None:
            async with McpToolbox(url) as client:
                results.append(
                    await client.call_raw(
                        "ConversationHistory", {"action": "get", "id": f"c{index % 12 + 1}"}
                    )
                )

        async with anyio.create_task_group() as group:
            for index in range(16):
                group.start_soon(one, index)
    assert sum(1 for r in results if not r.is_error) == 5
    assert meter.state().calls == 5 and meter.state().refused_calls == 11


def test_content_bytes_is_json_stringify_of_the_content_array() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text='é "q"\n')])
    expected = json.dumps(
        [{"type": "text", "text": 'é "q"\n'}], separators=(",", ":"), ensure_ascii=False
    ).encode()
    assert content_bytes(result) == len(expected)


def test_meter_is_thread_safe_and_counts() -> None:
    meter = Meter(2, 100)
    assert meter.reserve() is None and meter.reserve() is None
    assert meter.reserve() == "calls"
    assert meter.charge(60) is None and meter.charge(41) == "bytes"
    state = meter.state()
    assert state.responses == [60] and state.withheld == 1


async def test_a_tool_error_through_the_proxy_is_typed(tmp_path: Path) -> None:
    async with proxied(tmp_path) as (url, _, _), McpToolbox(url) as client:
        from continuity.messages import ToolCallRequest

        with pytest.raises(ToolError) as caught:
            await client.call(
                ToolCallRequest("x", "ConversationHistory", {"action": "get", "id": "nope"})
            )
    assert caught.value.code == "tool_call_failed"
