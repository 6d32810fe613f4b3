"""Compaction modelled on Pi: cut point, split turns, summary request, triggers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from continuity.harness.compaction import (
    compact_conversation,
    context_tokens,
    message_tokens,
    serialize_for_summary,
    should_compact,
    summary_result_text,
)
from continuity.harness.config import SMALLEST_TRIGGER, CompactionPolicy
from continuity.harness.replay import ReplayClock
from continuity.harness.session import CompactionEntry, DurableSession
from continuity.messages import (
    AssistantMessage,
    ModelRequest,
    ToolCallRequest,
    ToolResultMessage,
    UserMessage,
)
from continuity.providers import ProviderEvent
from continuity.providers.scripted import SUMMARY_SECTIONS, ScriptedSummarizer

SMALL = CompactionPolicy(**SMALLEST_TRIGGER)


class _Recorder(ScriptedSummarizer):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.seen.append(request)
        async for event in super().stream(request):
            yield event


_OPEN: list[DurableSession] = []


@pytest.fixture(autouse=True)
def _close_sessions() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def _session(tmp_path: Path, turns: int, *, result_chars: int = 6000) -> DurableSession:
    session = DurableSession.create(
        tmp_path / "session.jsonl", session_id="s", clock=ReplayClock("2027-01-04")
    )
    _OPEN.append(session)
    for index in range(turns):
        session.append_message(UserMessage(text=f"owner turn {index} " + "o" * 400))
        call = ToolCallRequest(f"c{index}", "email_search", {"query": f"q{index}"})
        session.append_message(AssistantMessage(text="checking", tool_calls=(call,)))
        session.append_message(
            ToolResultMessage(
                call_id=f"c{index}",
                tool="email_search",
                text=f"result {index} " + "r" * result_chars,
            )
        )
        session.append_message(AssistantMessage(text=f"reply {index} " + "a" * 300))
    return session


def test_summary_serialization_blocks_and_result_cut() -> None:
    text = serialize_for_summary(
        [
            UserMessage(text="find it"),
            AssistantMessage(
                text="looking", tool_calls=(ToolCallRequest("c", "web_fetch", {"url": "u"}),)
            ),
            ToolResultMessage(call_id="c", tool="web_fetch", text="x" * 5000),
        ]
    )
    assert text.startswith("[User]: find it\n\n[Assistant]: looking\n\n")
    assert '[Assistant tool calls]: web_fetch({"url":"u"})' in text
    assert text.endswith(
        "[Tool result]: " + "x" * 1000 + "\n[... 3,000 characters of this result left out "
        "...]\n" + "x" * 1000
    )


def test_a_long_result_keeps_its_head_and_tail_and_loses_its_middle() -> None:
    head, middle, tail = "H" * 1000, "KLN-4471-QX " + "m" * 2988, "T" * 999 + "!"
    result = head + middle + tail
    text = serialize_for_summary([ToolResultMessage(call_id="c", tool="t", text=result)])
    assert text.startswith("[Tool result]: " + head + "\n[... ")
    assert text.endswith(" ...]\n" + tail)
    assert "KLN-4471-QX" not in text and "m" not in text.replace("left", "")
    assert f"{len(middle):,} characters of this result left out" in text
    assert summary_result_text(result).count("H") == 1000
    # Up to 2,000 characters a result is kept whole, with no marker.
    exact = "a" * 1999 + "Z"
    assert summary_result_text(exact) == exact
    assert summary_result_text(exact + "b").endswith("\n" + "a" * 998 + "Zb")


def test_compaction_keeps_a_recent_tail_and_inserts_a_summary(tmp_path: Path) -> None:
    session = _session(tmp_path, 12)
    before = session.context()
    summarizer = _Recorder()
    event = anyio.run(
        lambda: compact_conversation(
            session, summarizer, policy=SMALL, reason="proactive", model="m"
        )
    )
    assert event is not None and event.reason == "proactive"
    assert event.tokens_before == context_tokens(before)
    assert event.tokens_after < event.tokens_before
    context = session.context()
    assert isinstance(context[0], UserMessage) and context[0].source == "summary"
    assert context[0].text.startswith("<summary>\n") and context[0].text.endswith("</summary>")
    # Pi's rule: walk back until the tail holds keep_recent_tokens, then the first valid
    # cut at or after that point (never a tool result).
    start, tail = len(before), 0
    while start > 0 and tail < SMALL.keep_recent_tokens:
        start -= 1
        tail += message_tokens(before[start])
    while isinstance(before[start], ToolResultMessage):
        start += 1
    assert context[1:] == before[start:]
    prompt = summarizer.seen[0].messages[0]
    assert isinstance(prompt, UserMessage)
    for section in SUMMARY_SECTIONS:
        assert f"## {section}" in prompt.text
    assert "Done / In Progress / Blocked" in prompt.text
    entry = session.entries[-1]
    assert isinstance(entry, CompactionEntry) and entry.tokens_before == event.tokens_before
    session.close()
    reloaded = DurableSession.load(session.path)
    assert reloaded.context() == context
    reloaded.close()


def test_a_cut_inside_a_turn_gets_a_parallel_turn_prefix_summary(tmp_path: Path) -> None:
    session = _session(tmp_path, 10, result_chars=15000)  # a tail of ~4k lands mid-turn
    summarizer = _Recorder()
    event = anyio.run(
        lambda: compact_conversation(session, summarizer, policy=SMALL, reason="manual", model="m")
    )
    assert event is not None and event.split_turn and event.summary_requests == 2
    assert len(summarizer.seen) == 2
    prefix_prompt = summarizer.seen[1].messages[0]
    assert isinstance(prefix_prompt, UserMessage)
    assert "first part of the turn" in prefix_prompt.text
    assert "## Turn in progress (prefix)" in session.context()[0].text


def test_a_second_compaction_carries_the_previous_summary(tmp_path: Path) -> None:
    session = _session(tmp_path, 12)
    summarizer = _Recorder()
    anyio.run(lambda: compact_conversation(session, summarizer, policy=SMALL, model="m"))
    for index in range(12, 20):
        session.append_message(UserMessage(text=f"more {index} " + "m" * 3000))
        session.append_message(AssistantMessage(text="ok " + "k" * 3000))
    second = anyio.run(lambda: compact_conversation(session, summarizer, policy=SMALL, model="m"))
    assert second is not None
    assert "The previous summary, to update" in summarizer.seen[-1].messages[0].text
    assert sum(isinstance(e, CompactionEntry) for e in session.entries) == 2


def test_nothing_to_summarize_is_no_compaction(tmp_path: Path) -> None:
    session = _session(tmp_path, 1, result_chars=100)
    assert (
        anyio.run(
            lambda: compact_conversation(session, ScriptedSummarizer(), policy=SMALL, model="m")
        )
        is None
    )


@pytest.mark.parametrize(
    ("policy", "turns", "expected"),
    [
        (CompactionPolicy(**SMALLEST_TRIGGER), 5, "proactive"),  # > 6,400 tokens
        (CompactionPolicy(**SMALLEST_TRIGGER), 3, None),  # ~5,000 tokens
        (CompactionPolicy(), 5, None),  # 272k x 0.9 is far away
        (CompactionPolicy(max_input_tokens=5_000), 5, "ceiling"),
        (CompactionPolicy(max_input_tokens=0, **SMALLEST_TRIGGER), 5, "proactive"),
        (CompactionPolicy(max_input_tokens=0), 5, None),  # 0 disables the ceiling
        # Past both thresholds, the lower one names the reason (it fires first).
        (CompactionPolicy(**{**SMALLEST_TRIGGER, "max_input_tokens": 6_500}), 5, "proactive"),
        (CompactionPolicy(**{**SMALLEST_TRIGGER, "max_input_tokens": 5_000}), 5, "ceiling"),
    ],
)
def test_triggers(
    tmp_path: Path, policy: CompactionPolicy, turns: int, expected: str | None
) -> None:
    session = _session(tmp_path, turns)
    assert should_compact(session, policy) == expected


def test_cooldown_defers_a_due_compaction(tmp_path: Path) -> None:
    session = _session(tmp_path, 5)
    policy = CompactionPolicy(**{**SMALLEST_TRIGGER, "cooldown_turns": 2})
    assert should_compact(session, policy, turns_since_last=1) is None
    assert should_compact(session, policy, turns_since_last=2) == "proactive"
