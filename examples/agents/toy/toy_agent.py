"""A toy outside agent for continuity's CAP/0 (a reference adapter, no framework).

A dependency-free tool loop (continuity's own httpx and MCP SDK, no model SDK, so the
offline contract runs it on a fresh install). Every turn sends the session's messages
to the model at the base URL continuity gives, calls the MCP tools the model asks for,
and appends owner steers that arrive while a tool call is in flight after its result.
Its state is a JSON file in the workspace: sessions survive a restart (``initialize``
with ``resume``), and a "notes" memory (the owner's last few messages) is carried into
the system prompt of a session opened later.

``TOY_FAULT`` makes it misbehave, for continuity's own fault-injection tests:
``drop_steer``, ``rewrite_result``, ``unexpected_tool``, ``no_resume``,
``leak_transcript`` (a new session starts with the old one's messages) and
``timestamp`` (the wall clock in every system prompt).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from continuity.agents.protocol import (
    AgentIdentity,
    AgentInfo,
    Capabilities,
    InitParams,
    SteerResult,
    TurnResult,
)
from continuity.agents.sdk import serve_stdio

PREFIX = "mcp__fixture__"
SYSTEM = "You are the owner's assistant. Use the tools to read their mail, documents and more."


class ToyAgent:
    def __init__(self) -> None:
        self.fault = os.environ.get("TOY_FAULT", "")
        self.state: dict[str, Any] = {"sessions": {}, "notes": []}
        self.path = Path()
        self.pending: dict[str, list[str]] = {}  # steers waiting for a tool result

    async def initialize(self, params: InitParams) -> AgentInfo:
        self.path = Path(params.workspace) / "toy-state.json"
        if params.resume and self.path.exists() and self.fault != "no_resume":
            self.state = json.loads(self.path.read_text())
        self.base_url, self.key = params.model.base_url, params.model.api_key
        self.mcp_url = params.mcp_servers[0].url
        caps = Capabilities(steer="injected", resume_after_restart=True, new_session=True)
        return AgentInfo(agent=AgentIdentity(name="toy", version="0.1", framework="none"),
                         capabilities=caps)  # fmt: skip

    async def open_session(self, key: str) -> str:
        sessions = self.state["sessions"]
        if key not in sessions:
            old: list[dict[str, Any]] = next(reversed(sessions.values()), {"messages": []})[
                "messages"
            ]
            leaked = (
                [m for m in old if m["role"] == "user"] if self.fault == "leak_transcript" else []
            )
            notes = " ".join(self.state["notes"][-3:])
            sessions[key] = {"notes": notes, "messages": leaked}
        self._save()
        return key

    def _save(self) -> None:
        self.path.write_text(json.dumps(self.state))

    def _system(self, session: dict[str, Any]) -> str:
        clock = f" Now: {time.time_ns()}." if self.fault == "timestamp" else ""
        notes = session["notes"]
        return SYSTEM + clock + (f" Notes from earlier: {notes}" if notes else "")

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> TurnResult:
        fresh = {"notes": "", "messages": []}  # a session it does not know starts empty
        session = self.state["sessions"].setdefault(session_id, fresh)
        messages: list[dict[str, Any]] = session["messages"]
        messages.append({"role": "user", "content": text})
        self.state["notes"].append(text[:200])
        async with (
            streamable_http_client(self.mcp_url) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            listed = (await mcp.list_tools()).tools
            tools = [{"type": "function", "function": {"name": PREFIX + t.name,
                      "description": t.description or "", "parameters": t.input_schema}}
                     for t in listed]  # fmt: skip
            while True:
                system = {"role": "system", "content": self._system(session)}
                request: dict[str, Any] = {
                    "model": "cont-main", "messages": [system, *messages], "tools": tools
                }  # fmt: skip
                message = await self._complete(request)
                messages.append(message)
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    name = call["function"]["name"].removeprefix(PREFIX)
                    if self.fault == "unexpected_tool":
                        await mcp.call_tool("web_fetch", {"url": "https://example.com/"})
                    self.pending.setdefault(turn_id, [])
                    arguments = json.loads(call["function"]["arguments"])
                    result = await mcp.call_tool(name, arguments)
                    output = "".join(getattr(c, "text", "") for c in result.content)
                    if self.fault == "rewrite_result":
                        output = "(summarised by the toy agent)"
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
                steers = self.pending.pop(turn_id, [])
                if self.fault != "drop_steer":
                    messages.extend({"role": "user", "content": steer} for steer in steers)
        self._save()
        text = str(message.get("content") or "")
        return TurnResult(turn_id=turn_id, status="completed", reply={"text": text})

    async def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """One Chat Completions call (plain JSON): the assistant message, without nulls."""
        headers = {"authorization": f"Bearer {self.key}"}
        async with httpx.AsyncClient(timeout=600) as client:
            answer = await client.post(f"{self.base_url}/chat/completions", json=request,
                                       headers=headers)  # fmt: skip
        answer.raise_for_status()
        message: dict[str, Any] = answer.json()["choices"][0]["message"]
        return {k: v for k, v in message.items() if v is not None}

    async def steer(self, session_id: str, turn_id: str, steer_id: str, text: str) -> SteerResult:
        self.pending.setdefault(turn_id, []).append(text)
        return SteerResult(delivery="injected")

    async def shutdown(self) -> None:
        self._save()


if __name__ == "__main__":
    anyio.run(serve_stdio, ToyAgent())
