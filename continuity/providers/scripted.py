"""The scripted provider: a FIFO of assistant steps standing in for a model.

It is a test double for the model only. Usage is computed from the serialized request
as Pi's faux provider does: ``ceil(chars / 4)`` input tokens, of which the prefix
shared with the previous request of the same session id counts as cache read and the
rest as input and cache write; output is ``ceil(chars / 4)`` of the reply.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import msgspec

from continuity.errors import ScriptExhausted
from continuity.messages import (
    AssistantMessage,
    ModelRequest,
    ToolCallRequest,
    Usage,
    wire_payload,
)
from continuity.providers.protocol import Completed, ProviderEvent, TextDelta, ToolCallEvent

__all__ = [
    "SUMMARY_SECTIONS",
    "RequestRecord",
    "ScriptedProvider",
    "ScriptedStep",
    "ScriptedSummarizer",
    "Step",
    "scripted_summary",
    "shared_prefix",
    "text_step",
    "tool_step",
]


class ScriptedStep(msgspec.Struct, frozen=True):
    """One scripted assistant reply: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()


Step = ScriptedStep | Callable[[ModelRequest], ScriptedStep]


class RequestRecord(msgspec.Struct, frozen=True):
    """What the scripted model saw: content-free counts and usage, per request."""

    index: int
    session_id: str
    model: str
    messages: int
    chars: int
    usage: Usage


def shared_prefix(a: bytes, b: bytes, *, chunk: int = 1 << 16) -> int:
    """Length of the common prefix of two byte strings.

    Compares 64 KiB chunks until one differs, then bisects inside it, so a request that
    extends the previous one costs one pass of memcmp, not a bisection over megabytes.
    """
    size = min(len(a), len(b))
    offset = 0
    while offset < size:
        end = min(offset + chunk, size)
        if a[offset:end] != b[offset:end]:
            low, high = offset, end  # a[:low] == b[:low]; they differ before `high`
            while high - low > 1:
                middle = (low + high) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    high = middle
            return low if a[low] != b[low] else high
        offset = end
    return size


def _chars(data: bytes) -> int:
    return len(data) if data.isascii() else len(data.decode("utf-8"))


class ScriptedProvider:
    """Serves scripted steps in order, posing as `model` of `name`.

    Args:
        steps: the FIFO of replies (a `ScriptedStep`, or a callable of the request that
            returns one, for replies that must look at what was sent).
        name: the provider name it poses as; `model` the model.
    Raises (from `stream`):
        ScriptExhausted: ``script_exhausted`` when a request arrives with no step left.
    """

    def __init__(
        self, steps: Iterable[Step] = (), *, name: str = "scripted", model: str = "scripted-model"
    ) -> None:
        self.name = name
        self.model = model
        self._steps: collections.deque[Step] = collections.deque(steps)
        self._previous: dict[str, bytes] = {}
        self.requests: list[RequestRecord] = []

    def push(self, *steps: Step) -> None:
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def _measure(self, request: ModelRequest, reply: AssistantMessage) -> tuple[Usage, int]:
        payload = wire_payload(request)
        chars = _chars(payload)
        total = -(-chars // 4)
        previous = self._previous.get(request.session_id, b"")
        shared = shared_prefix(previous, payload)
        cache_read = min(total, _chars(payload[:shared]) // 4)
        self._previous[request.session_id] = payload
        reply_chars = len(reply.text) + sum(
            len(c.name) + len(msgspec.json.encode(c.arguments)) for c in reply.tool_calls
        )
        usage = Usage(
            input=total - cache_read,
            cache_read=cache_read,
            cache_write=total - cache_read,
            output=-(-reply_chars // 4),
        )
        return usage, chars

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if not self._steps:
            raise ScriptExhausted(
                f"request {len(self.requests) + 1} arrived with no scripted step left",
                location=f"{self.name}:{self.model}",
            )
        step = self._steps.popleft()
        reply_step = step(request) if callable(step) else step
        reply = AssistantMessage(text=reply_step.text, tool_calls=reply_step.tool_calls)
        usage, chars = self._measure(request, reply)
        self.requests.append(
            RequestRecord(
                len(self.requests),
                request.session_id,
                self.model,
                len(request.messages),
                chars,
                usage,
            )
        )
        if reply.text:
            yield TextDelta(reply.text)
        for call in reply.tool_calls:
            yield ToolCallEvent(call)
        yield Completed(
            message=reply,
            usage=usage,
            stop_reason="tool_use" if reply.tool_calls else "stop",
            provider=self.name,
            model=self.model,
        )


def text_step(text: str) -> ScriptedStep:
    return ScriptedStep(text=text)


def tool_step(text: str, calls: Iterable[tuple[str, str, dict[str, Any]]]) -> ScriptedStep:
    return ScriptedStep(
        text=text, tool_calls=tuple(ToolCallRequest(i, n, dict(a)) for i, n, a in calls)
    )


SUMMARY_SECTIONS: tuple[str, ...] = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Next Steps",
    "Critical Context",
)


def scripted_summary(chars: int) -> str:
    """The scripted summarizer's summary of `chars` characters: the fixed sections, each
    a content-free note (nothing is extracted)."""
    return "\n".join(
        f"## {section}\n(scripted summary of {chars:,} characters; nothing extracted)"
        for section in SUMMARY_SECTIONS
    )


class ScriptedSummarizer(ScriptedProvider):
    """A scripted summarizer that never runs dry: every request gets a summary with the
    fixed section structure and a content-free note of how much it was asked to
    summarize. A faux model extracts nothing, so facts that are compacted away are
    gone offline; that is the point of the offline contract, not a flaw of the arm."""

    def __init__(self, *, name: str = "scripted", model: str = "scripted-summarizer") -> None:
        super().__init__((), name=name, model=model)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        chars = sum(len(getattr(m, "text", "")) for m in request.messages)
        self.push(ScriptedStep(text=scripted_summary(chars)))
        async for event in super().stream(request):
            yield event
