"""An OpenAI Agents SDK agent as a CAP/0 adapter (a reference adapter).

``Agent`` + ``Runner.run`` with ``OpenAIChatCompletionsModel`` at the base URL
continuity gives, the fixture tools through ``MCPServerStreamableHttp``, and one
``SQLiteSession`` per conversation in the workspace (so a restart resumes it). The SDK
has no mid-run input, so it declares ``steer: queued`` and answers each ``turn/steer``
so: continuity lets the running turn end, then sends the steer as the next owner turn
(``turn/run``), and the sample carries the label ``queued`` (``steer_degraded``).

The Agents SDK pins the MCP SDK below version 2 and continuity needs 2, so this adapter
runs in a virtualenv of its own (``.venv`` here: ``openai-agents``, ``msgspec`` and
``anyio``) and imports only continuity's dependency-light CAP/0 SDK from the checkout.
"""

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
        client = AsyncOpenAI(base_url=p.model.base_url, api_key=p.model.api_key, max_retries=0)
        self.model = OpenAIChatCompletionsModel(model="cont-main", openai_client=client)
        self.mcp_url = p.mcp_servers[0].url
        self.db = str(Path(p.workspace) / "sessions.sqlite3")
        Path(p.workspace).mkdir(parents=True, exist_ok=True)
        caps = cap.Capabilities(steer="queued", resume_after_restart=True, new_session=True)
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
        async with server:
            agent = Agent(name="assistant", instructions=INSTRUCTIONS, model=self.model,
                          mcp_servers=[server])  # fmt: skip
            session = SQLiteSession(session_id, self.db)
            result: Any = await Runner.run(agent, text, session=session, max_turns=64)
        return cap.TurnResult(turn_id=turn_id, status="completed",
                              reply={"text": str(result.final_output or "")})  # fmt: skip


if __name__ == "__main__":
    anyio.run(serve_stdio, AgentsSdkAdapter())
