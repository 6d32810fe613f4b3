# mypy: allow-subclassing-any
# (pydantic-ai is in this adapter's .venv only, not where continuity's mypy runs)
"""A pydantic-ai agent as a CAP/0 adapter (a reference adapter).

An ``Agent`` with ``OpenAIChatModel`` at the base URL continuity gives, the fixture tools
through ``MCPToolset`` (streamable HTTP), and each conversation's message history kept as
JSON in the workspace (``ModelMessagesTypeAdapter``) and passed back as ``message_history``
to every ``agent.run``, so a restart resumes it and a new session starts empty. A run takes
no input mid-run, so it declares ``steer: queued`` and answers each ``turn/steer`` so:
continuity lets the running turn end, then sends the steer as the next owner turn
(``turn/run``), and the sample carries the label ``queued`` (``steer_degraded``).

``session/compact`` (``compaction: manual``) is pydantic-ai's own manual compaction,
``Agent.compact_history``, served by a ``compact_history`` capability hook (`Summarize`):
``cont-aux``, offered no tools, summarises the history, which becomes that summary alone,
a ``CompactionPart`` (pydantic-ai sends it as framed user text). ``session/switch_model``
(``model_switch``) makes the session's later runs name another model at the same URL.

It runs in a virtualenv of its own (``.venv`` here, ``./setup.sh``: ``pydantic-ai-slim``
with its ``openai`` and ``mcp`` extras, ``msgspec`` and ``anyio``) and imports only
continuity's dependency-light CAP/0 SDK from the checkout.
"""

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout: the CAP/0 SDK

import anyio
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, CompactionRequest, CompactionResult
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from continuity.agents import protocol as cap
from continuity.agents.sdk import serve_stdio

INSTRUCTIONS = "You are the owner's assistant. Use the tools to read their mail and more."
SUMMARIZE = "Summarize the conversation above: keep every fact, name, number and open task."


@dataclass
class Summarize(AbstractCapability[Any]):
    """The ``compact_history`` hook: what comes before the turn being answered becomes one
    summary by `summarizer` (no tools). The agent has instructions, no system prompt parts,
    so nothing has to stay ahead of the summary."""

    summarizer: Agent[None, str | None]

    async def compact_history(
        self, ctx: Any, request: CompactionRequest
    ) -> CompactionResult | None:
        messages, keep = request.messages, len(request.messages) - 1  # the turn being answered
        if keep and isinstance(call := messages[keep - 1], ModelResponse) and call.tool_calls:
            keep -= 1  # a tool result is kept with its call
        if keep == 0:
            return None
        summary = (await self.summarizer.run(SUMMARIZE, message_history=messages[:keep])).output
        if not summary:  # an empty answer: nothing to stand for the history, so no compaction
            return None
        part = CompactionPart(content=summary)
        return CompactionResult(messages=[ModelRequest(parts=[part]), *messages[keep:]],
                                part=part, handler="summarizing", kept_from=1)  # fmt: skip


class PydanticAiAdapter:
    async def initialize(self, p: cap.InitParams) -> cap.AgentInfo:
        client = AsyncOpenAI(base_url=p.model.base_url, api_key=p.model.api_key, max_retries=0)
        self.provider = OpenAIProvider(openai_client=client)
        # `[str, None]`: an empty reply (continuity ends a turn so for a queued steer) ends
        # the run with no output, instead of a retry asking for text
        self.agent = Agent(instructions=INSTRUCTIONS, output_type=[str, None],
                           toolsets=[MCPToolset(p.mcp_servers[0].url)])  # fmt: skip
        self.summarize = Summarize(Agent(self.model("cont-aux"), output_type=[str, None]))
        Path(p.workspace).mkdir(parents=True, exist_ok=True)
        self.file = Path(p.workspace) / "sessions.json"  # {session: {model, messages}}
        self.sessions: dict[str, Any] = {}
        if self.file.exists():  # a restart: the conversations so far
            self.sessions = json.loads(self.file.read_text())
        caps = cap.Capabilities(steer="queued", resume_after_restart=True, new_session=True,
                                compaction="manual", model_switch=True)  # fmt: skip
        agent = cap.AgentIdentity(name="pydantic-ai", version="0.1", framework="pydantic-ai")
        return cap.AgentInfo(agent=agent, capabilities=caps)

    def model(self, name: str) -> OpenAIChatModel:
        return OpenAIChatModel(name, provider=self.provider)

    def history(self, session_id: str) -> tuple[dict[str, Any], list[Any]]:
        state = self.sessions.setdefault(session_id, {"model": "cont-main", "messages": []})
        return state, ModelMessagesTypeAdapter.validate_python(state["messages"])

    def save(self, state: dict[str, Any], messages: list[Any]) -> None:
        state["messages"] = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
        (tmp := self.file.with_suffix(".tmp")).write_text(json.dumps(self.sessions))
        tmp.replace(self.file)  # whole or not at all: a kill mid-write keeps the last one

    async def open_session(self, key: str) -> str:
        self.history(key)  # a new key: a fresh, empty history
        return key

    async def steer(self, session_id: str, turn_id: str, steer_id: str,
                    text: str) -> cap.SteerResult:  # fmt: skip
        return cap.SteerResult(delivery="queued")  # a run takes no input: the next turn

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> cap.TurnResult:
        state, messages = self.history(session_id)
        model = self.model(state["model"])
        result = await self.agent.run(text, message_history=messages, model=model)
        self.save(state, result.all_messages())
        reply = {"text": result.output or ""}  # the model's final text, as it wrote it
        return cap.TurnResult(turn_id=turn_id, status="completed", reply=reply)

    async def compact(self, session_id: str) -> bool:
        state, messages = self.history(session_id)
        if not messages:
            return False
        done = await self.agent.compact_history(messages, model=self.model(state["model"]),
                                                capabilities=[self.summarize])  # fmt: skip
        if done.compactions:
            self.save(state, done.all_messages())
        return bool(done.compactions)

    async def switch_model(self, session_id: str, model: str) -> None:
        state, messages = self.history(session_id)
        state["model"] = model
        self.save(state, messages)


if __name__ == "__main__":
    anyio.run(serve_stdio, PydanticAiAdapter())
