"""The model proxy's other wire formats, OpenAI Responses and Anthropic Messages, driven
by the official ``openai`` and ``anthropic`` SDKs the way an outside agent would: a whole
original trace replayed through each (plain, streamed, and through the SDK's stream
helper), then a probe forwarded; one conversation read the same in every format (so the
replay signature is the same); the replies valid for the SDKs' own types; and each
route's refusals in its own error shape, with the proxy's codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import httpx
import openai
import pytest
from anthropic.types import Message, MessageParam, RawMessageStreamEvent
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from continuity.servers.asgi import MAX_BODY
from continuity.servers.fixture import frozen_records
from continuity.servers.model_proxy import AUX, MAIN, ModelProxy, replay_signature
from continuity.servers.proxy_anthropic import MESSAGES, messages_request
from continuity.servers.proxy_chat import Reply
from continuity.servers.proxy_responses import RESPONSES, responses_request
from continuity.servers.proxy_script import ProxyStep, WireRequest, proxy_script, wire_request
from continuity.servers.wire import serve_in_thread
from continuity.traces.schema import OwnerMessage, ReplayTrace, Steer, iter_turns
from continuity.traces.tools import TOOLS as CATALOG_TOOLS
from tests.harness.test_replay import trace_named
from tests.servers.test_model_proxy import ToyAgent

TRACE = trace_named("brightline-return")
PREFIX = "mcp__fixture__"
NAMES = [PREFIX + n for n in CATALOG_TOOLS]
KINDS = ("responses", "anthropic")
MODES = ("plain", "stream", "helper")  # create(), create(stream=True), the stream helper
Call = tuple[str, str, dict[str, Any]]  # (call id, tool name, arguments)

_OPENED: list[openai.OpenAI | anthropic.Anthropic] = []  # closed after each test


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPENED:
        _OPENED.pop().close()


def openai_client(base_url: str) -> openai.OpenAI:
    client = openai.OpenAI(base_url=base_url, api_key="dummy", max_retries=0)
    _OPENED.append(client)
    return client


def anthropic_client(base_url: str) -> anthropic.Anthropic:
    client = anthropic.Anthropic(base_url=base_url, api_key="dummy", max_retries=0)
    _OPENED.append(client)
    return client


def _owner_turns(trace: ReplayTrace) -> list[str]:
    return [t.text for _, _, t in iter_turns(trace) if isinstance(t, OwnerMessage)]


class FormatAgent:
    """The chat test's toy agent, in another format: one growing conversation, tools
    answered from the trace's frozen outputs in call order, each steer added after its
    call's result (``drop_steer``: never). `replies` holds what the SDK parsed: (text,
    calls); `usage` each reply's (input tokens, output tokens). With `parallel`, every
    request says whether a reply may hold several calls."""

    def __init__(self, trace: ReplayTrace, mode: str, **faults: Any) -> None:
        self.outputs = [r.output for r in frozen_records(trace)]
        steer_calls = {
            t.during_call: t.text for _, _, t in iter_turns(trace) if isinstance(t, Steer)
        }
        order = [c.call_id for _, _, t in iter_turns(trace) for c in getattr(t, "tool_calls", ())]
        self.steers = {order.index(c): text for c, text in steer_calls.items()}
        self.mode, self.faults, self.calls = mode, faults, 0
        self.system = "You are a helpful assistant."
        self.replies: list[tuple[str, list[Call]]] = []
        self.usage: list[tuple[int, int]] = []

    def turn(self, text: str) -> str:
        self.user(text)
        while True:
            said, calls = self.complete()
            self.replies.append((said, calls))
            if not calls:
                return said
            steer, results = None, []
            for ident, _, _ in calls:
                results.append((ident, self.outputs[self.calls]))
                steer = self.steers.get(self.calls, steer)
                self.calls += 1
            self.results(results, None if self.faults.get("drop_steer") else steer)

    def user(self, text: str) -> None:
        raise NotImplementedError

    def results(self, results: list[tuple[str, str]], steer: str | None) -> None:
        raise NotImplementedError

    def complete(self) -> tuple[str, list[Call]]:
        raise NotImplementedError


class ResponsesAgent(FormatAgent):
    """Through ``client.responses``: the output items go back as input items."""

    def __init__(self, base_url: str, trace: ReplayTrace, mode: str, **faults: Any) -> None:
        super().__init__(trace, mode, **faults)
        self.client = openai_client(base_url)
        self.input: list[dict[str, Any]] = []

    def user(self, text: str) -> None:
        self.input.append({"role": "user", "content": text})

    def results(self, results: list[tuple[str, str]], steer: str | None) -> None:
        self.input += [{"type": "function_call_output", "call_id": i, "output": o}
                       for i, o in results]  # fmt: skip
        if steer is not None:
            self.user(steer)

    def complete(self) -> tuple[str, list[Call]]:
        kwargs: dict[str, Any] = {
            "model": MAIN,
            "instructions": self.system,
            "input": self.input,
            "tools": [
                {"type": "function", "name": n, "parameters": {"type": "object"}} for n in NAMES
            ],
        }
        if "parallel" in self.faults:
            kwargs["parallel_tool_calls"] = self.faults["parallel"]
        if self.mode == "plain":
            response = self.client.responses.create(**kwargs)
        elif self.mode == "stream":
            response = self._streamed(kwargs)
        else:
            with self.client.responses.stream(**kwargs) as stream:
                for _ in stream:
                    pass
                response = stream.get_final_response()
        assert response.usage is not None and response.status == "completed"
        usage = response.usage
        assert usage.total_tokens == usage.input_tokens + usage.output_tokens
        self.usage.append((usage.input_tokens, usage.output_tokens))
        self.input += [item.model_dump(mode="json", exclude_none=True) for item in response.output]
        calls = [(item.call_id, item.name, json.loads(item.arguments))
                 for item in response.output if item.type == "function_call"]  # fmt: skip
        return response.output_text, calls

    def _streamed(self, kwargs: dict[str, Any]) -> Response:
        """The completed response of a ``stream=True`` request, its deltas checked
        against it."""
        text, arguments, done = "", "", []
        final: Response | None = None
        for event in self.client.responses.create(**kwargs, stream=True):
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.function_call_arguments.delta":
                arguments += event.delta
            elif event.type == "response.output_item.done":
                done.append(event.item)
            elif event.type == "response.completed":
                final = event.response
        assert final is not None and done == final.output and text == final.output_text
        assert arguments == "".join(i.arguments for i in done if i.type == "function_call")
        return final


class AnthropicAgent(FormatAgent):
    """Through ``client.messages``: the content blocks go back as the assistant's."""

    def __init__(self, base_url: str, trace: ReplayTrace, mode: str, **faults: Any) -> None:
        super().__init__(trace, mode, **faults)
        self.client = anthropic_client(base_url)
        self.messages: list[dict[str, Any]] = []

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def results(self, results: list[tuple[str, str]], steer: str | None) -> None:
        blocks: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": i, "content": o} for i, o in results
        ]
        if steer is not None:
            blocks.append({"type": "text", "text": steer})
        self.messages.append({"role": "user", "content": blocks})

    def complete(self) -> tuple[str, list[Call]]:
        kwargs: dict[str, Any] = {
            "model": MAIN,
            "max_tokens": 1024,
            "system": self.system,
            "messages": self.messages,
            "tools": [{"name": n, "input_schema": {"type": "object"}} for n in NAMES],
        }
        if "parallel" in self.faults:
            disable = not self.faults["parallel"]
            kwargs["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": disable}
        if self.mode == "plain":
            message = self.client.messages.create(**kwargs)
        elif self.mode == "stream":
            message = self._streamed(kwargs)
        else:
            with self.client.messages.stream(**kwargs) as stream:
                for _ in stream.text_stream:
                    pass
                message = stream.get_final_message()
        self.usage.append((message.usage.input_tokens, message.usage.output_tokens))
        content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
        self.messages.append({"role": "assistant", "content": content})
        text = "".join(b.text for b in message.content if b.type == "text")
        calls = [(b.id, b.name, dict(b.input)) for b in message.content if b.type == "tool_use"]
        assert message.stop_reason == ("tool_use" if calls else "end_turn")
        return text, calls

    def _streamed(self, kwargs: dict[str, Any]) -> Message:
        """The message a ``stream=True`` request's events build, block by block."""
        started: dict[str, Any] = {}
        blocks: dict[int, dict[str, Any]] = {}
        partial: dict[int, str] = {}
        for event in self.client.messages.create(**kwargs, stream=True):
            if event.type == "message_start":
                started = event.message.model_dump(mode="json")
            elif event.type == "content_block_start":
                blocks[event.index] = event.content_block.model_dump(mode="json")
                partial[event.index] = ""
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                blocks[event.index]["text"] += event.delta.text
            elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                partial[event.index] += event.delta.partial_json
            elif event.type == "content_block_stop" and blocks[event.index]["type"] == "tool_use":
                blocks[event.index]["input"] = json.loads(partial[event.index])
            elif event.type == "message_delta":
                started["stop_reason"] = event.delta.stop_reason
                started["usage"]["output_tokens"] = event.usage.output_tokens
        return Message.model_validate({**started, "content": [blocks[i] for i in sorted(blocks)]})


def _agent(kind: str, url: str, app: ModelProxy, mode: str, **faults: Any) -> FormatAgent:
    """The agent for `kind`, on the proxy at `url`: Responses under ``/<token>/v1``,
    Messages under ``/<token>`` (the anthropic SDK adds ``/v1/messages``)."""
    if kind == "responses":
        return ResponsesAgent(f"{url}/{app.token}/v1", TRACE, mode, **faults)
    return AnthropicAgent(f"{url}/{app.token}", TRACE, mode, **faults)


async def _unknown(request: WireRequest) -> str:
    return "UNKNOWN"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_trace_replays_through_each_format_then_a_probe_is_forwarded(
    kind: str, mode: str
) -> None:
    app = ModelProxy(proxy_script(TRACE), reader=_unknown)
    with serve_in_thread(app) as url:
        agent = _agent(kind, url, app, mode)
        for text in _owner_turns(TRACE):
            agent.turn(text)
        assert app.problems == [] and app.remaining == 0
        script = proxy_script(TRACE)
        assert [said for said, _ in agent.replies] == [step.text for step in script]
        parsed = [[(name, args) for _, name, args in calls] for _, calls in agent.replies]
        assert parsed == [[(PREFIX + t, a) for t, a in step.tool_calls] for step in script]
        facts = [f for f in app.facts if f.mode == "script"]
        assert len(facts) == len(script) and all(f.role == "main" for f in facts)
        assert [f.prefix for f in facts][1:] == ["extends"] * (len(facts) - 1)
        assert sum(f.tool_bytes_sent for f in facts) == sum(f.tool_bytes_seen for f in facts) > 0
        assert [u[0] for u in agent.usage] == [f.input_tokens for f in facts]
        app.forward()
        assert agent.turn("What was the refund amount?") == "UNKNOWN"
    probe = app.facts[-1]
    assert (probe.mode, probe.role, probe.tools_offered) == ("forward", "main", NAMES)
    assert agent.usage[-1] == (probe.input_tokens, probe.output_tokens) and probe.input_tokens > 0


def _replay(kind: str, mode: str = "plain") -> str:
    """The replay signature of the trace's first six owner turns sent in `kind`."""
    app = ModelProxy(proxy_script(TRACE))
    with serve_in_thread(app) as url:
        if kind == "chat":
            chat = ToyAgent(f"{url}/{app.token}/v1", TRACE)
            for text in _owner_turns(TRACE)[:6]:
                chat.turn(text, stream=mode == "stream")
            chat.client.close()
        else:
            agent = _agent(kind, url, app, mode)
            for text in _owner_turns(TRACE)[:6]:
                agent.turn(text)
    assert app.problems == []
    return replay_signature(app.facts)


def test_the_replay_signature_is_the_same_across_replays_and_formats() -> None:
    chat = _replay("chat")
    assert _replay("responses") == _replay("responses") == _replay("responses", "stream") == chat
    assert _replay("anthropic") == _replay("anthropic") == _replay("anthropic", "helper") == chat


def test_one_conversation_reads_the_same_in_every_format() -> None:
    search = json.dumps({"query": "Brightline"})
    chat = {"model": MAIN, "parallel_tool_calls": False, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find the order."},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "email_search",
                                                          "arguments": search}},
            {"id": "c2", "type": "function", "function": {"name": "parcel_track",
                                                          "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "order 41"},
        {"role": "tool", "tool_call_id": "c2", "content": "in transit"},
        {"role": "user", "content": "Only the order."}],
        "tools": [{"type": "function", "function": {"name": n}}
                  for n in ("email_search", "parcel_track")]}  # fmt: skip
    responses = {"model": MAIN, "parallel_tool_calls": False, "instructions": "Be brief.",
        "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Find the order."}]},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
        {"type": "function_call", "call_id": "c1", "name": "email_search", "arguments": search},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c2", "name": "parcel_track", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "order 41"},
        {"type": "function_call_output", "call_id": "c2", "output": "in transit"},
        {"role": "user", "content": "Only the order."}],
        "tools": [{"type": "function", "name": n, "parameters": {}}
                  for n in ("email_search", "parcel_track")]}  # fmt: skip
    messages = {"model": MAIN, "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True}, "messages": [
        {"role": "user", "content": "Find the order."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "c1", "name": "email_search", "input": json.loads(search)},
            {"type": "tool_use", "id": "c2", "name": "parcel_track", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "order 41"},
            {"type": "tool_result", "tool_use_id": "c2",
             "content": [{"type": "text", "text": "in transit"}]},
            {"type": "text", "text": "Only the order."}]}],
        "tools": [{"name": n, "input_schema": {"type": "object"}}
                  for n in ("email_search", "parcel_track")]}  # fmt: skip
    read = wire_request(chat)
    assert responses_request(responses) == read == messages_request(messages)
    assert [m.role for m in read.messages] == ["user", "assistant", "tool", "tool", "user"]
    assert read.parallel_tool_calls is False and read.system == "Be brief."
    alone = responses_request({"input": "hi", "stream": True})
    assert (alone.messages[0].role, alone.messages[0].text, alone.stream) == ("user", "hi", True)


LOOKING = ProxyStep(turn_id="t1", text="Looking.",
                    tool_calls=(("email_search", {"query": "Brightline"}),
                                ("parcel_track", {"shipment": "PW-1"})))  # fmt: skip
DONE = ProxyStep(turn_id="t2", text="Done.", results=("r0", "r1"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("parallel", [True, False])
def test_text_and_several_calls_in_one_reply_parse_or_go_one_by_one(
    kind: str, mode: str, parallel: bool
) -> None:
    app = ModelProxy([LOOKING, DONE])
    with serve_in_thread(app) as url:
        agent = _agent(kind, url, app, mode, parallel=parallel)
        agent.outputs, agent.steers = ["r0", "r1"], {}
        assert agent.turn("Find the order.") == "Done."
    assert app.problems == [] and app.remaining == 0
    got = [(said, [(name, args) for _, name, args in calls]) for said, calls in agent.replies]
    first, second = [(PREFIX + t, a) for t, a in LOOKING.tool_calls]
    if parallel:
        assert got == [("Looking.", [first, second]), ("Done.", [])]
    else:  # one call per reply: the request said so
        assert got == [("Looking.", [first]), ("", [second]), ("Done.", [])]
    ids = [ident for _, calls in agent.replies for ident, _, _ in calls]
    assert len(set(ids)) == len(ids) == 2


_REPLIES: list[Reply] = [
    {"text": "Looking.", "calls": [("call_0_0", "email_search", {"query": "x"}),
                                   ("call_0_1", "parcel_track", {})], "usage": (40, 2)},
    {"text": "", "calls": [("call_1_0", "web_fetch", {"url": "https://a.example"})],
     "usage": (50, 0)},
    {"text": "", "calls": [], "usage": (9, 0)},  # an interlude, or an aux answer
]  # fmt: skip


@pytest.mark.parametrize("reply", _REPLIES)
def test_documents_and_events_are_valid_for_the_sdk_types(reply: Reply) -> None:
    Response.model_validate(RESPONSES.document(MAIN, reply))
    Message.model_validate(MESSAGES.document(MAIN, reply))
    events = RESPONSES.events(MAIN, reply)
    stream: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
    assert [stream.validate_json(data).type for _, data in events] == [k for k, _ in events]
    numbers = [json.loads(data)["sequence_number"] for _, data in events]
    assert numbers == list(range(len(events)))
    raw: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)
    kinds = [(kind, raw.validate_json(data).type) for kind, data in MESSAGES.events(MAIN, reply)
             if kind != "ping"]  # fmt: skip
    assert all(kind == parsed for kind, parsed in kinds)
    assert kinds[0][0] == "message_start" and kinds[-1][0] == "message_stop"


@pytest.fixture
def served() -> Iterator[tuple[ModelProxy, str]]:
    app = ModelProxy(proxy_script(TRACE), reader=_unknown)
    with serve_in_thread(app) as url:
        yield app, f"{url}/{app.token}"


def test_each_route_refuses_bad_input_in_its_own_shape_with_the_code(
    served: tuple[ModelProxy, str],
) -> None:
    app, root = served
    responses = openai_client(root + "/v1")
    with pytest.raises(openai.BadRequestError) as refused:
        responses.responses.create(model=MAIN, input="hi", previous_response_id="resp_1")
    assert refused.value.code == "proxy_request_invalid"
    assert "previous_response_id" in refused.value.message
    body: dict[str, Any] = {"model": MAIN, "max_tokens": 8, "messages": "hi"}
    bad = httpx.post(root + "/v1/messages", json=body, headers={"x-api-key": "dummy"}, timeout=10)
    assert bad.status_code == 400 and bad.json()["type"] == "error"
    error = bad.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "proxy_request_invalid")
    assert "messages is not a list" in error["message"]
    messages = anthropic_client(root)
    with pytest.raises(anthropic.BadRequestError) as caught:
        messages.messages.create(**body)
    assert "proxy_request_invalid" in caught.value.message
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["code"] == "proxy_request_invalid"
    for route in ("/responses", "/messages"):
        deep = httpx.post(root + "/v1" + route, content=b"[" * 100_000 + b"]" * 100_000,
                          timeout=30)  # fmt: skip
        assert deep.status_code == 400 and "deeper than 64" in deep.text, route
        assert json.loads(deep.text)["error"]["code"] == "proxy_request_invalid", route
    huge = httpx.post(root + "/v1/messages", content=b" " * (MAX_BODY + 1), timeout=60)
    assert huge.status_code == 413
    assert json.loads(huge.text)["error"]["type"] == "request_too_large"
    assert app.facts == []  # nothing it could not read is recorded as a request


def test_a_replay_refusal_keeps_its_status_and_code_in_each_format(
    served: tuple[ModelProxy, str],
) -> None:
    app, root = served
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client(root + "/v1").responses.create(model="gpt-side", input="title this chat")
    assert refused.value.code == "replay_unclassified_call"
    with pytest.raises(anthropic.BadRequestError) as caught:
        anthropic_client(root).messages.create(
            model="claude-side",
            max_tokens=8,
            messages=[{"role": "user", "content": "title this chat"}],
        )
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["code"] == "replay_unclassified_call"
    assert [f.role for f in app.facts] == ["unclassified", "unclassified"]
    assert app.remaining == len(proxy_script(TRACE))


def test_the_anthropic_sdk_on_the_v1_base_url_and_its_headers_are_served(
    served: tuple[ModelProxy, str],
) -> None:
    app, root = served
    ask: list[MessageParam] = [{"role": "user", "content": "title this chat"}]
    on_v1 = anthropic_client(root + "/v1").messages.create(model=AUX, max_tokens=8, messages=ask)
    assert (on_v1.content[0].type, on_v1.stop_reason) == ("text", "end_turn")
    headers = {"x-api-key": "continuity-dummy-key", "anthropic-version": "2023-06-01"}
    body = {"model": AUX, "max_tokens": 8, "messages": ask}
    plain = httpx.post(root + "/v1/messages", json=body, headers=headers, timeout=10)
    assert plain.status_code == 200 and plain.json()["type"] == "message"
    assert [f.mode for f in app.facts] == ["canned", "canned"]


def test_host_and_token_are_checked_before_the_body_is_read_on_every_route() -> None:
    app = ModelProxy(proxy_script(TRACE))
    reads: list[int] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        reads.append(1)
        return {"type": "http.request", "body": b" " * 1024, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    for route in ("/responses", "/messages"):
        for host, path, status in ((b"evil.example", f"/{app.token}/v1{route}", 403),
                                   (b"127.0.0.1:9", f"/v1{route}", 404)):  # fmt: skip
            reads.clear()
            sent.clear()
            scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"host", host)]}
            anyio.run(app, scope, receive, send)
            assert reads == [] and sent[0]["status"] == status, (route, host)
