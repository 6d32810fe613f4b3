"""The agent loop: real MCP calls, live input reaching the next request."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuity.errors import HarnessError
from continuity.harness.live_input import LiveInput
from continuity.harness.loop import AgentLoop
from continuity.harness.replay import ReplayClock
from continuity.harness.toolbox import McpToolbox
from continuity.harness.workspace import Workspace
from continuity.messages import (
    ModelRequest,
    ToolCallRequest,
    ToolResultMessage,
    UserMessage,
)
from continuity.providers import ScriptedProvider, ScriptedStep
from continuity.servers.fixture import FixtureToolServer, FrozenRecord

pytestmark = pytest.mark.anyio
RECORD = FrozenRecord("r1", "email_search", {"query": "escalation"}, "Thread: late shelves.")
CALL = ToolCallRequest("c1", "email_search", {"query": "escalation"})


async def test_live_input_during_a_call_reaches_the_next_request(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []

    def after_call(request: ModelRequest) -> ScriptedStep:
        seen.append(request)
        return ScriptedStep(text="Understood, drafted only.")

    live = LiveInput()
    provider = ScriptedProvider([ScriptedStep(text="Checking.", tool_calls=(CALL,)), after_call])
    session, history, tools = Workspace(tmp_path / "ws").create(
        session_id="s", clock=ReplayClock("2027-01-04")
    )

    def started(call: ToolCallRequest) -> None:
        live.offer("Don't send it, just draft.", owner_text="Don't send it, just draft.")
        live.offer("an anonymous note")

    async with (
        FixtureToolServer([RECORD]).running() as url,
        McpToolbox(url, on_call_started=started) as toolbox,
    ):
        loop = AgentLoop(
            session=session,
            history=history,
            tool_history=tools,
            toolbox=toolbox,
            provider=provider,
            model="m",
            live_input=live,
        )
        report = await loop.run_turn("Send the escalation.")
    assert (report.requests, report.tool_calls, report.live_inputs) == (2, 1, 2)
    messages = seen[0].messages
    assert isinstance(messages[-3], ToolResultMessage) and messages[-3].text == RECORD.output
    assert messages[-2] == UserMessage(
        text="Don't send it, just draft.", attribution="owner", source="steer"
    )
    assert messages[-1] == UserMessage(
        text="an anonymous note", attribution="unknown", source="steer"
    )
    assert [o.in_flight_call for o in live.log] == ["c1", "c1"]
    assert [r.attribution for r in history.records] == ["owner", "host", "owner", "unknown", "host"]
    assert tools.records()[0].call_id == "c1" and tools.records()[0].kind == "email"
    session.close()
    history.close()


async def test_a_tool_call_without_tools_is_refused(tmp_path: Path) -> None:
    session, history, tools = Workspace(tmp_path / "ws").create(
        session_id="s", clock=ReplayClock("2027-01-04")
    )
    loop = AgentLoop(
        session=session,
        history=history,
        tool_history=tools,
        toolbox=None,
        provider=ScriptedProvider([ScriptedStep(tool_calls=(CALL,))]),
        model="m",
    )
    with pytest.raises(HarnessError) as err:
        await loop.run_turn("hello")
    assert err.value.code == "tool_not_offered"
    session.close()
    history.close()
