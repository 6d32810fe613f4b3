"""Real providers against the loopback wire server: formats, usage, retries, refusals.

The official `openai` and `anthropic` SDKs parse the loopback server's streams first,
which proves the fixtures speak the real wire formats the providers are tested on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx
import msgspec
import openai
import pytest

from continuity.errors import ProviderError
from continuity.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCallRequest,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from continuity.providers.anthropic import anthropic_usage
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.http import model_slot, retry_delay
from continuity.providers.openai import openai_usage
from continuity.providers.protocol import Completed, complete
from continuity.providers.real import make_provider
from continuity.servers.wire import Faults, WireServer, serve_in_thread
from tests.conftest import Closer

KINDS = ("openai-chat", "openai-responses", "anthropic")
HISTORY = ToolDefinition(
    "ConversationHistory",
    "search retained records",
    {"type": "object", "properties": {"action": {"type": "string"}}},
)


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"api_key": "sk-loopback"}))
    return path


@pytest.fixture
def wire() -> Iterator[tuple[WireServer, str]]:
    app = WireServer(model="served-model-7")
    with serve_in_thread(app) as url:
        yield app, url


def spec_for(kind: str, url: str, credentials: Path, **extra: Any) -> EndpointSpec:
    base = url if kind == "anthropic" else url + "/v1"
    spec = msgspec.convert(
        {
            "kind": kind,
            "base_url": base,
            "model": "local-model",
            "credentials_path": str(credentials),
        },
        EndpointSpec,
    )
    return msgspec.structs.replace(spec, **extra)


def ask(spec: EndpointSpec, request: ModelRequest) -> Completed:
    async def run() -> Completed:
        async with make_provider(spec) as provider:
            return await complete(provider, request)

    return anyio.run(run)


def request(*messages: Message, tools: tuple[ToolDefinition, ...] = ()) -> ModelRequest:
    return ModelRequest(
        session_id="s",
        provider="p",
        model="m",
        system="You are terse.",
        messages=messages,
        tools=tools,
    )


# -- the fixtures speak the real formats ---------------------------------------------


def test_openai_sdk_parses_chat_completions_stream(
    wire: tuple[WireServer, str], close_after: Closer
) -> None:
    _, url = wire
    client = close_after(openai.OpenAI(base_url=url + "/v1", api_key="sk-loopback"))
    tools: Any = [
        {
            "type": "function",
            "function": {"name": "ConversationHistory", "description": "d", "parameters": {}},
        }
    ]
    with client.chat.completions.stream(
        model="local-model",
        messages=[{"role": "user", "content": "where is the key"}],
        tools=tools,
    ) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert calls is not None
    call = calls[0]
    assert call.function.name == "ConversationHistory"
    assert json.loads(call.function.arguments)["action"] == "search"
    with client.chat.completions.stream(
        model="local-model", messages=[{"role": "user", "content": "hello"}]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "UNKNOWN"
    assert final.model == "served-model-7"
    assert final.usage is not None and final.usage.prompt_tokens > 0


def test_openai_sdk_parses_responses_stream(
    wire: tuple[WireServer, str], close_after: Closer
) -> None:
    _, url = wire
    client = close_after(openai.OpenAI(base_url=url + "/v1", api_key="sk-loopback"))
    with client.responses.stream(model="local-model", input="hello") as stream:
        response = stream.get_final_response()
    assert response.output_text == "UNKNOWN"
    assert response.usage is not None and response.usage.input_tokens > 0
    tool: Any = {
        "type": "function",
        "name": "ConversationHistory",
        "description": "d",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }
    with client.responses.stream(
        model="local-model", input="where is the key", tools=[tool]
    ) as stream:
        response = stream.get_final_response()
    assert response.output[0].type == "function_call"


def test_anthropic_sdk_parses_messages_stream(
    wire: tuple[WireServer, str], close_after: Closer
) -> None:
    _, url = wire
    client = close_after(anthropic.Anthropic(base_url=url, api_key="sk-loopback"))
    with client.messages.stream(
        model="local-model", max_tokens=64, messages=[{"role": "user", "content": "hello"}]
    ) as stream:
        message = stream.get_final_message()
    assert message.content[0].type == "text" and message.content[0].text == "UNKNOWN"
    assert message.model == "served-model-7"
    with client.messages.stream(
        model="local-model",
        max_tokens=64,
        messages=[{"role": "user", "content": "where is the key"}],
        tools=[
            {"name": "ConversationHistory", "description": "d", "input_schema": {"type": "object"}}
        ],
    ) as stream:
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "tool_use"


# -- the providers ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_provider_streams_text_tool_calls_and_served_model(
    kind: str, wire: tuple[WireServer, str], credentials: Path
) -> None:
    app, url = wire
    spec = spec_for(kind, url, credentials)
    first = ask(spec, request(UserMessage("where is the spare key"), tools=(HISTORY,)))
    assert first.stop_reason == "tool_use"
    (call,) = first.message.tool_calls
    assert call.name == "ConversationHistory"
    assert call.arguments["action"] == "search"
    assert first.model == "served-model-7"  # the identity the server returned
    assert first.usage.total_input > 0 and first.usage.output > 0
    # The tool round: the result goes back in the format's own shape.
    second = ask(
        spec,
        request(
            UserMessage("where is the spare key"),
            AssistantMessage(
                tool_calls=(ToolCallRequest(call.call_id, call.name, call.arguments),)
            ),
            ToolResultMessage(call.call_id, call.name, '{"hits": []}'),
            tools=(HISTORY,),
        ),
    )
    assert second.stop_reason == "stop" and second.message.text == "UNKNOWN"
    path, body = app.calls[-1]
    if kind == "openai-chat":
        assert path == "/v1/chat/completions"
        assert body["messages"][0] == {"role": "system", "content": "You are terse."}
        assert body["messages"][-1]["role"] == "tool"
        assert body["stream_options"] == {"include_usage": True}
    elif kind == "openai-responses":
        assert path == "/v1/responses" and body["instructions"] == "You are terse."
        assert body["input"][-1]["type"] == "function_call_output"
    else:
        assert path == "/v1/messages"
        assert body["system"] == [
            {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
        ]
        assert body["messages"][-1]["content"][0]["type"] == "tool_result"
        # Breakpoints on the last two content blocks only (three in all, of four allowed).
        blocks = [b for m in body["messages"] for b in m["content"]]
        assert [("cache_control" in b) for b in blocks][-3:] == [False, True, True]
    assert body["stream"] is True


@pytest.mark.parametrize("kind", KINDS)
def test_cached_tokens_are_counted_once(
    kind: str, wire: tuple[WireServer, str], credentials: Path
) -> None:
    _, url = wire
    spec = spec_for(kind, url, credentials)
    long = UserMessage("background " * 400)
    ask(spec, request(long, UserMessage("first")))
    done = ask(spec, request(long, UserMessage("second")))
    # The loopback server reports the shared prefix as cached, each format its own way;
    # normalised, the total input is the request's size, counted once.
    assert done.usage.cache_read > 0
    assert done.usage.total_input < 1_500  # ~4,400 chars / 4, not doubled


def test_an_anthropic_request_without_breakpoints_is_not_cached(
    wire: tuple[WireServer, str],
) -> None:
    # The loopback server caches Anthropic requests only up to cache_control markers,
    # as the API does; the provider's markers are what make the cache work.
    _, url = wire

    def body(question: str) -> dict[str, Any]:
        blocks = [{"type": "text", "text": "background " * 400}, {"type": "text", "text": question}]
        return {
            "model": "local-model",
            "max_tokens": 64,
            "system": "You are terse.",
            "messages": [{"role": "user", "content": blocks}],
            "stream": True,
        }

    usages = []
    with httpx.Client() as client:
        for question in ("first", "second"):
            response = client.post(f"{url}/v1/messages", json=body(question))
            start = next(
                json.loads(line[len("data: ") :])
                for line in response.text.splitlines()
                if line.startswith("data: ") and "message_start" in line
            )
            usages.append(start["message"]["usage"])
    assert usages[1]["cache_read_input_tokens"] == 0
    assert usages[1]["cache_creation_input_tokens"] == 0
    assert usages[1]["input_tokens"] > 1_000


def test_usage_normalisation_by_hand() -> None:
    # OpenAI: cached inside prompt_tokens. Anthropic: cache read and creation on top.
    assert openai_usage(1000, 800, 50) == Usage(input=200, cache_read=800, output=50)
    assert anthropic_usage(
        {
            "input_tokens": 10,
            "cache_creation_input_tokens": 190,
            "cache_read_input_tokens": 800,
            "output_tokens": 50,
        }
    ) == Usage(input=200, cache_read=800, cache_write=190, output=50)


@pytest.mark.parametrize("kind", KINDS)
def test_429_with_retry_after_is_honoured(kind: str, credentials: Path) -> None:
    app = WireServer(faults=Faults(rate_limit_first=1, retry_after="1"))
    with serve_in_thread(app) as url:
        started = time.monotonic()
        done = ask(spec_for(kind, url, credentials), request(UserMessage("hello")))
        elapsed = time.monotonic() - started
    assert done.message.text == "UNKNOWN"
    assert app.count() == 2  # one refusal, one retry
    assert elapsed >= 1.0  # the server asked for a second


def test_retries_are_bounded(credentials: Path) -> None:
    app = WireServer(faults=Faults(rate_limit_first=10, retry_after="0"))
    with serve_in_thread(app) as url, pytest.raises(ProviderError) as caught:
        ask(spec_for("openai-chat", url, credentials, max_retries=2), request(UserMessage("hello")))
    assert caught.value.code == "provider_rate_limited"
    assert app.count() == 3


def test_retry_after_longer_than_allowed_fails_fast(credentials: Path) -> None:
    app = WireServer(faults=Faults(rate_limit_first=1, retry_after="3600"))
    with serve_in_thread(app) as url, pytest.raises(ProviderError) as caught:
        ask(spec_for("openai-chat", url, credentials), request(UserMessage("hello")))
    assert caught.value.code == "provider_rate_limited"
    assert app.count() == 1


@pytest.mark.parametrize(
    ("faults", "code"),
    [
        (Faults(auth_fail_from=1), "provider_auth_failed"),
        (Faults(quota_from=1), "provider_quota_exhausted"),
    ],
)
def test_auth_and_quota_refusals_stop_and_are_not_retried(
    faults: Faults, code: str, credentials: Path
) -> None:
    app = WireServer(faults=faults)
    with serve_in_thread(app) as url, pytest.raises(ProviderError) as caught:
        ask(spec_for("openai-responses", url, credentials), request(UserMessage("hello")))
    assert caught.value.code == code
    assert caught.value.stops_admission
    assert app.count() == 1


@pytest.mark.parametrize("kind", KINDS)
def test_no_retry_once_the_stream_started(kind: str, credentials: Path) -> None:
    app = WireServer(faults=Faults(truncate_from=1))
    with serve_in_thread(app) as url, pytest.raises(ProviderError) as caught:
        ask(spec_for(kind, url, credentials), request(UserMessage("hello there friend")))
    assert caught.value.code in ("provider_stream_interrupted", "provider_stream_invalid")
    assert app.count() == 1  # admitted to billing: never sent twice


def test_unreachable_endpoint_is_retried_then_reported(credentials: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spec = EndpointSpec(
        kind="openai-chat",
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        credentials_path=str(credentials),
        max_retries=1,
    )
    with pytest.raises(ProviderError) as caught:
        ask(spec, request(UserMessage("hello")))
    assert caught.value.code == "provider_unavailable"


@pytest.mark.parametrize("content", ["not json", '{"key": "x"}'])
def test_malformed_credentials_file(
    content: str, tmp_path: Path, wire: tuple[WireServer, str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    app, url = wire
    with pytest.raises(ProviderError) as caught:
        ask(spec_for("openai-chat", url, path), request(UserMessage("hello")))
    assert caught.value.code == "credentials_invalid"
    assert app.count() == 0


def test_retry_delay_reads_headers() -> None:
    assert retry_delay(httpx.Headers({"retry-after": "3"}), 0) == 3.0
    assert retry_delay(httpx.Headers({"retry-after-ms": "250"}), 0) == 0.25
    assert 0 <= retry_delay(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}), 0) < 1
    assert retry_delay(httpx.Headers(), 2) == 2.0


def test_model_slots_limit_concurrency(tmp_path: Path) -> None:
    active = peak = 0

    async def worker() -> None:
        nonlocal active, peak
        async with model_slot(str(tmp_path), "m", 2):
            active += 1
            peak = max(peak, active)
            await anyio.sleep(0.05)
            active -= 1

    async def run() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(worker)

    anyio.run(run)
    assert peak == 2
