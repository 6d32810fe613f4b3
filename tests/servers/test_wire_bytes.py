"""The loopback wire server's exact bytes, per format: status, headers and every body chunk.

Each case drives the ASGI app directly (no socket) with the clock frozen, and compares
what it sends with `wire_golden.json`. The SDK tests in ``tests/providers/test_http.py``
prove the formats parse; this pins them byte for byte, so restructuring the server cannot
change what a provider reads. Regenerate (only for an intended change) with
``python -m tests.servers.test_wire_bytes``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from continuity.servers.wire import Faults, WireServer

GOLDEN = Path(__file__).with_name("wire_golden.json")
FROZEN = 1_700_000_000.0

TOOL_CHAT = {"type": "function", "function": {"name": "ConversationHistory", "parameters": {}}}
TOOL_RESPONSES = {
    "type": "function",
    "name": "ConversationHistory",
    "parameters": {},
    "strict": False,
}
TOOL_ANTHROPIC = {"name": "ConversationHistory", "input_schema": {"type": "object"}}
QUESTION = "Earlier: which colour did Dana pick for the kiln shelves in March?"
SUMMARY = "Summarize the conversation so far in the given sections."

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"

Request = tuple[str, dict[str, Any]]


def _chat(*messages: dict[str, Any], tools: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "stream": True, "messages": list(messages)}
    if tools:
        body["tools"] = [TOOL_CHAT]
    return body


def _responses(items: str | list[dict[str, Any]], tools: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "stream": True, "input": items}
    if tools:
        body["tools"] = [TOOL_RESPONSES]
    return body


def _messages(
    *messages: dict[str, Any], tools: bool = False, cache: bool = False
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "stream": True, "max_tokens": 64}
    system: dict[str, Any] = {"type": "text", "text": "You are a careful assistant."}
    if cache:
        system["cache_control"] = {"type": "ephemeral"}
    body["system"] = [system]
    body["messages"] = list(messages)
    if tools:
        body["tools"] = [TOOL_ANTHROPIC]
    return body


USER = {"role": "user", "content": QUESTION}
CHAT_CALLED = (
    USER,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "ConversationHistory", "arguments": "{}"},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "no match"},
)
RESPONSES_CALLED = [
    {"role": "user", "content": QUESTION},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "ConversationHistory",
        "arguments": "{}",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "no match"},
]
ANTHROPIC_CALLED = (
    {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "ConversationHistory", "input": {}}
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "no match"}],
    },
)

CASES: dict[str, tuple[Faults, list[Request]]] = {
    "chat-answer": (Faults(), [(CHAT, _chat(USER))]),
    "chat-tool-call": (Faults(), [(CHAT, _chat(USER, tools=True))]),
    "chat-after-tool": (Faults(), [(CHAT, _chat(*CHAT_CALLED, tools=True))]),
    "chat-summary": (Faults(), [(CHAT, _chat({"role": "user", "content": SUMMARY}))]),
    "chat-cached-prefix": (
        Faults(),
        [(CHAT, _chat(USER, tools=True)), (CHAT, _chat(*CHAT_CALLED, tools=True))],
    ),
    "chat-truncated": (Faults(truncate_from=1), [(CHAT, _chat(USER))]),
    "responses-answer": (Faults(), [(RESPONSES, _responses(QUESTION))]),
    "responses-tool-call": (Faults(), [(RESPONSES, _responses([USER], tools=True))]),
    "responses-after-tool": (Faults(), [(RESPONSES, _responses(RESPONSES_CALLED, tools=True))]),
    "responses-cached-prefix": (
        Faults(),
        [
            (RESPONSES, _responses([USER], tools=True)),
            (RESPONSES, _responses(RESPONSES_CALLED, tools=True)),
        ],
    ),
    "anthropic-answer": (Faults(), [(MESSAGES, _messages(USER))]),
    "anthropic-tool-call": (Faults(), [(MESSAGES, _messages(USER, tools=True))]),
    "anthropic-after-tool": (Faults(), [(MESSAGES, _messages(*ANTHROPIC_CALLED, tools=True))]),
    "anthropic-cached-prefix": (
        Faults(),
        [
            (MESSAGES, _messages(ANTHROPIC_CALLED[0], tools=True, cache=True)),
            (MESSAGES, _messages(*ANTHROPIC_CALLED, tools=True, cache=True)),
        ],
    ),
    "anthropic-uncached-prefix": (
        Faults(),
        [
            (MESSAGES, _messages(ANTHROPIC_CALLED[0], tools=True)),
            (MESSAGES, _messages(*ANTHROPIC_CALLED, tools=True)),
        ],
    ),
    "no-route": (Faults(), [("/v1/embeddings", {"input": "x"})]),
    "auth-failure": (Faults(auth_fail_from=1), [(CHAT, _chat(USER))]),
    "quota": (Faults(quota_from=1), [(RESPONSES, _responses(QUESTION))]),
    "rate-limit": (
        Faults(rate_limit_first=1, retry_after="7"),
        [(MESSAGES, _messages(USER)), (MESSAGES, _messages(USER))],
    ),
}


async def _exchange(app: WireServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """One request through the ASGI app; what it sent, as JSON-able text."""
    raw = json.dumps(body).encode()
    parts = [raw[: len(raw) // 2], raw[len(raw) // 2 :]]  # a body in two messages
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        chunk = parts.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(parts)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path}
    await app(scope, receive, send)
    start, *rest = sent
    assert start["type"] == "http.response.start"
    return {
        "status": start["status"],
        "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in start["headers"]],
        "chunks": [m["body"].decode() for m in rest],
        "more_body": [m.get("more_body", False) for m in rest],
    }


def transcript(name: str) -> list[dict[str, Any]]:
    """Every response of case `name`, from a fresh server (the clock must be frozen)."""
    faults, requests = CASES[name]
    app = WireServer(model="served-model-7", faults=faults)

    async def run() -> list[dict[str, Any]]:
        return [await _exchange(app, path, body) for path, body in requests]

    return anyio.run(run)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_server_sends_the_pinned_bytes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: FROZEN)
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert transcript(name) == golden[name]


def test_the_golden_file_covers_every_case() -> None:
    assert sorted(json.loads(GOLDEN.read_text(encoding="utf-8"))) == sorted(CASES)


def _regenerate() -> None:
    real = time.time
    time.time = lambda: FROZEN
    try:
        golden = {name: transcript(name) for name in sorted(CASES)}
    finally:
        time.time = real
    GOLDEN.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    _regenerate()
