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

from continuity.servers.asgi import MAX_BODY
from continuity.servers.fixture import frozen_records
from continuity.servers.model_proxy import MAIN, ModelProxy, replay_signature
from continuity.servers.proxy_script import (
    ProxyStep,
    WireMessage,
    WireRequest,
    check_request,
    drop_steer,
    one_call_each,
    proxy_script,
    queue_steer,
)
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


_OPENED: list[openai.OpenAI] = []  # closed after each test (`_close_clients`)


def sdk_client(base_url: str) -> openai.OpenAI:
    """The OpenAI SDK's client on the proxy, closed when the test ends: an unclosed
    client's pooled socket would be collected, and reported, during some later test."""
    client = openai.OpenAI(base_url=base_url, api_key="dummy", max_retries=0)
    _OPENED.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPENED:
        _OPENED.pop().close()


class ToyAgent:
    """A minimal outside agent: one growing message list, tools answered from the
    trace's frozen outputs in call order, the trace's steers added after their call's
    result. Faults: drop the steers, a timestamp in the system prompt. With `queue` (the
    proxy's `steer_delivered`), steers are queued instead: told to the proxy, kept in
    `later` for the caller to send as turns of their own. With `parallel` False, every
    request sets ``parallel_tool_calls: false``."""

    def __init__(self, base_url: str, trace: ReplayTrace, **faults: Any) -> None:
        self.client = sdk_client(base_url)
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
        self.later: list[str] = []
        self.replies: list[dict[str, Any]] = []

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
            self.replies.append(reply)
            if not reply.get("tool_calls"):
                return str(reply.get("content") or "")
            steer = None
            for call in reply["tool_calls"]:
                self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                      "content": self.outputs[self.calls]})  # fmt: skip
                steer = self.steers.get(self.calls, steer)
                self.calls += 1
            if steer is not None and "queue" in self.faults:
                self.faults["queue"](steer, "queued")
                self.later.append(steer)
            elif steer is not None and not self.faults.get("drop_steer"):
                self.messages.append({"role": "user", "content": steer})

    def _complete(
        self, messages: list[dict[str, Any]], stream: bool, tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": MAIN, "messages": messages, "tools": tools}
        if "parallel" in self.faults:
            kwargs["parallel_tool_calls"] = self.faults["parallel"]
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
    client = sdk_client(base)
    side = {"model": "gpt-side", "messages": [{"role": "user", "content": "title this chat"}]}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(**side)  # type: ignore[call-overload]
    assert caught.value.code == "replay_unclassified_call"
    assert app.facts[-1].role == "unclassified" and app.remaining == len(proxy_script(TRACE))
    app.forward()  # at the probe too: a side call is never sent to the reader
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(**side)  # type: ignore[call-overload]
    assert caught.value.code == "replay_unclassified_call" and app.facts[-1].mode == "refused"


def test_only_the_token_path_on_a_loopback_host_is_served(proxy: tuple[ModelProxy, str]) -> None:
    app, base = proxy
    root = base.split(f"/{app.token}/")[0]
    assert httpx.get(root + "/v1/models", timeout=10).status_code == 404
    assert httpx.get(base + "/models", timeout=10).json()["data"][0]["id"] == MAIN
    for host in ("evil.example", "localhost.evil.example", "127.0.0.1.nip.io"):
        spoofed = httpx.get(base + "/models", headers={"host": host}, timeout=10)
        assert spoofed.status_code == 403, host
    bodies = (
        b"{",
        b"[1]",
        b'{"messages": [{"role": "assistant", "tool_calls": 5}]}',
        b'{"messages": [], "tools": 3}',
        b'{"messages": [], "tools": [{"function": 7}]}',
        b'{"messages": [{"role": "assistant", "tool_calls": [{"function": "x"}]}]}',
    )
    for body in bodies:
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


def test_a_deep_or_huge_body_is_refused_with_its_limit_never_a_traceback(
    proxy: tuple[ModelProxy, str],
) -> None:
    app, base = proxy
    deep = httpx.post(base + "/chat/completions", content=b"[" * 100_000 + b"]" * 100_000,
                      timeout=30)  # fmt: skip
    assert deep.status_code == 400
    error = json.loads(deep.text)["error"]
    assert error["code"] == "proxy_request_invalid" and "deeper than 64" in error["message"]
    huge = httpx.post(base + "/chat/completions", content=b" " * (MAX_BODY + 1), timeout=60)
    error = json.loads(huge.text)["error"]
    assert huge.status_code == 413 and error["code"] == "proxy_request_invalid"
    assert f"{MAX_BODY:,}-byte limit" in error["message"]
    assert app.facts == []


def test_host_and_token_are_checked_before_the_body_is_read() -> None:
    """The app itself, called as uvicorn calls it: a request to a wrong host or path is
    answered without one read of its body."""
    app = ModelProxy(proxy_script(TRACE))
    reads: list[int] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        reads.append(1)
        return {"type": "http.request", "body": b" " * 1024, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    for host, path, status in ((b"evil.example", f"/{app.token}/v1/chat/completions", 403),
                               (b"127.0.0.1:9", "/v1/chat/completions", 404)):  # fmt: skip
        reads.clear()
        sent.clear()
        scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"host", host)]}
        anyio.run(app, scope, receive, send)
        assert reads == [] and sent[0]["status"] == status


def _queued_replay(proxy: tuple[ModelProxy, str], *, send_on: bool) -> ToyAgent:
    """Replay the trace with a client that takes its steer queued: it sends the steer on
    as its next owner turn, or (`send_on` False) drops it."""
    app, base = proxy
    agent = ToyAgent(base, TRACE, queue=app.steer_delivered)
    for text in _owner_turns(TRACE):
        agent.turn(text)
        while agent.later:
            later = agent.later.pop(0)
            if send_on:
                agent.turn(later)
    return agent


def test_a_queued_steer_is_answered_as_an_owner_turn_of_its_own(
    proxy: tuple[ModelProxy, str],
) -> None:
    app, _ = proxy
    agent = _queued_replay(proxy, send_on=True)
    assert app.problems == [] and app.remaining == 0
    steer = next(t for _, _, t in iter_turns(TRACE) if isinstance(t, Steer))
    at = next(n for n, m in enumerate(agent.messages) if m.get("content") == steer.text)
    # the held call's result, the interlude (no text, no call: the turn ends), the steer
    assert [m["role"] for m in agent.messages[at - 2 : at + 1]] == ["tool", "assistant", "user"]
    assert not agent.messages[at - 1].get("content") and "tool_calls" not in agent.messages[at - 1]
    steps = [f.step for f in app.facts if f.mode == "script"]
    after = next(s.turn_id for s in proxy_script(TRACE) if s.steers)
    assert steps[steps.index(f"{after}:queued") + 1] == after  # the steer's request: its step


def test_a_queued_steer_never_sent_on_is_a_fidelity_problem(
    proxy: tuple[ModelProxy, str],
) -> None:
    app, _ = proxy
    _queued_replay(proxy, send_on=False)  # queued, then dropped
    assert "replay_fidelity_failed" in {c for c, _ in app.problems}
    assert any("steer" in detail for _, detail in app.problems)


def test_a_rejected_steer_is_no_longer_expected(proxy: tuple[ModelProxy, str]) -> None:
    app, base = proxy
    steer = next(t for _, _, t in iter_turns(TRACE) if isinstance(t, Steer))
    app.steer_delivered(steer.text, "rejected")
    agent = ToyAgent(base, TRACE, drop_steer=True)
    for text in _owner_turns(TRACE):
        agent.turn(text)
    assert app.problems == [] and app.remaining == 0


HARD = trace_named("hard-101")


@pytest.mark.parametrize("parallel", [False, True])
def test_a_step_with_several_calls_is_served_as_the_request_asks(parallel: bool) -> None:
    app = ModelProxy(proxy_script(HARD))
    with serve_in_thread(app) as url:
        agent = ToyAgent(f"{url}/{app.token}/v1", HARD, parallel=parallel)
        for text in _owner_turns(HARD):
            agent.turn(text)
    assert app.problems == [] and app.remaining == 0
    script = proxy_script(HARD)
    widest = max(len(r.get("tool_calls", [])) for r in agent.replies)
    extra = sum(len(s.tool_calls) - 1 for s in script if len(s.tool_calls) > 1)
    assert extra > 0  # the trace has steps with several calls
    assert widest == (2 if parallel else 1)
    assert len(agent.replies) == len(script) + (0 if parallel else extra)


def test_tool_results_may_come_in_any_order() -> None:
    step = ProxyStep(turn_id="a2", text="", results=("first output", "second output"))
    messages = (WireMessage("tool", "second output"), WireMessage("tool", "first output"))
    request = WireRequest(MAIN, "", messages, (), False)
    assert check_request(step, request)[0] == []
    twice = WireRequest(MAIN, "", (messages[0], messages[0]), (), False)
    assert check_request(step, twice)[0] == ["a tool result before a2 is not in the request"]


def test_one_call_per_reply_expects_each_steer_after_its_own_call() -> None:
    calls = (("email_search", {"query": "a"}), ("parcel_track", {"shipment": "b"}))
    step = ProxyStep(turn_id="a1", text="Looking.", tool_calls=calls)
    following = ProxyStep(turn_id="a2", text="Done.", results=("ra", "rb"),
                          steers=("during a", "during b"), during=(0, 1))  # fmt: skip
    first, second, last = one_call_each(step, following)
    assert (first.text, first.tool_calls) == ("Looking.", calls[:1])
    assert (second.text, second.tool_calls, second.steers) == ("", calls[1:], ("during a",))
    assert (last.results, last.steers, last.during) == (("ra", "rb"), ("during b",), (1,))
    assert one_call_each(following, None) == [following]


def test_a_second_queued_steer_joins_the_first() -> None:
    steps = [ProxyStep(turn_id="a2", text="Noted.", results=("r",), steers=("s1", "s2"),
                       during=(0, 0))]  # fmt: skip
    once = queue_steer(steps, "s1")
    assert [(s.turn_id, s.steers, s.interlude) for s in once] == [
        ("a2:queued", ("s2",), True),
        ("a2", ("s1",), False),
    ]
    twice = queue_steer(once, "s2")
    assert [(s.turn_id, s.steers, s.results) for s in twice] == [
        ("a2:queued", (), ("r",)),
        ("a2", ("s1", "s2"), ()),
    ]
    assert queue_steer(twice, "unknown") == twice and drop_steer(twice, "s1")[1].steers == ("s2",)
