"""The wire stand-in refuses what real servers refuse: bodies their request models
reject (as llama.cpp's server rejects ``"content": null`` beside tool calls), requests
over the context window it lists (as vLLM does), and it can play a server that ignores
the output cap."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from continuity.servers.wire import Faults, WireServer, serve_in_thread

TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "ConversationHistory", "arguments": "{}"},
}


@pytest.fixture
def strict() -> Iterator[tuple[WireServer, str]]:
    app = WireServer(model="local-model", context_window=2_000)
    with serve_in_thread(app) as url:
        yield app, url + "/v1"


def _chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "local-model", "stream": True, "messages": list(messages), **extra}


def test_null_content_beside_tool_calls_is_refused_as_llama_cpp_refuses_it(
    strict: tuple[WireServer, str],
) -> None:
    app, url = strict
    body = _chat(
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "result"},
    )
    response = httpx.post(f"{url}/chat/completions", json=body, timeout=10)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "llama-cpp-python" in error["message"] and "content" in error["message"]
    assert app.refused and app.refused[0][0].endswith("/chat/completions")
    # The same turn with "content": "" is served.
    body["messages"][1]["content"] = ""
    assert httpx.post(f"{url}/chat/completions", json=body, timeout=10).status_code == 200


def test_the_window_is_listed_as_vllm_lists_it(strict: tuple[WireServer, str]) -> None:
    _, url = strict
    (entry,) = httpx.get(f"{url}/models", timeout=10).json()["data"]
    assert entry["max_model_len"] == 2_000


def test_a_request_over_the_window_is_refused_with_the_servers_words(
    strict: tuple[WireServer, str],
) -> None:
    app, url = strict
    body = _chat({"role": "user", "content": "word " * 2_000}, max_tokens=100)
    response = httpx.post(f"{url}/chat/completions", json=body, timeout=10)
    assert response.status_code == 400
    assert "maximum context length is 2000 tokens" in response.json()["message"]
    assert app.refused[-1] == ("/v1/chat/completions", ["context window"])


@pytest.mark.parametrize(("ignore", "capped"), [(False, True), (True, False)])
def test_the_output_cap_is_honoured_unless_the_fault_ignores_it(ignore: bool, capped: bool) -> None:
    app = WireServer(faults=Faults(ignore_output_cap=ignore))
    with serve_in_thread(app) as url:
        body = {
            "model": "m",
            "max_tokens": 3,
            "messages": [{"role": "user", "content": "What is the order number?"}],
        }
        reply = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=10).json()
    assert (reply["usage"]["completion_tokens"] <= 3) is capped
    if ignore:
        assert reply["usage"]["completion_tokens"] >= 9


def test_the_command_line_takes_the_window_and_the_fault() -> None:
    from continuity.servers.wire_options import parse_arguments

    args = parse_arguments(["--context-window", "4096", "--ignore-output-cap"])
    assert args.context_window == 4096 and args.ignore_output_cap is True
    from continuity.errors import UsageError

    with pytest.raises(UsageError) as refused:
        parse_arguments(["--context-window", "lots"])
    assert refused.value.code == "option_invalid" and refused.value.location == "--context-window"
