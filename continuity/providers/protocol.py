"""The provider protocol: an async stream of events ending in one completed message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal, Protocol

import msgspec

from continuity.errors import HarnessError
from continuity.messages import AssistantMessage, ModelRequest, ToolCallRequest, Usage

__all__ = ["Completed", "Provider", "ProviderEvent", "TextDelta", "ToolCallEvent", "complete"]


class TextDelta(msgspec.Struct, frozen=True):
    text: str


class ToolCallEvent(msgspec.Struct, frozen=True):
    call: ToolCallRequest


class Completed(msgspec.Struct, frozen=True):
    """The last event of a stream: the whole message, its usage and why it stopped."""

    message: AssistantMessage
    usage: Usage
    stop_reason: Literal["stop", "tool_use"]
    provider: str
    model: str
    # False when the endpoint reported no input or no output count (`usage` then holds
    # whatever part it did report, zeros for the rest): such a call's usage is unknown.
    usage_reported: bool = True


ProviderEvent = TextDelta | ToolCallEvent | Completed


class Provider(Protocol):
    """A model endpoint. `stream` yields deltas and ends with exactly one `Completed`."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...


async def complete(provider: Provider, request: ModelRequest) -> Completed:
    """Drain a stream and return its `Completed` event.

    Raises:
        HarnessError: ``provider_stream_invalid`` when the stream ends without one, or
            its deltas disagree with the completed message.
    """
    text: list[str] = []
    calls: list[ToolCallRequest] = []
    done: Completed | None = None
    async for event in provider.stream(request):
        if done is not None:
            raise HarnessError(
                "events after the completed message",
                code="provider_stream_invalid",
                location=provider.name,
            )
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ToolCallEvent):
            calls.append(event.call)
        else:
            done = event
    if done is None:
        raise HarnessError(
            "stream ended without a completed message",
            code="provider_stream_invalid",
            location=provider.name,
        )
    if "".join(text) != done.message.text or tuple(calls) != done.message.tool_calls:
        raise HarnessError(
            "stream deltas disagree with the completed message",
            code="provider_stream_invalid",
            location=provider.name,
        )
    return done
