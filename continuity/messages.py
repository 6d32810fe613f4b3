"""The messages a harness keeps in context and sends to a model.

Messages carry only what a model sees (text, tool calls, tool results) plus the owner
attribution of user input. Provider identity, usage and stop reasons are recorded on
the session entry that holds a message, not on the message itself, so two requests
with the same conversation serialise identically.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "AssistantMessage",
    "Attribution",
    "Message",
    "ModelRequest",
    "ToolCallRequest",
    "ToolDefinition",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "UserSource",
    "wire_payload",
]

Attribution = Literal["owner", "unknown", "host"]
UserSource = Literal["owner", "steer", "probe", "summary", "reseed", "pack", "ledger"]


class ToolCallRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    call_id: str
    name: str
    arguments: dict[str, Any]


class UserMessage(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="user", tag_field="role"
):
    """User-side input. `attribution` says who authored it; `source` how it arrived."""

    text: str
    attribution: Attribution = "owner"
    source: UserSource = "owner"


class AssistantMessage(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="assistant", tag_field="role"
):
    text: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()


class ToolResultMessage(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="tool_result", tag_field="role"
):
    call_id: str
    tool: str
    text: str
    is_error: bool = False


Message = UserMessage | AssistantMessage | ToolResultMessage


class ToolDefinition(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    description: str
    input_schema: dict[str, Any]


class Usage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Token usage of one model call, normalised across providers so every input token
    is counted once: `input` is the input not read from the cache (it includes the part
    newly written to the cache, `cache_write`, an "of which" count); cached input is
    under `cache_read`. OpenAI reports cached tokens inside its input count, Anthropic on
    top of it; the providers convert both to this form."""

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.output + other.output,
        )

    @property
    def total_input(self) -> int:
        return self.input + self.cache_read


class ModelRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    session_id: str
    provider: str
    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()


_encoder = msgspec.json.Encoder()


def _wire_message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.text}
    if isinstance(message, ToolResultMessage):
        return {
            "role": "tool",
            "tool_call_id": message.call_id,
            "content": message.text,
            "is_error": message.is_error,
        }
    wire: dict[str, Any] = {"role": "assistant", "content": message.text}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.call_id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    return wire


def wire_payload(request: ModelRequest) -> bytes:
    """The bytes a provider would send for `request`: model, system prompt, tools and
    messages, without session ids or attribution metadata."""
    return _encoder.encode(
        {
            "model": request.model,
            "system": request.system,
            "tools": [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ],
            "messages": [_wire_message(m) for m in request.messages],
        }
    )
