"""What a real server does that the project's own stand-in used to hide, played by the
stand-in over real HTTP on 127.0.0.1: an output cap the server ignores, a request over
the context window (refused, or an empty stream as llama-cpp-python answers it), a
server that says nothing until the client's timeout, and the attempt log that counts
every send."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import anyio
import pytest

from continuity.errors import ProviderError
from continuity.messages import ModelRequest, UserMessage
from continuity.providers.attempts import summarize_attempts
from continuity.providers.costcap import CostCap, RateCard, RateTier
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.protocol import complete
from continuity.providers.real import make_provider
from continuity.servers.wire import Faults, WireServer, serve_in_thread

MODEL = "openai-codex:gpt-6-mini"
CARD = RateCard(base=RateTier(input="0.25", output="2", cache_read="0.025", cache_write="0.25"))


def _request(words: int = 8) -> ModelRequest:
    return ModelRequest(
        session_id="s",
        provider="openai-chat",
        model="local-model",
        system="You are careful.",
        messages=(UserMessage("order number " * words + "?"),),
    )


def _spec(url: str, tmp_path: Path, **extra: object) -> EndpointSpec:
    values: dict[str, object] = {
        "kind": "openai-chat",
        "base_url": url + "/v1",
        "model": "local-model",
        "credentials_path": "",
        "max_output_tokens": 16,
        "max_retries": 0,
        "attempt_log": str(tmp_path / "attempts.jsonl"),
        "catalog_ref": MODEL,
        **extra,
    }
    return EndpointSpec(**values)  # type: ignore[arg-type]


async def _ask(spec: EndpointSpec, request: ModelRequest) -> object:
    async with make_provider(spec) as provider:
        return await complete(provider, request)


@pytest.fixture
def ignoring() -> Iterator[tuple[WireServer, str]]:
    app = WireServer(faults=Faults(ignore_output_cap=True))
    with serve_in_thread(app) as url:
        yield app, url


def test_a_server_that_ignores_the_cap_is_stopped_and_the_cost_cap_holds(
    ignoring: tuple[WireServer, str], tmp_path: Path
) -> None:
    """The stream is cut after more pieces than the cap allows tokens; the attempt's hold
    is retained (its output is unknown), so the account stays within its cap."""
    _, url = ignoring
    path = tmp_path / "cap.sqlite3"
    CostCap.create(path, cap=Decimal("0.01"), rates={MODEL: CARD}, invocation="i").close()
    spec = _spec(url, tmp_path, cost_account=str(path), cost_invocation="i")
    with pytest.raises(ProviderError) as stopped:
        anyio.run(_ask, spec, _request())
    assert stopped.value.code == "provider_output_cap_ignored"
    assert stopped.value.stops_admission
    assert "at most 16 tokens" in stopped.value.message
    account = CostCap.open(path, "check")
    try:
        totals = account.totals()
    finally:
        account.close()
    assert Decimal(totals.committed) <= Decimal("0.01")
    assert totals.retained_calls == 1 and totals.settled_calls == 0


def test_a_reply_over_the_cap_by_its_usage_is_caught_too(tmp_path: Path) -> None:
    """A server that sends its whole reply as one piece is caught by its reported usage."""
    import httpx

    def handler(request: httpx.Request) -> httpx.Response:
        chunks = [
            '{"choices":[{"index":0,"delta":{"content":"' + "word " * 40 + '"}}]}',
            '{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":50}}',
            "[DONE]",
        ]
        body = "".join(f"data: {c}\n\n" for c in chunks)
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    spec = _spec("http://127.0.0.1:9", tmp_path)
    provider = make_provider(spec, transport=httpx.MockTransport(handler))

    async def ask() -> None:
        async with provider:
            await complete(provider, _request())

    with pytest.raises(ProviderError) as stopped:
        anyio.run(ask)
    assert stopped.value.code == "provider_output_cap_ignored"
    assert "the reply used 50" in stopped.value.message


@pytest.mark.parametrize("empty_stream", [False, True], ids=["refused", "empty stream"])
def test_a_request_over_the_window_is_provider_context_exceeded(
    tmp_path: Path, empty_stream: bool
) -> None:
    """Refused with a 400 (vLLM), or streamed empty (llama-cpp-python, asked again without
    streaming to learn why): either way the error names the size and keeps the server's
    own words."""
    app = WireServer(context_window=300, faults=Faults(overflow_empty_stream=empty_stream))
    with serve_in_thread(app) as url, pytest.raises(ProviderError) as refused:
        anyio.run(_ask, _spec(url, tmp_path), _request(words=400))
    error = refused.value
    assert error.code == "provider_context_exceeded"
    assert "maximum context length is 300 tokens" in error.message
    assert "the request (about" in error.message
    assert len(app.calls) == (2 if empty_stream else 1)
    summary = summarize_attempts(tmp_path / "attempts.jsonl")
    assert summary is not None
    assert summary.retried_after == ({"empty_stream": 1} if empty_stream else {})
    assert summary.requests == 1 and summary.sends == len(app.calls)


def test_an_empty_stream_that_fits_is_answered_by_the_second_ask(tmp_path: Path) -> None:
    """A stream that ends before any event, then a non-streamed answer: the call
    completes, and the attempt log shows the retry."""
    import httpx

    seen: list[bool] = []

    def handler(request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        seen.append(bool(body.get("stream")))
        if body.get("stream"):
            return httpx.Response(200, text="", headers={"content-type": "text/event-stream"})
        document = {
            "model": "served",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "TSO-1"}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
        }
        return httpx.Response(200, json=document)

    spec = _spec("http://127.0.0.1:9", tmp_path)
    provider = make_provider(spec, transport=httpx.MockTransport(handler))

    async def ask() -> object:
        async with provider:
            return await complete(provider, _request())

    done = anyio.run(ask)
    assert seen == [True, False]
    assert done.message.text == "TSO-1" and done.usage.output == 3  # type: ignore[attr-defined]
    summary = summarize_attempts(tmp_path / "attempts.jsonl")
    assert summary is not None and summary.retries == 1 and summary.sends == 2


def test_a_server_that_says_nothing_times_out_and_is_not_resent(tmp_path: Path) -> None:
    app = WireServer(faults=Faults(hang_from=1))
    with serve_in_thread(app) as url:
        spec = _spec(url, tmp_path, timeout=1.0, max_retries=3)
        with pytest.raises(ProviderError) as timed_out:
            anyio.run(_ask, spec, _request())
        calls = len(app.calls)
    assert timed_out.value.code == "provider_timeout"
    assert (
        "not re-sent" in timed_out.value.message and "--request-timeout" in timed_out.value.message
    )
    assert calls == 1
    summary = summarize_attempts(tmp_path / "attempts.jsonl")
    assert summary is not None and summary.timed_out == 1 and summary.retries == 0


def test_a_rate_limited_send_is_a_counted_retry(tmp_path: Path) -> None:
    app = WireServer(faults=Faults(rate_limit_first=1, retry_after="0"))
    with serve_in_thread(app) as url:
        anyio.run(_ask, _spec(url, tmp_path, max_retries=2), _request())
    summary = summarize_attempts(tmp_path / "attempts.jsonl")
    assert summary is not None
    assert (summary.sends, summary.requests, summary.retried_after) == (2, 1, {"http_429": 1})


def test_a_loopback_endpoint_needs_no_credentials_file(tmp_path: Path) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        anyio.run(_ask, _spec(url, tmp_path), _request())
    assert app.calls and "authorization" not in str(app.calls[0][1]).lower()


def test_an_ignored_cap_is_a_fact_about_the_endpoint(
    ignoring: tuple[WireServer, str], tmp_path: Path
) -> None:
    """Through the call cache (as a probe calls), the endpoint that ignored its cap is
    recorded in the store; reader readiness then calls its output cap unknown."""
    from continuity.plan.readiness import reader_readiness
    from continuity.providers.cache import CachedProvider
    from continuity.providers.endpoint_facts import cap_ignored
    from continuity.store import Store

    _, url = ignoring
    store = Store(tmp_path / "store")
    spec = _spec(url, tmp_path)

    async def ask() -> None:
        async with make_provider(spec) as inner:
            cached = CachedProvider(inner, spec, store, repeat=1, role="answer")
            await complete(cached, _request())

    with pytest.raises(ProviderError):
        anyio.run(ask)
    seen = cap_ignored(store, spec.base_url, spec.model)
    assert seen is not None and "at most 16 tokens" in seen
    readiness = reader_readiness(
        "openai:local-model",
        None,
        turns_per_slot=1,
        output_tokens_per_turn=16,
        peak_input_tokens=10,
        input_tokens_per_slot=10,
        ignored_cap=seen,
    )
    assert readiness.output_cap.status == "unknown"
    assert "provider_output_cap_ignored" in readiness.output_cap.detail


def test_identical_bodies_of_separate_requests_are_not_retries(tmp_path: Path) -> None:
    """A plan's repeats send byte-identical bodies on purpose: two requests, no retry."""
    app = WireServer()
    with serve_in_thread(app) as url:
        for _ in range(2):
            anyio.run(_ask, _spec(url, tmp_path), _request())
    summary = summarize_attempts(tmp_path / "attempts.jsonl")
    assert summary is not None
    assert (summary.sends, summary.requests, summary.retries) == (2, 2, 0)
