"""The model proxy, driven by the official openai SDK the way an outside agent would:
a whole original trace replayed through it (plain and streamed), then a probe
forwarded; and each misbehaviour with its code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import openai
import pytest

from continuity.servers.fixture import frozen_records
from continuity.servers.model_proxy import MAIN, ModelProxy, replay_signature
from continuity.servers.proxy_script import WireRequest, proxy_script
from continuity.servers.wire import serve_in_thread
from continuity.traces.schema import OwnerMessage, ReplayTrace, Steer, iter_turns
from continuity.traces.tools import TOOLS as CATALOG_TOOLS
from tests.harness.test_replay import trace_named

TRACE = trace_named("brightline-return")
TOOLS = list(CATALOG_TOOLS)


def _tools(prefix: str = "mcp__fixture__", drop: str = "") -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": prefix + n, "parameters": {"type": "object"}}}
        for n in TOOLS
        if n != drop
    ]


class ToyAgent:
    """A minimal outside agent: one growing message list, tools answered from the
    trace's frozen outputs in call order, the trace's steers added after their call's
    result. Faults: drop the steers, a timestamp in the system prompt."""

    def __init__(self, base_url: str, trace: ReplayTrace, **faults: Any) -> None:
        self.client = openai.OpenAI(base_url=base_url, api_key="dummy", max_retries=0)
        self.outputs = [r.output for r in frozen_records(trace)]
        steer_calls = {
            t.during_call: t.text for _, _, t in iter_turns(trace) if isinstance(t, Steer)
        }
        order = [c.call_id for _, _, t in iter_turns(trace) for c in getattr(t, "tool_calls", ())]
        self.steers = {order.index(c): text for c, text in steer_calls.items()}
        self.calls = 0
        self.faults = faults
        self.system = "You are a helpful assistant."
        self.messages: list[dict[str, Any]] = []

    def turn(
        self, text: str, *, stream: bool = False, tools: list[dict[str, Any]] | None = None
    ) -> str:
        self.messages.append({"role": "user", "content": text})
        while True:
            system = self.system + (
                f" Now: {self.faults['clock']()}" if "clock" in self.faults else ""
            )
            body = [{"role": "system", "content": system}, *self.messages]
            reply = self._complete(body, stream, _tools() if tools is None else tools)
            self.messages.append(reply)
            if not reply.get("tool_calls"):
                return str(reply.get("content") or "")
            steer = None
            for call in reply["tool_calls"]:
                self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                      "content": self.outputs[self.calls]})  # fmt: skip
                steer = self.steers.get(self.calls, steer)
                self.calls += 1
            if steer is not None and not self.faults.get("drop_steer"):
                self.messages.append({"role": "user", "content": steer})

    def _complete(
        self, messages: list[dict[str, Any]], stream: bool, tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": MAIN, "messages": messages, "tools": tools}
        if not stream:
            message = self.client.chat.completions.create(**kwargs).choices[0].message
            dumped: dict[str, Any] = message.model_dump(exclude_none=True)
            return dumped
        text, calls = "", []
        for chunk in self.client.chat.completions.create(**kwargs, stream=True):
            for choice in chunk.choices:
                text += choice.delta.content or ""
                calls += [c.model_dump(exclude_none=True) for c in choice.delta.tool_calls or ()]
        out: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            out["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        return out


def _owner_turns(trace: ReplayTrace) -> list[str]:
    return [t.text for _, _, t in iter_turns(trace) if isinstance(t, OwnerMessage)]


@pytest.fixture
def proxy() -> Iterator[tuple[ModelProxy, str]]:
    async def reader(request: WireRequest) -> str:
        return "UNKNOWN"

    app = ModelProxy(proxy_script(TRACE), reader=reader)
    with serve_in_thread(app) as url:
        yield app, f"{url}/{app.token}/v1"


@pytest.mark.parametrize("stream", [False, True])
def test_a_trace_replays_through_the_proxy_then_a_probe_is_forwarded(
    proxy: tuple[ModelProxy, str], stream: bool
) -> None:
    app, base = proxy
    agent = ToyAgent(base, TRACE)
    for text in _owner_turns(TRACE):
        agent.turn(text, stream=stream)
    assert app.remaining == 0 and app.problems == []
    script = [f for f in app.facts if f.mode == "script"]
    assert len(script) == len(proxy_script(TRACE)) and all(f.role == "main" for f in script)
    assert [f.prefix for f in script][1:] == ["extends"] * (len(script) - 1)
    assert sum(f.tool_bytes_sent for f in script) == sum(f.tool_bytes_seen for f in script) > 0
    app.forward()
    assert agent.turn("What was the refund amount?", stream=stream) == "UNKNOWN"
    assert app.facts[-1].mode == "forward" and app.facts[-1].role == "main"
    assert app.facts[-1].tools_offered == [t["function"]["name"] for t in _tools()]


def test_two_replays_of_one_trace_have_equal_signatures_unless_a_clock_leaks() -> None:
    def replay(volatile: tuple[str, ...] = (), **faults: Any) -> str:
        app = ModelProxy(proxy_script(TRACE), volatile=volatile)
        with serve_in_thread(app) as url:
            agent = ToyAgent(f"{url}/{app.token}/v1", TRACE, **faults)
            for text in _owner_turns(TRACE)[:6]:
                agent.turn(text)
        return replay_signature(app.facts)

    ticks = iter(range(10_000))
    clock = lambda: f"2026-12-03T06:{next(ticks) % 60:02d}:00Z"  # noqa: E731
    assert replay() == replay()
    assert replay(clock=clock) != replay(clock=clock)  # a timestamp in the system prompt
    stamp = (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",)
    assert replay(stamp, clock=clock) == replay(stamp, clock=clock)  # declared volatile


def test_a_dropped_steer_is_a_fidelity_problem(proxy: tuple[ModelProxy, str]) -> None:
    app, base = proxy
    agent = ToyAgent(base, TRACE, drop_steer=True)
    for text in _owner_turns(TRACE):
        agent.turn(text)
    assert [code for code, _ in app.problems] == ["replay_fidelity_failed"]
    assert "steer" in app.problems[0][1]


def test_a_rewritten_tool_result_is_a_fidelity_problem(proxy: tuple[ModelProxy, str]) -> None:
    app, base = proxy
    agent = ToyAgent(base, TRACE)
    agent.outputs[0] = "[redacted by the agent]"
    for text in _owner_turns(TRACE)[:8]:
        agent.turn(text)
    assert "replay_fidelity_failed" in {c for c, _ in app.problems}
    assert any("tool result" in detail for _, detail in app.problems)


def test_a_reply_needing_a_tool_the_agent_does_not_offer_is_refused(
    proxy: tuple[ModelProxy, str],
) -> None:
    app, base = proxy
    agent = ToyAgent(base, TRACE)
    first_tool = next(c.tool for _, _, t in iter_turns(TRACE) for c in getattr(t, "tool_calls", ()))
    with pytest.raises(openai.BadRequestError) as caught:
        for text in _owner_turns(TRACE):
            agent.turn(text, tools=_tools(drop=first_tool))
    assert caught.value.code == "tools_not_offered"
    assert app.problems[-1][0] == "tools_not_offered"


def test_an_unclassified_side_call_is_refused_never_guessed(proxy: tuple[ModelProxy, str]) -> None:
    app, base = proxy
    client = openai.OpenAI(base_url=base, api_key="dummy", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="gpt-side", messages=[{"role": "user", "content": "title this chat"}]
        )
    assert caught.value.code == "replay_unclassified_call"
    assert app.facts[-1].role == "unclassified" and app.remaining == len(proxy_script(TRACE))


def test_only_the_token_path_on_a_loopback_host_is_served(proxy: tuple[ModelProxy, str]) -> None:
    app, base = proxy
    root = base.split(f"/{app.token}/")[0]
    assert httpx.get(root + "/v1/models", timeout=10).status_code == 404
    assert httpx.get(base + "/models", timeout=10).json()["data"][0]["id"] == MAIN
    for host in ("evil.example", "localhost.evil.example", "127.0.0.1.nip.io"):
        spoofed = httpx.get(base + "/models", headers={"host": host}, timeout=10)
        assert spoofed.status_code == 403, host
    for body in (b"{", b"[1]", b'{"messages": [{"role": "assistant", "tool_calls": 5}]}',
                 b'{"messages": [], "tools": 3}'):  # fmt: skip
        bad = httpx.post(base + "/chat/completions", content=body, timeout=10)
        error = json.loads(bad.text)["error"]
        assert bad.status_code == 400 and error["code"] == "proxy_request_invalid", body
    assert app.facts == []  # nothing it could not read is recorded as a request
    odd = b'{"messages": [{"role": "user", "content": "hi"}], "tools": [{"function": null}]}'
    answered = httpx.post(base + "/chat/completions", content=odd, timeout=10)
    assert answered.status_code == 400  # read, classified, and refused with a code
    assert json.loads(answered.text)["error"]["code"] in (
        "tools_not_offered",
        "replay_fidelity_failed",
    )
    anyio.run(anyio.sleep, 0)
