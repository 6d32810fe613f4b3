"""The fixture server's steer hold, MCP session ids and unguessable path (outside
agents: the runner sends the steer while the agent's call is held, then releases it)."""

from __future__ import annotations

import anyio

from continuity.errors import ToolError
from continuity.harness.toolbox import McpToolbox
from continuity.messages import ToolCallRequest
from continuity.servers.fixture import FixtureToolServer, frozen_records
from tests.harness.test_replay import trace_named

RECORDS = frozen_records(trace_named("brightline-return"))[:2]


def _call(number: int) -> ToolCallRequest:
    record = RECORDS[number]
    return ToolCallRequest(f"c{number}", record.tool, dict(record.arguments))


def test_a_held_call_waits_for_its_release_and_names_its_session() -> None:
    held: list[str] = []
    server = FixtureToolServer(RECORDS, holds=frozenset({RECORDS[0].record_id}),
                               on_hold=held.append)  # fmt: skip

    async def main() -> None:
        async with server.running(token="t0k3n") as url:
            assert url.endswith("/t0k3n/mcp")
            async with McpToolbox(url) as toolbox:
                answered = anyio.Event()

                async def call() -> None:
                    await toolbox.call(_call(0))
                    answered.set()

                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    with anyio.fail_after(10):
                        while not held:
                            await anyio.sleep(0.01)
                    await anyio.sleep(0.3)
                    assert not answered.is_set()  # held until released
                    server.release(held[0])
                await toolbox.call(_call(1))  # not held

    anyio.run(main)
    first, second = server.call_log
    assert (first.held, second.held) == ("released", None) and held == [RECORDS[0].record_id]
    assert first.session and first.session == second.session  # one client, one session


def test_a_hold_past_its_deadline_is_answered_late() -> None:
    server = FixtureToolServer(RECORDS, holds=frozenset({RECORDS[0].record_id}),
                               hold_deadline_s=0.2)  # fmt: skip

    async def main() -> None:
        async with server.running() as url, McpToolbox(url) as toolbox:
            await toolbox.call(_call(0))

    anyio.run(main)
    assert server.call_log[0].held == "late" and server.call_log[0].matched


def test_the_plain_path_is_not_served_under_a_token() -> None:
    server = FixtureToolServer(RECORDS)

    codes: list[str] = []

    async def main() -> None:
        async with server.running(token="s3cr3t") as url:
            plain = url.replace("/s3cr3t/mcp", "/mcp")
            try:
                async with McpToolbox(plain, read_timeout=5) as toolbox:
                    await toolbox.call(_call(0))
            except* ToolError as group:
                codes.extend(e.code for e in group.exceptions if isinstance(e, ToolError))

    anyio.run(main)
    assert codes == ["tool_call_failed"] and server.call_log == []
