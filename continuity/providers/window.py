"""What a server says about its model's context window, asked before any model call.

OpenAI-compatible servers report the window in different places, when they report it:

- vLLM: ``GET /v1/models`` lists ``max_model_len`` on each model;
- OpenRouter: ``context_length`` on each model of ``GET /v1/models``;
- llama.cpp's own server (``llama-server``): ``GET /props`` has
  ``default_generation_settings.n_ctx`` (the window it was started with);
- llama-cpp-python's server and the hosted APIs report none (give ``--context-window``,
  or rely on the price data's window).

The questions carry no credentials (the credentials file is read only by the probe
processes): a server that wants a key for them simply reports nothing. A server that
does not answer within a few seconds reports nothing either; the question never fails
a run.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec

__all__ = ["ServerWindow", "server_window"]

_TIMEOUT = 5.0
_FIELDS = ("max_model_len", "context_length", "context_window")


class ServerWindow(msgspec.Struct, frozen=True):
    """A window the server reported, and where (``GET /v1/models max_model_len`` ...)."""

    tokens: int
    source: str


def _whole(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _from_models(document: Any, model: str, url: str) -> ServerWindow | None:
    entries = document.get("data") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        return None
    dicts = [e for e in entries if isinstance(e, dict)]
    named = [e for e in dicts if e.get("id") == model] or (dicts if len(dicts) == 1 else [])
    for entry in named:
        for field in _FIELDS:
            tokens = _whole(entry.get(field))
            if tokens is not None:
                return ServerWindow(tokens, f"GET {url} {field}")
    return None


def _from_props(document: Any, url: str) -> ServerWindow | None:
    if not isinstance(document, dict):
        return None
    settings = document.get("default_generation_settings")
    for holder in (settings, document):
        if isinstance(holder, dict) and (tokens := _whole(holder.get("n_ctx"))) is not None:
            return ServerWindow(tokens, f"GET {url} n_ctx")
    return None


def _get(client: httpx.Client, url: str) -> Any:
    try:
        response = client.get(url)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return msgspec.json.decode(response.content)
    except msgspec.MsgspecError:
        return None


def server_window(
    base_url: str, model: str, *, transport: httpx.BaseTransport | None = None
) -> ServerWindow | None:
    """The context window the server at `base_url` reports for `model` (None: none)."""
    base = base_url.rstrip("/")
    parts = urlsplit(base)
    root = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    with httpx.Client(transport=transport, timeout=_TIMEOUT) as client:
        models_url = f"{base}/models"
        found = _from_models(_get(client, models_url), model, models_url)
        if found is not None:
            return found
        props_url = f"{root}/props"
        return _from_props(_get(client, props_url), props_url)
