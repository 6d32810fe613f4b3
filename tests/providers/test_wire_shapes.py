"""Every message shape the harness sends, in every wire format, is accepted by the
third-party request models that define the format (llama-cpp-python's server model, the
``openai`` and ``anthropic`` SDK types), and what real servers refuse is refused.

The stand-in and the providers agree by construction; these validators do not."""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

import pytest

from continuity.messages import (
    AssistantMessage,
    ModelRequest,
    ToolCallRequest,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.real import make_provider
from continuity.servers import wire_validate
from continuity.servers.wire_validate import SOURCES, Source, checks_for, live_checks_for, refusals

HISTORY = ToolDefinition(
    "ConversationHistory",
    "Search and read the retained conversation records.",
    {
        "type": "object",
        "properties": {"action": {"type": "string"}, "query": {"type": "string"}},
        "required": ["action"],
    },
)
CALL = ToolCallRequest("call_1", "ConversationHistory", {"action": "search", "query": "kiln"})
SECOND = ToolCallRequest("call_2", "ConversationHistory", {"action": "get", "query": "th-1"})

# Every shape a harness request can hold, each alone after an owner turn and all together.
SHAPES: dict[str, tuple[Any, ...]] = {
    "user": (UserMessage("What is the order number?"),),
    "assistant text": (UserMessage("Hello"), AssistantMessage(text="Hi, how can I help?")),
    "assistant tool call, no text": (
        UserMessage("Find the quote"),
        AssistantMessage(tool_calls=(CALL,)),
        ToolResultMessage("call_1", "ConversationHistory", "TQ-88412 in th-1"),
    ),
    "assistant text and a tool call": (
        UserMessage("Find the quote"),
        AssistantMessage(text="Searching.", tool_calls=(CALL,)),
        ToolResultMessage("call_1", "ConversationHistory", "found"),
    ),
    "several tool calls": (
        UserMessage("Find both"),
        AssistantMessage(tool_calls=(CALL, SECOND)),
        ToolResultMessage("call_1", "ConversationHistory", "one"),
        ToolResultMessage("call_2", "ConversationHistory", "two"),
    ),
    "a failed tool result": (
        UserMessage("Find it"),
        AssistantMessage(tool_calls=(CALL,)),
        ToolResultMessage("call_1", "ConversationHistory", "no such record", is_error=True),
    ),
    "an empty tool result": (
        UserMessage("Find it"),
        AssistantMessage(tool_calls=(CALL,)),
        ToolResultMessage("call_1", "ConversationHistory", ""),
    ),
    "a steer while a call is in flight": (
        UserMessage("Book the courier"),
        AssistantMessage(tool_calls=(CALL,)),
        ToolResultMessage("call_1", "ConversationHistory", "booked"),
        UserMessage("Actually, only draft it.", source="steer"),
    ),
    "a compaction summary, a pack and the probe": (
        UserMessage("<summary>\n## Goal\nOrder shelves\n</summary>", source="summary"),
        UserMessage("# Continuity pack\n- order TSO-30517", attribution="host", source="pack"),
        UserMessage("What is the order number?", source="probe"),
    ),
}
SHAPES["everything at once"] = tuple(m for shape in SHAPES.values() for m in shape)

ROUTES = {
    "openai-chat": "/chat/completions",
    "openai-responses": "/responses",
    "anthropic": "/messages",
}


def _body(kind: str, messages: tuple[Any, ...], *, system: str, tools: bool) -> dict[str, Any]:
    spec = EndpointSpec(
        kind=kind,  # type: ignore[arg-type]
        base_url="http://127.0.0.1:9/v1",
        model="local-model",
        credentials_path="",
        effort="low" if kind != "anthropic" else None,
        max_output_tokens=64,
    )
    request = ModelRequest(
        session_id="s",
        provider=kind,
        model="local-model",
        system=system,
        messages=messages,
        tools=(HISTORY,) if tools else (),
    )
    body: dict[str, Any] = json.loads(json.dumps(make_provider(spec).payload(request)))
    return body


def _live_refusals(route: str, body: dict[str, Any]) -> list[str]:
    return [f"{name}: {p}" for name, check in live_checks_for(route) for p in check(body)]


@pytest.mark.parametrize("kind", sorted(ROUTES))
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("system", ["You are a careful assistant.", ""])
def test_every_shape_passes_the_third_party_validators(kind: str, shape: str, system: str) -> None:
    """The stand-in's snapshots and, where installed, the live types accept every shape."""
    route = ROUTES[kind]
    assert checks_for(route), f"no validator is active for {route}"
    for tools in (True, False):
        body = _body(kind, SHAPES[shape], system=system, tools=tools)
        assert refusals(route, body) == [], (kind, shape, tools, body)
        assert _live_refusals(route, body) == [], (kind, shape, tools, body)


def test_the_chat_validators_include_llama_cpp_and_the_openai_sdk() -> None:
    names = [name for name, _ in checks_for("/chat/completions")]
    assert any(name.startswith("llama-cpp-python") for name in names)
    assert any(name.startswith("openai ") for name in names)


@pytest.mark.parametrize(
    "message",
    [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        },
        {"role": "assistant", "content": 7},
        {"role": "tool", "content": "no call id"},
    ],
    ids=["null content beside tool calls", "content not text", "tool result without id"],
)
def test_what_llama_cpp_refuses_is_refused(message: dict[str, Any]) -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}, message]}
    problems = refusals("/chat/completions", body)
    assert any(p.startswith("llama-cpp-python") for p in problems), problems
    live = _live_refusals("/chat/completions", body)
    assert live == [] or any(p.startswith("llama-cpp-python") for p in live), live


def test_a_chat_assistant_turn_that_only_calls_tools_carries_empty_content() -> None:
    """Not null (llama.cpp's model refuses it) and not absent (SmolLM2's chat template,
    through llama-cpp-python, reads every message's content and ends the stream empty)."""
    body = _body("openai-chat", SHAPES["several tool calls"], system="s", tools=True)
    (assistant,) = [m for m in body["messages"] if m["role"] == "assistant"]
    assert assistant["content"] == "" and len(assistant["tool_calls"]) == 2


@pytest.mark.parametrize(
    ("base_url", "field"),
    [
        ("http://127.0.0.1:8080/v1", "max_tokens"),
        ("http://localhost:11434/v1", "max_tokens"),
        ("https://openrouter.ai/api/v1", "max_tokens"),
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("https://team.openai.azure.com/openai/v1", "max_completion_tokens"),
        ("https://team.cognitiveservices.azure.com/openai/v1", "max_completion_tokens"),
    ],
)
def test_the_output_cap_goes_in_the_field_the_server_honours(base_url: str, field: str) -> None:
    spec = EndpointSpec(
        kind="openai-chat", base_url=base_url, model="m", credentials_path="", max_output_tokens=9
    )
    request = ModelRequest(
        session_id="s", provider="p", model="m", system="", messages=(UserMessage("hi"),)
    )
    body = make_provider(spec).payload(request)
    assert body[field] == 9
    assert {"max_tokens", "max_completion_tokens"} - {field} & set(body) == set()


def _installed(source: Source) -> bool:
    module = source.module.split(".")[0]
    if importlib.util.find_spec(module) is not None:
        return True
    if "CI" in os.environ:
        pytest.fail(f"CI runs with the local extra and the SDKs: {module} must be installed")
    pytest.skip(f"{module} is not installed (pip install -e '.[local,test]')")


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.snapshot)
def test_every_schema_snapshot_is_the_installed_types(source: Source) -> None:
    """The snapshot the stand-in applies is still the installed package's request schema
    (CI installs the local extra and the SDKs, so this runs there)."""
    _installed(source)
    current = wire_validate.rendered(wire_validate.live_schema(source))
    assert source.path.read_text() == current, (
        "refresh it: python3 -m continuity.servers.wire_validate --refresh"
    )


REFUSED_BODIES: dict[str, list[dict[str, Any]]] = {
    "/chat/completions": [
        {"model": "m", "messages": [{"role": "assistant", "content": None, "tool_calls": []}]},
        {"model": "m", "messages": [{"role": "tool", "content": "no call id"}]},
        {"model": "m", "messages": "hello"},
    ],
    "/responses": [
        {"model": "m", "input": 7},
        {"model": "m", "tools": [{"type": "function"}]},
        {"model": "m", "input": [{"type": "function_call_output", "call_id": 5, "output": "x"}]},
    ],
    "/messages": [
        {"model": "m", "messages": [{"role": "user", "content": "no max_tokens"}]},
        {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": [{}]}]},
        {
            "model": "m",
            "max_tokens": 9,
            "messages": [{"role": "user", "content": [{"type": "tool_result"}]}],
        },
    ],
}


@pytest.mark.parametrize("route", sorted(REFUSED_BODIES))
def test_the_snapshots_give_the_live_types_verdicts(route: str) -> None:
    """Applied with jsonschema (the stand-in's path), the snapshots accept every shape
    the live types accept and refuse what they refuse."""
    kind = next(k for k, r in ROUTES.items() if r == route)
    for source in (s for s in SOURCES if s.route == route):
        _installed(source)
    bodies = [_body(kind, shape, system="s", tools=True) for shape in SHAPES.values()]
    for body in bodies:
        assert refusals(route, body) == _live_refusals(route, body) == []
    for body in REFUSED_BODIES[route]:
        snapshot = {p.split(" ", 1)[0] for p in refusals(route, body)}
        live = {p.split(" ", 1)[0] for p in _live_refusals(route, body)}
        assert snapshot == live != set(), (body, refusals(route, body))
