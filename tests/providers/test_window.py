"""What servers say about their context window (`continuity.providers.window`), in the
shapes vLLM, OpenRouter and llama.cpp's own server use; a server that says
nothing, or wants a key, reports nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from continuity.providers.window import ServerWindow, server_window


def _server(routes: dict[str, tuple[int, Any]]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        assert "authorization" not in request.headers  # the question carries no key
        status, body = routes.get(request.url.path, (404, {"error": "no route"}))
        return httpx.Response(status, json=body)

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("routes", "expected"),
    [
        (
            {"/v1/models": (200, {"data": [{"id": "m", "max_model_len": 32768}]})},
            ServerWindow(32768, "GET http://h:1/v1/models max_model_len"),
        ),
        (
            {"/v1/models": (200, {"data": [{"id": "x"}, {"id": "m", "context_length": 8000}]})},
            ServerWindow(8000, "GET http://h:1/v1/models context_length"),
        ),
        (
            {
                "/v1/models": (200, {"data": [{"id": "m"}]}),
                "/props": (200, {"default_generation_settings": {"n_ctx": 4096}}),
            },
            ServerWindow(4096, "GET http://h:1/props n_ctx"),
        ),
        ({"/v1/models": (200, {"data": [{"id": "m", "owned_by": "me"}]})}, None),
        ({"/v1/models": (401, {"error": "key required"})}, None),
        ({"/v1/models": (200, {"data": [{"id": "m", "max_model_len": "big"}]})}, None),
    ],
    ids=["vllm", "openrouter", "llama-server", "llama-cpp-python", "auth", "not a number"],
)
def test_the_window_a_server_reports(
    routes: dict[str, tuple[int, Any]], expected: ServerWindow | None
) -> None:
    assert server_window("http://h:1/v1", "m", transport=_server(routes)) == expected


def test_a_server_that_is_not_there_reports_nothing() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    assert server_window("http://h:1/v1", "m", transport=httpx.MockTransport(refuse)) is None
