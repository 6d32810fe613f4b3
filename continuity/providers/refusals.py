"""What a server's refusal means: one coded `ProviderError` per error answer.

Every refusal keeps the server's own message (`SERVER_MESSAGE_LIMIT` characters at
most: the ``error.message`` of a JSON error body, else the body's text), so a user sees
why, not only that. The code says what a runner does next:

- ``provider_auth_failed`` (401/403) and ``provider_quota_exhausted`` (402, or a quota
  or billing error) stop admission;
- ``provider_rate_limited`` (429) and ``provider_unavailable`` (5xx) were retried first;
- ``provider_context_exceeded``: the request does not fit the model's context window.
  Servers say so in a structured field where they have one (OpenAI, vLLM and
  llama-cpp-python: ``code: context_length_exceeded``; llama.cpp's own server:
  ``type: exceed_context_size_error``) and Anthropic only in words (``prompt is too
  long``), so the words of the servers this project was proven against are read too.
  The error names the request's size beside the server's message;
- ``provider_request_rejected``: any other refusal.
"""

from __future__ import annotations

import json
import re
from typing import Any

from continuity.errors import ProviderError

__all__ = [
    "SERVER_MESSAGE_LIMIT",
    "context_refusal",
    "is_context_error",
    "refusal",
    "server_message",
]

SERVER_MESSAGE_LIMIT = 500
_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# The words of a size refusal where a server has no structured field for it: Anthropic
# ("prompt is too long: N tokens > M maximum"), llama.cpp ("exceed context window",
# "exceeds the available context size"), vLLM and OpenAI ("maximum context length").
_CONTEXT_WORDS = re.compile(
    r"maximum context length|context (?:window|size|length)|prompt is too long",
    re.IGNORECASE,
)


def _error_object(body: bytes) -> dict[str, Any]:
    """The ``error`` object of a JSON error body (``{}`` when there is none)."""
    try:
        document = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(document, dict):
        return {}
    error = document.get("error", document)
    return error if isinstance(error, dict) else {"message": str(error)}


def server_message(body: bytes) -> str:
    """The server's own words: ``error.message`` (or ``detail``) of a JSON body, else
    the body's text; at most `SERVER_MESSAGE_LIMIT` characters, on one line."""
    error = _error_object(body)
    text = error.get("message") or error.get("detail")
    if not isinstance(text, str) or not text:
        text = body.decode("utf-8", "replace")
    text = " ".join(text.split())
    if len(text) > SERVER_MESSAGE_LIMIT:
        text = text[: SERVER_MESSAGE_LIMIT - 3] + "..."
    return text or "(no message)"


def is_context_error(body: bytes) -> bool:
    """Whether an error body says the request is over the context window."""
    error = _error_object(body)
    marks = {str(error.get(k) or "") for k in ("code", "type")}
    if marks & _CONTEXT_CODES:
        return True
    return bool(_CONTEXT_WORDS.search(server_message(body)))


def context_refusal(message: str, where: str, request_bytes: int) -> ProviderError:
    """``provider_context_exceeded`` naming the request's size and the server's words."""
    tokens = -(-request_bytes // 4)
    return ProviderError(
        f"the request (about {tokens:,} tokens, {request_bytes:,} bytes) does not fit the "
        f"model's context window; the server said: {message}",
        code="provider_context_exceeded",
        location=where,
    )


def refusal(status: int, body: bytes, where: str, request_bytes: int = 0) -> ProviderError:
    """The coded error for an HTTP `status` answered with `body` (module doc)."""
    text = server_message(body)
    lowered = body.decode("utf-8", "replace").lower()
    if status in (401, 403):
        return ProviderError(
            f"HTTP {status}: the endpoint refused the credentials: {text}",
            code="provider_auth_failed",
            location=where,
        )
    if status == 402 or "insufficient_quota" in lowered or "credit balance" in lowered:
        return ProviderError(
            f"HTTP {status}: quota or billing refusal: {text}",
            code="provider_quota_exhausted",
            location=where,
        )
    if status in (400, 413, 422, 500) and is_context_error(body):
        return context_refusal(f"HTTP {status}: {text}", where, request_bytes)
    if status == 429:
        return ProviderError(
            f"HTTP 429 after every allowed retry: {text}",
            code="provider_rate_limited",
            location=where,
        )
    if status >= 500:
        return ProviderError(
            f"HTTP {status} after every allowed retry: {text}",
            code="provider_unavailable",
            location=where,
        )
    return ProviderError(
        f"HTTP {status}: the endpoint rejected the request: {text}",
        code="provider_request_rejected",
        location=where,
    )
