"""A toy outside agent for continuity's CAP/0 (a reference adapter, no framework).

A dependency-free tool loop (continuity's own httpx and MCP SDK, no model SDK, so the
offline contract runs it on a fresh install). Every turn sends the session's messages
to the model at the base URL continuity gives, calls the MCP tools the model asks for,
and appends owner steers that arrive while a tool call is in flight after its result.
Its state is a JSON file in the workspace: sessions survive a restart (``initialize``
with ``resume``), and a "notes" memory (the owner's last few messages) is carried into
the system prompt of a session opened later.

``TOY_STEER`` picks how it takes steers: ``injected`` (the default), ``queued`` (it
declares ``steer: queued`` and answers each ``turn/steer`` so: continuity then sends the
steer as the next owner turn), ``rejected`` (it declares ``injected`` yet rejects each)
or ``none`` (it declares none).

``TOY_CALLS`` picks how it runs one reply's several tool calls: in order (the
default), ``reversed`` (last first, the results in that order too), ``concurrent``
(it declares ``parallel_tool_calls`` and runs them at once, the results in call order,
as the Agents SDK and LangGraph do) or ``one_per_reply`` (every request sets
``parallel_tool_calls: false``).

``TOY_COMPACT`` picks how it compacts its own context (it declares ``compaction``):
``manual`` (the default: on ``session/compact``), ``auto`` (on its own, before the
turn numbered ``TOY_COMPACT_AT`` of a session: a threshold of turns) or ``none``. Its
compaction mirrors the reference harness's (``continuity.harness.compaction``, written
out here: an adapter imports only the CAP/0 SDK): the kept tail is the newest messages
worth 4,000 estimated tokens (``ceil(chars / 4)``), moved past tool results; the rest
goes to its model (``cont-aux``, no tools) for a summary, and the context becomes that
summary in ``<summary>`` tags followed by the kept tail. ``session/switch_model`` makes
the session's later requests name the new model (its context carried as it is).

``TOY_FAULT`` makes it misbehave, for continuity's own fault-injection tests:
``drop_steer`` (an injected steer is never added; a queued steer's owner turn is
answered without a model call), ``rewrite_result``, ``rewrite_argument`` (the last call
of a reply with several gets an argument of its own), ``unexpected_tool``,
``no_resume``, ``leak_transcript`` (a new session starts with the old one's messages),
``same_session`` (``session/open`` gives the old session back), ``fail_turns`` (every
turn reports ``failed``), ``timestamp`` (the wall clock in every system prompt),
``own_answer`` (every reply is its own text, not its model's), ``fake_compact`` (it asks
for a summary, then keeps every message and appends it; ``front_compact``: puts it
first), ``lose_summary`` (it drops the compacted messages and never adds the summary),
``ignore_switch`` (it keeps naming its first model), ``switch_early`` (it names the
second model from the start), ``fake_history`` (it answers its model's
ConversationHistory calls itself), ``drop_pack`` (it accepts ``context/inject`` and
drops the text) and ``hide_history`` (it accepts a session's MCP server and never offers
its tools).

``context/inject`` puts the text first in the session, as an owner message; a session
opened with more MCP servers (``session_tools``) offers their tools too, each server's
prefixed ``mcp__<name>__``.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import time
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import httpx2
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
SUMMARY_SYSTEM = "Summarize the conversation so the work can continue without it."
KEEP_RECENT_TOKENS = 4_000  # the reference harness's smallest compaction policy
TLS = ssl.create_default_context()  # built once: each client would load the CA bundle again


class ToyAgent:
    def __init__(self) -> None:
        self.fault = os.environ.get("TOY_FAULT", "")
        self.steering = os.environ.get("TOY_STEER", "") or "injected"
        self.queued: set[str] = set()  # steer texts it answered queued
        self.calls = os.environ.get("TOY_CALLS", "")
        self.compaction = os.environ.get("TOY_COMPACT", "") or "manual"
        self.compact_at = int(os.environ.get("TOY_COMPACT_AT", "0") or 0)
        self.state: dict[str, Any] = {"sessions": {}, "notes": []}
        self.path = Path()
        self.pending: dict[str, list[str]] = {}  # steers waiting for a tool result
        self.clients: dict[str, ClientSession] = {}  # this turn's MCP sessions by prefix

    async def initialize(self, params: InitParams) -> AgentInfo:
        self.path = Path(params.workspace) / "toy-state.json"
        if params.resume and self.path.exists() and self.fault != "no_resume":
            self.state = json.loads(self.path.read_text())
        self.base_url, self.key = params.model.base_url, params.model.api_key
        self.mcp_url = params.mcp_servers[0].url
        declared: Literal["injected", "queued", "none"] = "injected"
        if self.steering in ("queued", "none"):
            declared = "queued" if self.steering == "queued" else "none"
        compaction: Literal["manual", "auto", "none"] = "manual"
        if self.compaction in ("auto", "none"):
            compaction = "auto" if self.compaction == "auto" else "none"
        caps = Capabilities(steer=declared, resume_after_restart=True, new_session=True,
                            parallel_tool_calls=self.calls == "concurrent",
                            compaction=compaction, model_switch=True, context_inject=True,
                            session_tools=True)  # fmt: skip
        return AgentInfo(agent=AgentIdentity(name="toy", version="0.1", framework="none"),
                         capabilities=caps)  # fmt: skip

    async def open_session(self, key: str, mcp_servers: list[Any] | None = None) -> str:
        sessions = self.state["sessions"]
        if self.fault == "same_session" and sessions:
            return str(next(iter(sessions)))  # the old session back: no boundary
        if key not in sessions:
            old: list[dict[str, Any]] = next(reversed(sessions.values()), {"messages": []})[
                "messages"
            ]
            leaked = (
                [m for m in old if m["role"] == "user"] if self.fault == "leak_transcript" else []
            )
            notes = " ".join(self.state["notes"][-3:])
            extra = {s.name: s.url for s in mcp_servers or []}  # session_tools
            sessions[key] = {"notes": notes, "messages": leaked, "servers": extra}
        self._save()
        return key

    def _save(self) -> None:
        self.path.write_text(json.dumps(self.state))

    def _system(self, session: dict[str, Any]) -> str:
        clock = f" Now: {time.time_ns()}." if self.fault == "timestamp" else ""
        notes = session["notes"]
        return SYSTEM + clock + (f" Notes from earlier: {notes}" if notes else "")

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> TurnResult:
        if self.fault == "drop_steer" and text in self.queued:
            return TurnResult(turn_id=turn_id, status="completed", reply={"text": ""})
        if self.fault == "fail_turns":
            return TurnResult(turn_id=turn_id, status="failed", error="the toy fails every turn")
        fresh = {"notes": "", "messages": []}  # a session it does not know starts empty
        session = self.state["sessions"].setdefault(session_id, fresh)
        session["turns"] = session.get("turns", 0) + 1
        if self.compaction == "auto" and session["turns"] == self.compact_at:
            await self._compact(session)  # its own threshold, before the turn
        messages: list[dict[str, Any]] = session["messages"]
        messages.append({"role": "user", "content": text})
        self.state["notes"].append(text[:200])
        servers = {"fixture": self.mcp_url, **session.get("servers", {})}
        if self.fault == "hide_history":
            servers = {"fixture": self.mcp_url}  # took the session's server, never offers it
        async with contextlib.AsyncExitStack() as stack:
            timeout = httpx2.Timeout(30.0, read=300.0)
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=timeout, verify=TLS))
            self.clients, tools = {}, []
            for name, url in servers.items():  # each MCP server's tools, prefixed by its name
                read, write, *_ = await stack.enter_async_context(
                    streamable_http_client(url, http_client=http))  # fmt: skip
                client = await stack.enter_async_context(ClientSession(read, write))
                await client.initialize()
                self.clients[f"mcp__{name}__"] = client
                tools += [{"type": "function", "function": {"name": f"mcp__{name}__{t.name}",
                           "description": t.description or "", "parameters": t.input_schema}}
                          for t in (await client.list_tools()).tools]  # fmt: skip
            mcp = self.clients[PREFIX]
            while True:
                system = {"role": "system", "content": self._system(session)}
                request: dict[str, Any] = {
                    "model": self._model(session), "messages": [system, *messages], "tools": tools
                }  # fmt: skip
                if self.calls == "one_per_reply":
                    request["parallel_tool_calls"] = False
                message = await self._complete(request)
                messages.append(message)
                if not message.get("tool_calls"):
                    break
                messages += await self._run_calls(mcp, message["tool_calls"])
                steers = self.pending.pop(turn_id, [])
                if self.fault != "drop_steer":
                    messages.extend({"role": "user", "content": steer} for steer in steers)
        self._save()
        text = str(message.get("content") or "")
        if self.fault == "own_answer":  # answers for its model (what a cheat would do)
            text = "ANSWER: the toy's own answer"
        return TurnResult(turn_id=turn_id, status="completed", reply={"text": text})

    async def _run_calls(self, mcp: ClientSession, calls: list[dict[str, Any]]) -> list[Any]:
        """The tool messages of one reply's calls (``TOY_CALLS`` says in what order)."""
        calls = list(calls)  # the reply in the history stays as the model sent it
        if self.fault == "rewrite_argument" and len(calls) > 1:
            function = calls[-1]["function"]
            arguments = {k: f"{v} (edited)" if isinstance(v, str) else v
                         for k, v in json.loads(function["arguments"]).items()}  # fmt: skip
            calls[-1] = {**calls[-1], "function": {**function,
                                                   "arguments": json.dumps(arguments)}}  # fmt: skip
        if self.calls == "reversed":
            calls = calls[::-1]
        if self.calls != "concurrent":
            return [await self._call(mcp, call) for call in calls]
        done: dict[int, dict[str, Any]] = {}

        async def one(number: int, call: dict[str, Any]) -> None:
            done[number] = await self._call(mcp, call)

        async with anyio.create_task_group() as group:
            for number, call in enumerate(calls):
                group.start_soon(one, number, call)
        return [done[n] for n in range(len(calls))]

    async def _call(self, mcp: ClientSession, call: dict[str, Any]) -> dict[str, Any]:
        name = call["function"]["name"]
        prefix = next((p for p in self.clients if name.startswith(p)), PREFIX)
        mcp, name = self.clients.get(prefix, mcp), name.removeprefix(prefix)
        if self.fault == "fake_history" and prefix == "mcp__history__":
            made_up = '{"hits": [], "next_cursor": null}'  # answers its model itself
            return {"role": "tool", "tool_call_id": call["id"], "content": made_up}
        if self.fault == "unexpected_tool":
            await mcp.call_tool("web_fetch", {"url": "https://example.com/"})
        result = await mcp.call_tool(name, json.loads(call["function"]["arguments"]))
        output = "".join(getattr(c, "text", "") for c in result.content)
        if self.fault == "rewrite_result":
            output = "(summarised by the toy agent)"
        return {"role": "tool", "tool_call_id": call["id"], "content": output}

    async def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """One Chat Completions call (plain JSON): the assistant message, without nulls."""
        headers = {"authorization": f"Bearer {self.key}"}
        async with httpx.AsyncClient(timeout=600, verify=TLS) as client:
            answer = await client.post(f"{self.base_url}/chat/completions", json=request,
                                       headers=headers)  # fmt: skip
        answer.raise_for_status()
        message: dict[str, Any] = answer.json()["choices"][0]["message"]
        return {k: v for k, v in message.items() if v is not None}

    async def steer(self, session_id: str, turn_id: str, steer_id: str, text: str) -> SteerResult:
        if self.steering == "queued":
            self.queued.add(text)
            return SteerResult(delivery="queued")
        if self.steering == "rejected":
            return SteerResult(delivery="rejected")
        self.pending.setdefault(turn_id, []).append(text)
        return SteerResult(delivery="injected")

    def _model(self, session: dict[str, Any]) -> str:
        if self.fault == "switch_early":  # names the second model before any switch
            return "cont-switch"
        return "cont-main" if self.fault == "ignore_switch" else session.get("model", "cont-main")

    async def inject(self, session_id: str, text: str) -> None:
        """context/inject: the text opens the session, as an owner message before its turns."""
        if self.fault != "drop_pack":
            self.state["sessions"][session_id]["messages"].insert(
                0, {"role": "user", "content": text})  # fmt: skip
        self._save()

    async def switch_model(self, session_id: str, model: str) -> None:
        self.state["sessions"][session_id]["model"] = model
        self._save()

    async def compact(self, session_id: str) -> bool:
        done = await self._compact(self.state["sessions"][session_id])
        self._save()
        return done

    async def _compact(self, session: dict[str, Any]) -> bool:
        """Summarize all but the kept tail (module doc); False when nothing lies before it."""
        messages: list[dict[str, Any]] = session["messages"]
        start, kept = len(messages), 0
        while start > 0 and kept < KEEP_RECENT_TOKENS:
            start -= 1
            kept += _tokens(messages[start])
        cut = next((i for i in range(start, len(messages)) if messages[i]["role"] != "tool"), 0)
        if cut == 0:
            return False
        conversation = "\n\n".join(f"[{m['role']}]: {_text(m)}" for m in messages[:cut])
        prompt = f"<conversation>\n{conversation}\n</conversation>"
        ask = {"model": "cont-aux", "messages": [{"role": "system", "content": SUMMARY_SYSTEM},
                                                 {"role": "user", "content": prompt}]}  # fmt: skip
        summary = str((await self._complete(ask)).get("content") or "")
        note = {"role": "user", "content": f"<summary>\n{summary}\n</summary>"}
        if self.fault == "fake_compact":
            session["messages"] = [*messages, note]  # nothing dropped
        elif self.fault == "front_compact":
            session["messages"] = [note, *messages]  # nothing dropped, the summary first
        elif self.fault == "lose_summary":
            session["messages"] = messages[cut:]
        else:
            session["messages"] = [note, *messages[cut:]]
        return True

    async def shutdown(self) -> None:
        self._save()


def _text(message: dict[str, Any]) -> str:
    calls = message.get("tool_calls") or []
    return str(message.get("content") or "") + "".join(
        c["function"]["name"].removeprefix(PREFIX) + _compact_json(c["function"]["arguments"])
        for c in calls
    )


def _compact_json(arguments: str) -> str:
    """Arguments as the reference harness counts them (compact JSON, UTF-8)."""
    return json.dumps(json.loads(arguments or "{}"), separators=(",", ":"), ensure_ascii=False)


def _tokens(message: dict[str, Any]) -> int:
    """The reference harness's estimate: ``ceil(chars / 4)`` (tool names unprefixed)."""
    return -(-len(_text(message)) // 4)


if __name__ == "__main__":
    anyio.run(serve_stdio, ToyAgent())
