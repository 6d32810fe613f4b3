"""Real-mode error codes against the loopback wire server: a provider's non-auth 4xx
(``provider_request_rejected``), a run left incomplete by a failure that does not stop
admission (``run_incomplete``), and ``--repeat`` outside a confirmed plan
(``repeat_unknown``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from continuity.errors import ProviderError, RunIncomplete, UsageError
from continuity.messages import ModelRequest, UserMessage
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.protocol import Completed, complete
from continuity.providers.real import make_provider
from continuity.servers.wire import WireServer, serve_in_thread
from tests.runner.test_real import Rig

KINDS = ("openai-chat", "openai-responses", "anthropic")
PATHS = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
}
TRACE = "brightline-return"
Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


class RejectingWire(WireServer):
    """The loopback server, but the first `reject` requests get a non-auth 4xx, as an
    endpoint answers a request it will not serve (context too long, bad field...)."""

    def __init__(self, *, reject: int, status: int = 400) -> None:
        super().__init__()
        self.reject = reject
        self.status = status
        self.received = 0
        self._counter = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":  # model calls only
            with self._counter:
                self.received += 1
                number = self.received
            if number <= self.reject:
                while (await receive()).get("more_body"):
                    pass
                await self._json(
                    send,
                    self.status,
                    {
                        "error": {
                            "message": "context_length_exceeded: the request is too long",
                            "type": "invalid_request_error",
                        }
                    },
                )
                return
        await super().__call__(scope, receive, send)


def _spec(kind: str, url: str, credentials: Path) -> EndpointSpec:
    return msgspec.convert(
        {
            "kind": kind,
            "base_url": url if kind == "anthropic" else url + "/v1",
            "model": "local-model",
            "credentials_path": str(credentials),
        },
        EndpointSpec,
    )


@pytest.mark.parametrize("status", [400, 404, 413, 422])
@pytest.mark.parametrize("kind", KINDS)
def test_a_non_auth_4xx_is_rejected_once_and_does_not_stop_admission(
    kind: str, status: int, tmp_path: Path
) -> None:
    credentials = tmp_path / "credentials.json"
    credentials.write_text(json.dumps({"api_key": "sk-loopback"}))
    request = ModelRequest(
        session_id="s",
        provider="p",
        model="m",
        system="You are terse.",
        messages=(UserMessage("hello"),),
    )
    app = RejectingWire(reject=1, status=status)
    attempts: list[int] = []

    async def ask(spec: EndpointSpec) -> Completed:
        async with make_provider(spec) as provider:
            try:
                return await complete(provider, request)
            finally:
                attempts.extend(getattr(provider, "attempts", []))

    with serve_in_thread(app) as url, pytest.raises(ProviderError) as caught:
        anyio.run(ask, _spec(kind, url, credentials))
    assert caught.value.code == "provider_request_rejected"
    assert caught.value.location == url + PATHS[kind]
    assert f"HTTP {status}" in caught.value.message
    assert "context_length_exceeded" in caught.value.message  # the endpoint's own words
    assert not caught.value.stops_admission
    assert attempts == [status] and app.received == 1  # never retried


def real_rig(tmp_path: Path, checkout: Path, url: str, **options: Any) -> Rig:
    """A confirmed real plan (one original trace, the native arm, no judge) against
    one loopback openai-chat endpoint: test_real's rig with these options."""
    return Rig(tmp_path, checkout, url, "openai-chat", judge="none", arms="native", **options)


def test_a_rejected_call_leaves_the_run_incomplete_and_admission_open(
    tmp_path: Path, clean_checkout: Path
) -> None:
    # Two probes, each one live turn with one answer call; the first call is rejected.
    app = RejectingWire(reject=1)
    with serve_in_thread(app) as url:
        rig = real_rig(tmp_path, clean_checkout, url)
        with pytest.raises(RunIncomplete) as caught:
            rig.run()
        # The rejection stopped nothing: the second probe was still admitted and asked.
        assert app.received == 2 and app.count() == 1
        app.reject = 0
        resumed = rig.run()
        assert app.received == 3  # only the rejected call again; the other is cached
    error = caught.value
    assert error.code == "run_incomplete"
    assert Path(error.location).resolve() == rig.output.resolve()
    assert "1 of 1 units did not finish" in error.message
    assert "first error: provider_request_rejected: HTTP 400" in error.message
    assert "admission stopped" not in error.message
    assert "2 live turns admitted of 2 planned" in error.message
    [record] = resumed.records
    assert [p.status for p in record.probes] == ["valid", "valid"]
    assert resumed.built == 1


def test_real_repeat_outside_the_confirmed_plan_is_refused(
    tmp_path: Path, clean_checkout: Path
) -> None:
    app = WireServer()
    with serve_in_thread(app) as url:
        rig = real_rig(tmp_path, clean_checkout, url, repeats=2)
        with pytest.raises(UsageError) as caught:
            rig.run(only_repeats=[3])
        assert app.count() == 0
    assert (caught.value.code, caught.value.location) == ("repeat_unknown", "--repeat")
    assert "outside the plan's repeats 1-2" in caught.value.message
    assert not (rig.output / "units").exists()
