"""The fixture server matches the calls of one assistant turn in any order (an agent may
run them concurrently) and keeps the order of the turns; a steer hold stays with its
own record."""

from __future__ import annotations

from collections import Counter

import anyio
import pytest

from continuity.errors import ToolError
from continuity.harness.toolbox import McpToolbox
from continuity.messages import ToolCallRequest
from continuity.servers.fixture import FixtureToolServer, FrozenRecord, frozen_records
from continuity.traces.schema import AssistantMessage, iter_turns
from tests.harness.test_replay import trace_named

pytestmark = pytest.mark.anyio

RECORDS = [
    FrozenRecord("r1", "email_search", {"query": "kiln order"}, "Your order.", "a1"),
    FrozenRecord("r2", "email_search", {"query": "shelves"}, "Shelf sizes.", "a2"),
    FrozenRecord("r3", "parcel_track", {"shipment": "shelves"}, "At Ashford.", "a2"),
    FrozenRecord("r4", "parcel_track", {"shipment": "kiln"}, "Delivered.", "a3"),
]


def _call(record: FrozenRecord) -> ToolCallRequest:
    return ToolCallRequest(record.record_id, record.tool, dict(record.arguments))


async def test_a_steps_calls_answered_in_reverse_order_are_all_matched() -> None:
    server = FixtureToolServer(RECORDS)
    async with server.running() as url, McpToolbox(url) as toolbox:
        outputs = [await toolbox.call(_call(RECORDS[n])) for n in (0, 2, 1, 3)]
    assert outputs == [RECORDS[n].output for n in (0, 2, 1, 3)]
    assert [c.record_id for c in server.call_log] == ["r1", "r3", "r2", "r4"]
    assert all(c.matched for c in server.call_log) and server.served_all


async def test_steps_keep_their_order_and_a_call_matching_no_record_of_its_step_fails() -> None:
    server = FixtureToolServer(RECORDS)
    wrong = ToolCallRequest("x", "email_search", {"query": "kiln"})  # no record of a2
    async with server.running() as url, McpToolbox(url) as toolbox:
        await toolbox.call(_call(RECORDS[0]))
        for call in (_call(RECORDS[3]), wrong):  # a3 before a2 is done; a2 has no such call
            with pytest.raises(ToolError) as err:
                await toolbox.call(call)
            assert err.value.code == "tool_call_failed" and "expected" in err.value.message
        await toolbox.call(_call(RECORDS[1]))
        with pytest.raises(ToolError):
            await toolbox.call(_call(RECORDS[1]))  # each record is used once
        await toolbox.call(_call(RECORDS[2]))
        await toolbox.call(_call(RECORDS[3]))
    assert [c.matched for c in server.call_log] == [True, False, False, True, False, True, True]
    assert server.served_all


async def test_a_hold_stays_with_its_own_record_while_the_other_call_is_answered() -> None:
    held: list[str] = []
    server = FixtureToolServer(RECORDS[1:3], holds=frozenset({"r3"}), on_hold=held.append)
    async with server.running() as url, McpToolbox(url) as toolbox:
        answered: list[str] = []

        async def call(record: FrozenRecord) -> None:
            await toolbox.call(_call(record))
            answered.append(record.record_id)

        async with anyio.create_task_group() as group:
            group.start_soon(call, RECORDS[2])  # the held one, first
            with anyio.fail_after(10):
                while not held:
                    await anyio.sleep(0.01)
            await call(RECORDS[1])  # its sibling, answered while r3 waits
            assert answered == ["r2"]
            server.release("r3")
    assert held == ["r3"] and answered == ["r2", "r3"]
    assert {c.record_id: c.held for c in server.call_log} == {"r2": None, "r3": "released"}


def test_frozen_records_name_the_step_of_their_call() -> None:
    trace = trace_named("hard-101")
    records = frozen_records(trace)
    several = {
        t.turn_id for _, _, t in iter_turns(trace)
        if isinstance(t, AssistantMessage) and len(t.tool_calls) > 1
    }  # fmt: skip
    sizes = Counter(r.step for r in records)
    assert several and {s for s, n in sizes.items() if n > 1} == several
