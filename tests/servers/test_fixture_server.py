"""The MCP fixture tool server, through a real MCP client on loopback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from continuity.errors import ToolError
from continuity.harness.toolbox import McpToolbox
from continuity.messages import ToolCallRequest
from continuity.servers.fixture import FixtureToolServer, FrozenRecord, frozen_records
from continuity.traces.tools import TOOLS, input_schema
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS

pytestmark = pytest.mark.anyio

RECORDS = [
    FrozenRecord("r1", "email_search", {"query": "kiln order"}, "From: Dana\n\nYour order."),
    FrozenRecord("r2", "parcel_track", {"shipment": "shelves"}, "In transit at Ashford."),
]


async def test_lists_the_catalog_with_its_input_schemas() -> None:
    server = FixtureToolServer(RECORDS)
    async with server.running() as url, McpToolbox(url) as toolbox:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        listed = {d.name: d for d in toolbox.definitions}
        assert set(listed) == set(TOOLS)
        for name, spec in TOOLS.items():
            assert listed[name].input_schema == input_schema(spec)
            assert listed[name].description == spec.description


async def test_serves_records_in_order_and_logs_every_call() -> None:
    server = FixtureToolServer(RECORDS)
    async with server.running() as url, McpToolbox(url) as toolbox:
        first = await toolbox.call(ToolCallRequest("c1", "email_search", {"query": "kiln order"}))
        second = await toolbox.call(ToolCallRequest("c2", "parcel_track", {"shipment": "shelves"}))
        assert (first, second) == (RECORDS[0].output, RECORDS[1].output)
        assert server.served_all
        with pytest.raises(ToolError) as err:
            await toolbox.call(ToolCallRequest("c3", "web_fetch", {"url": "https://x.example/"}))
        assert err.value.code == "tool_call_failed"
    assert [(c.seq, c.tool, c.record_id, c.matched) for c in server.call_log] == [
        (1, "email_search", "r1", True),
        (2, "parcel_track", "r2", True),
        (3, "web_fetch", None, False),
    ]


async def test_a_call_out_of_order_or_with_bad_arguments_is_refused() -> None:
    server = FixtureToolServer(RECORDS)
    async with server.running() as url, McpToolbox(url) as toolbox:
        for call in (
            ToolCallRequest("c1", "parcel_track", {"shipment": "shelves"}),  # out of order
            ToolCallRequest("c1", "email_search", {"query": "kiln order", "cc": "x"}),
            ToolCallRequest("c1", "email_search", {"query": 5}),
        ):
            with pytest.raises(ToolError) as err:
                await toolbox.call(call)
            assert err.value.code == "tool_call_failed"
        assert not any(c.matched for c in server.call_log) and len(server.call_log) == 3


def test_frozen_records_pair_each_result_with_its_call() -> None:
    trace = load_trace((ORIGINALS / "brightline-return.json").read_bytes())
    records = frozen_records(trace)
    assert len(records) == 28
    assert all(r.tool in TOOLS and r.output for r in records)


def test_the_standalone_server_announces_its_loopback_endpoint(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "continuity.servers.fixture",
            "--trace",
            str(ORIGINALS / "brightline-return.json"),
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening http://127.0.0.1:") and line.endswith("/mcp")
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def test_the_standalone_server_refuses_a_broken_trace(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    result = subprocess.run(
        [sys.executable, "-m", "continuity.servers.fixture", "--trace", str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "trace_malformed" in result.stderr
