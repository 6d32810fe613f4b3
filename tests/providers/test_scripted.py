"""The scripted provider: FIFO steps, streaming, usage and the cache model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.errors import HarnessError, ScriptExhausted
from continuity.messages import (
    AssistantMessage,
    ModelRequest,
    ToolCallRequest,
    UserMessage,
    wire_payload,
)
from continuity.providers import (
    Completed,
    ProviderEvent,
    ScriptedProvider,
    ScriptedStep,
    TextDelta,
    ToolCallEvent,
    complete,
)
from continuity.providers.scripted import shared_prefix

pytestmark = pytest.mark.anyio


def request(*texts: str, session: str = "s1") -> ModelRequest:
    return ModelRequest(
        session_id=session,
        provider="scripted",
        model="m",
        system="sys",
        messages=tuple(UserMessage(text=t) for t in texts),
    )


async def test_steps_are_served_in_order_and_streamed() -> None:
    call = ToolCallRequest("c1", "email_search", {"query": "kiln"})
    provider = ScriptedProvider(
        [ScriptedStep(text="Checking.", tool_calls=(call,)), ScriptedStep(text="Done.")],
        name="p",
        model="m",
    )
    events: list[ProviderEvent] = [e async for e in provider.stream(request("hi"))]
    assert isinstance(events[0], TextDelta) and events[0].text == "Checking."
    assert isinstance(events[1], ToolCallEvent) and events[1].call == call
    assert isinstance(events[2], Completed) and events[2].stop_reason == "tool_use"
    done = await complete(provider, request("hi", "more"))
    assert done.message == AssistantMessage(text="Done.") and done.stop_reason == "stop"
    assert (done.provider, done.model) == ("p", "m")


async def test_a_callable_step_sees_the_request() -> None:
    seen: list[int] = []

    def reply(req: ModelRequest) -> ScriptedStep:
        seen.append(len(req.messages))
        return ScriptedStep(text=f"{len(req.messages)} messages")

    provider = ScriptedProvider([reply])
    done = await complete(provider, request("a", "b", "c"))
    assert seen == [3] and done.message.text == "3 messages"


async def test_running_dry_is_a_typed_error() -> None:
    provider = ScriptedProvider([ScriptedStep(text="only one")], name="p", model="m")
    await complete(provider, request("a"))
    with pytest.raises(ScriptExhausted) as err:
        await complete(provider, request("a", "b"))
    assert err.value.code == "script_exhausted" and err.value.location == "p:m"


async def test_usage_is_chars_over_four_with_a_shared_prefix_cache() -> None:
    provider = ScriptedProvider([ScriptedStep(text="x" * 10)] * 3)
    first = request("hello there")
    one = await complete(provider, first)
    chars = len(wire_payload(first))
    assert one.usage.cache_read == 0
    assert one.usage.input == one.usage.cache_write == -(-chars // 4)
    assert one.usage.output == 3  # ceil(10 / 4)
    second = request("hello there", "and more")
    two = await complete(provider, second)
    shared = shared_prefix(wire_payload(first), wire_payload(second))
    assert two.usage.cache_read == shared // 4 > 0
    assert two.usage.input + two.usage.cache_read == -(-len(wire_payload(second)) // 4)
    other = await complete(provider, request("hello there", session="s2"))
    assert other.usage.cache_read == 0  # caches are per session id
    assert [r.messages for r in provider.requests] == [1, 2, 1]


@given(st.binary(max_size=300), st.binary(max_size=300), st.binary(max_size=50))
def test_shared_prefix_matches_a_naive_scan(a: bytes, b: bytes, common: bytes) -> None:
    a, b = common + a, common + b
    expected = 0
    while expected < min(len(a), len(b)) and a[expected] == b[expected]:
        expected += 1
    for chunk in (1, 3, 64, 1 << 16):
        assert shared_prefix(a, b, chunk=chunk) == expected


class _LyingProvider:
    name = "liar"

    def __init__(self, events: list[ProviderEvent]) -> None:
        self.events = events

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        for event in self.events:
            yield event


async def test_complete_refuses_inconsistent_streams() -> None:
    from continuity.messages import Usage

    done = Completed(
        message=AssistantMessage(text="ab"),
        usage=Usage(),
        stop_reason="stop",
        provider="liar",
        model="m",
    )
    cases: list[list[ProviderEvent]] = [
        [TextDelta("a")],
        [TextDelta("a"), done],
        [done, TextDelta("x")],
    ]
    for events in cases:
        with pytest.raises(HarnessError) as err:
            await complete(_LyingProvider(events), request("x"))
        assert err.value.code == "provider_stream_invalid"
