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
from continuity.servers.wire_validate import LLAMA_CPP_SCHEMA, checks_for, refusals

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


@pytest.mark.parametrize("kind", sorted(ROUTES))
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("system", ["You are a careful assistant.", ""])
def test_every_shape_passes_the_third_party_validators(kind: str, shape: str, system: str) -> None:
    route = ROUTES[kind]
    assert checks_for(route), f"no validator is active for {route}"
    for tools in (True, False):
        body = _body(kind, SHAPES[shape], system=system, tools=tools)
        assert refusals(route, body) == [], (kind, shape, tools, body)


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


def test_the_llama_cpp_schema_snapshot_is_the_installed_models() -> None:
    """The snapshot the stand-in uses where llama-cpp-python is not installed is still
    that package's request schema (CI installs the local extra, so this runs there)."""
    if importlib.util.find_spec("llama_cpp") is None:
        if "CI" in os.environ:
            pytest.fail("CI runs with the local extra: llama-cpp-python must be installed")
        pytest.skip("llama-cpp-python is not installed (pip install -e '.[local]')")
    current = json.dumps(wire_validate.llama_cpp_schema(), indent=1, sort_keys=True) + "\n"
    assert LLAMA_CPP_SCHEMA.read_text() == current, (
        "refresh it: python3 -m continuity.servers.wire_validate --refresh"
    )


def test_the_snapshot_refuses_and_accepts_as_the_model_does() -> None:
    """The checked-in schema, applied with jsonschema (the stand-in's path where
    llama-cpp-python is not installed), gives the same verdicts on every shape."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(LLAMA_CPP_SCHEMA.read_text()))
    for shape in SHAPES.values():
        body = _body("openai-chat", shape, system="s", tools=True)
        assert list(validator.iter_errors(body)) == []
    null: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": []}
    assert list(validator.iter_errors({"messages": [null]}))
