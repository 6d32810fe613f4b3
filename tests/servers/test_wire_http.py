"""The loopback wire stand-in over real HTTP: JSON answers, the model list, latency,
and its command line (``--port``, ``--latency-ms``, coded refusals).

Requests go over 127.0.0.1 with httpx and the official SDKs; the command-line cases run
``python -m continuity.servers.wire`` as a real process.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx
import openai
import pytest

from continuity.servers.wire import Faults, WireServer, serve_in_thread
from tests.conftest import Closer

TOOL_CHAT = {"type": "function", "function": {"name": "ConversationHistory", "parameters": {}}}
TOOL_RESPONSES = {
    "type": "function",
    "name": "ConversationHistory",
    "parameters": {},
    "strict": False,
}
TOOL_ANTHROPIC = {"name": "ConversationHistory", "input_schema": {"type": "object"}}
QUESTION = "Earlier: which colour did Dana pick for the kiln shelves in March?"


@pytest.fixture
def wire() -> Iterator[tuple[WireServer, str]]:
    app = WireServer(model="served-model-7")
    with serve_in_thread(app) as url:
        yield app, url


def _post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url, json=body, timeout=10)


# -- answers as one JSON document -------------------------------------------------------


@pytest.mark.parametrize("stream", [False, None])
def test_chat_without_stream_is_a_json_completion(
    wire: tuple[WireServer, str], stream: bool | None
) -> None:
    _, url = wire
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": QUESTION}]}
    if stream is not None:
        body["stream"] = stream
    response = _post(url + "/v1/chat/completions", body)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert document["object"] == "chat.completion"
    assert document["model"] == "served-model-7"
    assert document["choices"][0]["message"] == {"role": "assistant", "content": "UNKNOWN"}
    assert document["choices"][0]["finish_reason"] == "stop"
    usage = document["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] == 2
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_chat_tool_call_as_json(wire: tuple[WireServer, str]) -> None:
    _, url = wire
    body = {"model": "m", "messages": [{"role": "user", "content": QUESTION}], "tools": [TOOL_CHAT]}
    choice = _post(url + "/v1/chat/completions", body).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "ConversationHistory"
    assert json.loads(call["function"]["arguments"])["action"] == "search"


def test_the_json_and_the_stream_agree(wire: tuple[WireServer, str]) -> None:
    """The streamed Responses answer's final object is the JSON answer (but for time)."""
    _, url = wire
    body: dict[str, Any] = {"model": "m", "input": QUESTION, "tools": [TOOL_RESPONSES]}
    document = _post(url + "/v1/responses", body).json()
    streamed = _post(url + "/v1/responses", {**body, "stream": True}).text
    completed = next(
        json.loads(line.removeprefix("data: "))
        for line in streamed.splitlines()
        if line.startswith("data: ") and "response.completed" in line
    )["response"]
    # the streamed request is longer ("stream": true) and is the second call
    for answer in (document, completed):
        answer["created_at"] = 0
        answer["usage"] = {k: v for k, v in answer["usage"].items() if k.startswith("output")}
        answer["output"][0]["call_id"] = "call"
    assert completed == document
    assert document["output"][0]["type"] == "function_call"


def test_anthropic_without_stream_is_a_json_message(wire: tuple[WireServer, str]) -> None:
    _, url = wire
    body = {
        "model": "m",
        "max_tokens": 64,
        "system": [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": QUESTION}],
    }
    first = _post(url + "/v1/messages", body).json()
    assert first["type"] == "message"
    assert first["content"] == [{"type": "text", "text": "UNKNOWN"}]
    assert first["stop_reason"] == "end_turn"
    assert first["usage"]["cache_creation_input_tokens"] > 0
    second = _post(url + "/v1/messages", body).json()
    assert second["usage"]["cache_read_input_tokens"] > 0  # the same prefix, cached
    tool = _post(url + "/v1/messages", {**body, "tools": [TOOL_ANTHROPIC]}).json()
    assert tool["stop_reason"] == "tool_use"
    assert tool["content"][0]["input"]["action"] == "search"


def test_sdks_read_the_json_answers_and_the_model_list(
    wire: tuple[WireServer, str], close_after: Closer
) -> None:
    app, url = wire
    client = close_after(openai.OpenAI(base_url=url + "/v1", api_key="sk-loopback"))
    completion = client.chat.completions.create(
        model="local-model", messages=[{"role": "user", "content": "hello"}]
    )
    assert completion.choices[0].message.content == "UNKNOWN"
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    response = client.responses.create(model="local-model", input="hello")
    assert response.output_text == "UNKNOWN"
    assert response.usage is not None and response.usage.output_tokens == 2
    assert [m.id for m in client.models.list()] == ["served-model-7"]
    other = close_after(anthropic.Anthropic(base_url=url, api_key="sk-loopback"))
    message = other.messages.create(
        model="local-model", max_tokens=64, messages=[{"role": "user", "content": "hello"}]
    )
    assert message.content[0].type == "text" and message.content[0].text == "UNKNOWN"
    assert message.usage.input_tokens > 0
    assert [m.id for m in other.models.list()] == ["served-model-7"]
    assert app.count() == 3  # listing models is not a model call


def test_models_endpoint_lists_the_served_model(wire: tuple[WireServer, str]) -> None:
    app, url = wire
    response = httpx.get(url + "/v1/models", timeout=10)
    assert response.status_code == 200
    document = response.json()
    assert document["object"] == "list"
    assert [(m["id"], m["object"]) for m in document["data"]] == [("served-model-7", "model")]
    assert httpx.get(url + "/v1/other", timeout=10).status_code == 404
    assert app.count() == 0


def test_a_body_that_is_not_a_json_object_is_refused(wire: tuple[WireServer, str]) -> None:
    app, url = wire
    for content in (b"not json", b"[1, 2]"):
        response = httpx.post(url + "/v1/chat/completions", content=content, timeout=10)
        assert response.status_code == 400
    assert app.count() == 0


def test_a_truncated_json_answer_is_cut(wire: tuple[WireServer, str]) -> None:
    app, url = wire
    app.faults = Faults(truncate_from=1)
    response = _post(url + "/v1/chat/completions", {"model": "m", "messages": []})
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.text)


def test_a_stalled_stream_sends_half_its_events_and_notes_the_stall(tmp_path: Path) -> None:
    """``stall_from``: the endpoint stops mid-stream (the drop-endpoint case kills it
    there); the client has half an answer and no end, and the calls log says so."""
    log = tmp_path / "calls.jsonl"
    app = WireServer(faults=Faults(stall_from=2), log_path=str(log))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with serve_in_thread(app) as url:
        whole = httpx.post(url + "/v1/chat/completions", json=body, timeout=10).text
        with (
            httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=2) as cut,
            pytest.raises(httpx.ReadTimeout),
        ):
            received: list[str] = []
            received.extend(cut.iter_text())
        assert 0 < len("".join(received)) < len(whole)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [sorted(e) for e in entries] == [["body", "in_flight", "path"]] * 2 + [["stalled"]]
    assert entries[-1] == {"stalled": 2}


# -- latency ----------------------------------------------------------------------------


def test_latency_delays_each_call_and_concurrent_calls_overlap() -> None:
    app = WireServer(latency_ms=400)
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}

    async def timed(client: httpx.AsyncClient, url: str, took: list[float]) -> None:
        started = time.perf_counter()
        response = await client.post(url + "/v1/chat/completions", json=body)
        assert response.json()["choices"][0]["message"]["content"] == "UNKNOWN"
        took.append(time.perf_counter() - started)

    async def run(url: str) -> tuple[float, list[float]]:
        took: list[float] = []
        started = time.perf_counter()
        async with httpx.AsyncClient(timeout=10) as client, anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(timed, client, url, took)
        return time.perf_counter() - started, took

    with serve_in_thread(app) as url:
        wall, took = anyio.run(run, url)
        started = time.perf_counter()
        assert httpx.get(url + "/v1/models", timeout=10).status_code == 200
        listing = time.perf_counter() - started
    assert min(took) >= 0.4  # every call waited its latency
    assert wall < 2 * 0.4  # four calls in about one latency, not four
    assert listing < 0.4  # the model list is not a model call
    assert app.peak_in_flight == 4 and app.in_flight == 0


# -- the command line -------------------------------------------------------------------


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "continuity.servers.wire", *args]


@pytest.mark.parametrize(
    ("args", "location"),
    [
        (["--port", "http"], "--port"),
        (["--port", "65536"], "--port"),
        (["--port", "-1"], "--port"),
        (["--latency-ms", "fast"], "--latency-ms"),
        (["--latency-ms", "600001"], "--latency-ms"),
        (["--latency-ms", "1.5"], "--latency-ms"),
        (["--hang-from", "0"], "--hang-from"),
        (["--stall-from", "0"], "--stall-from"),
        (["--stall-from", "two"], "--stall-from"),
        (["--port"], "argv"),
        (["--colour", "red"], "argv"),
    ],
)
def test_bad_options_are_refused_with_a_code(args: list[str], location: str) -> None:
    result = subprocess.run(_command(*args), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # one coded line, no traceback, no usage text
    assert lines[0].startswith("error option_invalid: ")
    assert lines[0].endswith(f"(at {location})")


def test_a_busy_port_is_refused_with_a_code() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = subprocess.run(
            _command("--port", str(port)), capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2
    assert result.stderr.startswith("error port_unavailable: ")
    assert result.stderr.strip().endswith("(at --port)")
    assert "Traceback" not in result.stderr


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _serve_once(*args: str) -> tuple[str, dict[str, Any], float]:
    """Start the stand-in, read its base URL, list its models, time one call; stop it."""
    process = subprocess.Popen(_command(*args), stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("listening "), line
        base = line.removeprefix("listening ")
        models = httpx.get(base + "/models", timeout=10).json()
        started = time.perf_counter()
        httpx.post(
            base + "/chat/completions",
            json={"model": "qwen-local", "messages": [{"role": "user", "content": "hi"}]},
            timeout=10,
        )
        return base, models, time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def test_a_fixed_port_keeps_the_base_url_across_restarts() -> None:
    port = _free_port()
    args = ("--port", str(port), "--model", "qwen-local", "--latency-ms", "300")
    first, models, took = _serve_once(*args)
    second, _, _ = _serve_once(*args)
    assert first == second == f"http://127.0.0.1:{port}/v1"
    assert [m["id"] for m in models["data"]] == ["qwen-local"]
    assert took >= 0.3


def test_a_caller_may_close_the_pipe_after_the_first_line() -> None:
    """Callers read the ``listening`` line and close stdout (the qualification's
    drop-endpoint case does): the stand-in must keep serving, not die writing its second
    line into a closed pipe."""
    process = subprocess.Popen(_command(), stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        base = process.stdout.readline().strip().removeprefix("listening ")
        process.stdout.close()
        time.sleep(0.5)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        answer = httpx.post(base + "/chat/completions", json=body, timeout=10)
        assert answer.status_code == 200 and process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=30)
