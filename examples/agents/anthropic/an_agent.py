"""An Anthropic Messages agent as a CAP/0 adapter (a reference adapter).

A tool-use loop on the official ``anthropic`` SDK: ``AsyncAnthropic`` at the base URL
continuity gives (without its ``/v1``: the SDK appends ``/v1/messages``), each turn one
``messages.create`` after another with the MCP servers' tools (name, description,
``input_schema``) until a reply asks for no tool; each ``tool_use`` block is called
through the official MCP client (``streamable_http_client`` and ``ClientSession``) and
answered by a ``tool_result`` block in the next user message. Each conversation's
messages are kept as JSON in the workspace, so a restart resumes it and a new session
starts empty. A steer that arrives while a tool call runs goes into the user message
carrying that call's result, as a text block after the ``tool_result`` blocks
(``steer: injected``). Every turn's reply is the final text of the model's last reply.

``session/compact`` (``compaction: manual``) is the adapter's own, following
Anthropic's documented client-side pattern (the SDK's former ``compaction_control`` of
the tool runner): the history and a summary request go to ``cont-aux`` with no tools
offered, and the history becomes that summary alone, as the first user message (it runs
between turns, so no tool call is in flight and there is no tail to keep). The installed
SDK (2.x) no longer has that option: its own compaction is server-side, the Messages
request's ``compaction`` field (``BetaToolRunner.compact_before_next_turn``, or the
``compact_20260112`` context-management edit by a token threshold), answered by the
provider with a signed ``compaction`` block that the client sends back in place of the
history. Continuity's model proxy answers a compaction with plain text and reads only
text blocks, so that compaction could not cross here.

``session/switch_model`` (``model_switch``) makes the session's later requests name
another model. ``context/inject`` (``context_inject``) puts the text first in the
session, as a user message. A session opened with more MCP servers (``session_tools``)
offers their tools too, each named ``<server>__<tool>``; the fixture's keep their own.

It runs in a virtualenv of its own (``.venv`` here, ``./setup.sh``: ``anthropic``,
``mcp``, ``msgspec`` and ``anyio``) and imports only continuity's dependency-light CAP/0
SDK from the checkout.
"""

import contextlib
import json
import sys
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout: the CAP/0 SDK

import anyio
import httpx2
from anthropic import AsyncAnthropic
from anthropic.types import Message, MessageParam, ToolParam
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from continuity.agents import protocol as cap
from continuity.agents.sdk import serve_stdio

SYSTEM = "You are the owner's assistant. Use the tools to read their mail, documents and more."
SUMMARIZE = (
    "Write a summary of the conversation above that lets the work go on without it: the "
    "owner's requests, every fact, name, number and date found, what was done and what is "
    "still open. Wrap it in <summary></summary> tags."
)
MAX_TOKENS = 4096
SEP = "__"  # a session server's tool: <server>__<tool>


def _text(reply: Message) -> str:
    return "".join(block.text for block in reply.content if block.type == "text")


class AnthropicAdapter:
    async def initialize(self, p: cap.InitParams) -> cap.AgentInfo:
        base_url = p.model.base_url.removesuffix("/v1")
        self.client = AsyncAnthropic(base_url=base_url, api_key=p.model.api_key, max_retries=0)
        self.fixture = p.mcp_servers[0].url
        Path(p.workspace).mkdir(parents=True, exist_ok=True)
        self.file = Path(p.workspace) / "sessions.json"  # {session: {model, messages, servers}}
        self.sessions: dict[str, Any] = {}
        if self.file.exists():  # a restart: the conversations so far
            self.sessions = json.loads(self.file.read_text())
        self.steers: dict[str, list[str]] = {}  # turn id: steers waiting for a tool result
        caps = cap.Capabilities(api=["anthropic"], steer="injected", resume_after_restart=True,
                                new_session=True, compaction="manual", model_switch=True,
                                context_inject=True, session_tools=True)  # fmt: skip
        agent = cap.AgentIdentity(name="anthropic-messages", version="0.1", framework="anthropic")
        return cap.AgentInfo(agent=agent, capabilities=caps)

    def session(self, session_id: str) -> dict[str, Any]:
        fresh = {"model": "cont-main", "messages": [], "servers": {}}
        state: dict[str, Any] = self.sessions.setdefault(session_id, fresh)
        return state

    def save(self) -> None:
        (tmp := self.file.with_suffix(".tmp")).write_text(json.dumps(self.sessions))
        tmp.replace(self.file)  # whole or not at all: a kill mid-write keeps the last one

    async def open_session(self, key: str, mcp_servers: list[cap.McpServer] | None = None) -> str:
        state = self.session(key)  # a new key: a fresh, empty conversation
        state["servers"].update({server.name: server.url for server in mcp_servers or []})
        self.save()
        return key

    async def steer(self, session_id: str, turn_id: str, steer_id: str,
                    text: str) -> cap.SteerResult:  # fmt: skip
        self.steers.setdefault(turn_id, []).append(text)  # after the running call's result
        return cap.SteerResult(delivery="injected")

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> cap.TurnResult:
        state = self.session(session_id)
        messages: list[dict[str, Any]] = state["messages"]
        messages.append({"role": "user", "content": text})
        servers = {"": self.fixture, **state["servers"]}  # the fixture's tools unprefixed
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0)))  # fmt: skip
            clients: dict[str, tuple[ClientSession, str]] = {}  # offered name: (server, name)
            tools: list[ToolParam] = []
            for name, url in servers.items():
                read, write = await stack.enter_async_context(
                    streamable_http_client(url, http_client=http))  # fmt: skip
                mcp = await stack.enter_async_context(ClientSession(read, write))
                await mcp.initialize()
                for tool in (await mcp.list_tools()).tools:
                    offered = f"{name}{SEP}{tool.name}" if name else tool.name
                    clients[offered] = (mcp, tool.name)
                    tools.append({"name": offered, "description": tool.description or "",
                                  "input_schema": tool.input_schema})  # fmt: skip
            while True:
                reply = await self.client.messages.create(
                    model=state["model"], max_tokens=MAX_TOKENS, system=SYSTEM, tools=tools,
                    messages=cast(list[MessageParam], messages))  # fmt: skip
                content = [b.model_dump(mode="json", exclude_none=True) for b in reply.content]
                messages.append({"role": "assistant", "content": content})
                calls = [block for block in reply.content if block.type == "tool_use"]
                if not calls:
                    break
                results: list[dict[str, Any]] = []
                for call in calls:
                    mcp, name = clients[call.name]
                    done = await mcp.call_tool(name, cast(dict[str, Any], call.input))
                    output = "".join(getattr(c, "text", "") for c in done.content)
                    result = {"type": "tool_result", "tool_use_id": call.id, "content": output}
                    results.append({**result, "is_error": True} if done.is_error else result)
                steers = self.steers.pop(turn_id, [])
                results += [{"type": "text", "text": steer} for steer in steers]
                messages.append({"role": "user", "content": results})
        self.save()
        reply_text = {"text": _text(reply)}  # the model's final text, as it wrote it
        return cap.TurnResult(turn_id=turn_id, status="completed", reply=reply_text)

    async def compact(self, session_id: str) -> bool:
        """The history becomes a summary by ``cont-aux``, offered no tools (module doc)."""
        state = self.session(session_id)
        if not state["messages"]:
            return False
        ask = [*state["messages"], {"role": "user", "content": SUMMARIZE}]
        reply = await self.client.messages.create(
            model="cont-aux", max_tokens=MAX_TOKENS, messages=cast(list[MessageParam], ask)
        )
        summary = _text(reply)
        if not summary.strip():  # nothing to stand for the history: no compaction
            return False
        state["messages"] = [{"role": "user", "content": summary}]
        self.save()
        return True

    async def switch_model(self, session_id: str, model: str) -> None:
        self.session(session_id)["model"] = model
        self.save()

    async def inject(self, session_id: str, text: str) -> None:
        """context/inject: the text opens the session, as a user message before its turns."""
        self.session(session_id)["messages"].insert(0, {"role": "user", "content": text})
        self.save()


if __name__ == "__main__":
    anyio.run(serve_stdio, AnthropicAdapter())
