"""An OpenAI Agents SDK agent as a CAP/0 adapter (a reference adapter).

``Agent`` + ``Runner.run`` with ``OpenAIChatCompletionsModel`` at the base URL
continuity gives, the fixture tools through ``MCPServerStreamableHttp``, and one
``SQLiteSession`` per conversation in the workspace (so a restart resumes it). The SDK
has no mid-run input, so it declares ``steer: queued`` and answers each ``turn/steer``
so: continuity lets the running turn end, then sends the steer as the next owner turn
(``turn/run``), and the sample carries the label ``queued`` (``steer_degraded``).

``session/switch_model`` (``model_switch``) makes the session's later runs name another
model at the same URL (``OpenAIChatCompletionsModel`` is built per run from the session's
model name); each session's model is kept in ``models.json`` beside the sessions'
SQLite file, so it survives a restart.

It declares no compaction: the SDK's own, ``OpenAIResponsesCompactionSession``
(``run_compaction``, automatic after a turn or forced) and the ``context_management``
model setting (``{"type": "compaction"}``; the sandbox ``Compaction`` capability sets
it), is the Responses API's server-side compaction, not a summary the SDK asks a model
for. ``run_compaction`` calls ``responses.compact`` (``POST /v1/responses/compact``, no
Chat Completions counterpart), the session refuses any model name but OpenAI's
(``gpt-*``, ``o*``: ``cont-aux`` raises ``ValueError``), and what it stores is an opaque
``compaction`` item (encrypted content, no summary text a request could carry), which
the Chat Completions converter refuses outright ("Compaction items are not supported
for chat completions"). The SDK's other history tools do not summarise:
``ToolOutputTrimmer`` trims tool outputs, and the handoff history filter
(``nest_handoff_history``) folds a transcript into one message for the next agent
without a model call. Summarising with a ``Runner.run`` of our own and rewriting the
``SQLiteSession`` would be this adapter's compaction, not the framework's.

The Agents SDK pins the MCP SDK below version 2 and continuity needs 2, so this adapter
runs in a virtualenv of its own (``.venv`` here: ``openai-agents``, ``msgspec`` and
``anyio``) and imports only continuity's dependency-light CAP/0 SDK from the checkout.
"""

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout: the CAP/0 SDK

import anyio
from agents import Agent, OpenAIChatCompletionsModel, Runner, SQLiteSession, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

from continuity.agents import protocol as cap
from continuity.agents.sdk import serve_stdio

INSTRUCTIONS = "You are the owner's assistant. Use the tools to read their mail and more."


class AgentsSdkAdapter:
    async def initialize(self, p: cap.InitParams) -> cap.AgentInfo:
        set_tracing_disabled(True)  # nothing leaves the machine
        self.client = AsyncOpenAI(base_url=p.model.base_url, api_key=p.model.api_key,
                                  max_retries=0)  # fmt: skip
        self.mcp_url = p.mcp_servers[0].url
        self.db = str(Path(p.workspace) / "sessions.sqlite3")
        Path(p.workspace).mkdir(parents=True, exist_ok=True)
        self.models_file = Path(p.workspace) / "models.json"  # {session: model} once switched
        self.models: dict[str, str] = {}
        if self.models_file.exists():  # a restart: the models the sessions were switched to
            self.models = json.loads(self.models_file.read_text())
        caps = cap.Capabilities(steer="queued", resume_after_restart=True, new_session=True,
                                model_switch=True)  # fmt: skip
        agent = cap.AgentIdentity(
            name="openai-agents-sdk", version="0.1", framework="openai-agents"
        )
        return cap.AgentInfo(agent=agent, capabilities=caps)

    async def open_session(self, key: str) -> str:
        return key

    async def steer(self, session_id: str, turn_id: str, steer_id: str,
                    text: str) -> cap.SteerResult:  # fmt: skip
        return cap.SteerResult(delivery="queued")  # a run takes no input: the next turn

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> cap.TurnResult:
        server = MCPServerStreamableHttp(params={"url": self.mcp_url}, cache_tools_list=True)
        model = OpenAIChatCompletionsModel(model=self.models.get(session_id, "cont-main"),
                                           openai_client=self.client)  # fmt: skip
        async with server:
            agent = Agent(name="assistant", instructions=INSTRUCTIONS, model=model,
                          mcp_servers=[server])  # fmt: skip
            session = SQLiteSession(session_id, self.db)
            result: Any = await Runner.run(agent, text, session=session, max_turns=64)
        return cap.TurnResult(turn_id=turn_id, status="completed",
                              reply={"text": str(result.final_output or "")})  # fmt: skip

    async def switch_model(self, session_id: str, model: str) -> None:
        self.models[session_id] = model
        (tmp := self.models_file.with_suffix(".tmp")).write_text(json.dumps(self.models))
        tmp.replace(self.models_file)  # whole or not at all: a kill mid-write keeps the last one


if __name__ == "__main__":
    anyio.run(serve_stdio, AgentsSdkAdapter())
