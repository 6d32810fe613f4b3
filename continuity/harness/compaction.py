"""Compaction, modelled on Pi's coding-agent compaction.

- **Estimate**: ``ceil(chars / 4)`` per message (text, tool-call names and arguments,
  tool results).
- **Cut point**: walk back from the newest message until the kept tail holds
  ``keep_recent_tokens``; the first valid cut at or after that point starts the kept
  entries (a user or assistant message, never a tool result). When the cut falls inside
  a turn, that turn's prefix gets a second, parallel turn-prefix summary.
- **Summary request**: the summarized messages serialized as ``[User]:``,
  ``[Assistant]:``, ``[Assistant tool calls]:`` and ``[Tool result]:`` blocks, asking
  for the sections Goal, Constraints & Preferences, Progress (Done/In Progress/Blocked),
  Key Decisions, Next Steps, Critical Context; a previous summary is carried forward. A
  tool result longer than 2,000 characters keeps its head and its tail (the first and
  the last 1,000 characters) around an explicit marker saying how many characters were
  left out, so what sits in the middle of a long result is what a summary loses (the
  seed: "the summary serializer keeps only result heads and tails"; the trace validator
  places its middle-of-result identifier outside the first and last 2,000 characters).
- **Result**: a ``compaction`` entry; the context becomes the summary as a user message in
  ``<summary>`` tags followed by the kept entries.
- **Triggers**: proactive (estimate above ``window * ratio``), the ``max_input_tokens``
  ceiling, and the promptless manual `compact_conversation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import anyio
import msgspec

from continuity.harness.config import CompactionPolicy
from continuity.harness.session import CompactionEntry, DurableSession, MessageEntry
from continuity.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from continuity.providers.protocol import Provider, complete
from continuity.providers.scripted import SUMMARY_SECTIONS
from continuity.traces.bounds import SUMMARY_RESULT_CHARS

__all__ = [
    "SUMMARY_HEAD_CHARS",
    "SUMMARY_SYSTEM",
    "SUMMARY_TAIL_CHARS",
    "CompactionEvent",
    "Reason",
    "compact_conversation",
    "context_tokens",
    "message_tokens",
    "serialize_for_summary",
    "should_compact",
    "summary_result_text",
]

Reason = Literal["proactive", "ceiling", "manual", "mid_run"]
_json = msgspec.json.Encoder()

SUMMARY_SYSTEM = (
    "You summarize conversations so that work can continue after the earlier messages "
    "are removed from context."
)


class CompactionEvent(msgspec.Struct, frozen=True, kw_only=True):
    """A terminal compaction, content-free: what the context held before and after."""

    reason: Reason
    tokens_before: int
    tokens_after: int
    summarized_messages: int
    kept_messages: int
    split_turn: bool
    summary_requests: int
    usage: Usage
    entry_id: str


def message_tokens(message: Message) -> int:
    if isinstance(message, AssistantMessage):
        chars = len(message.text) + sum(
            len(c.name) + len(_json.encode(c.arguments)) for c in message.tool_calls
        )
    else:
        chars = len(message.text)
    return -(-chars // 4)


def context_tokens(messages: Sequence[Message]) -> int:
    """Pi's context estimate."""
    return sum(message_tokens(m) for m in messages)


def should_compact(
    session: DurableSession, policy: CompactionPolicy, *, turns_since_last: int | None = None
) -> Reason | None:
    """Whether a pre-turn compaction is due, and why. When the context is past both the
    proactive trigger and the input ceiling, the lower of the two names the reason: it is
    the one that fires first as a context grows (the smallest trigger is proactive even
    on a context past the 200k ceiling; the default policy's trigger sits above the
    ceiling, so there the ceiling fires)."""
    if turns_since_last is not None and turns_since_last < policy.cooldown_turns:
        return None
    estimate = context_tokens(session.context())
    fired: list[tuple[int, Reason]] = []
    if policy.max_input_tokens and estimate > policy.max_input_tokens:
        fired.append((policy.max_input_tokens, "ceiling"))
    if estimate > policy.trigger_tokens:
        fired.append((policy.trigger_tokens, "proactive"))
    return min(fired)[1] if fired else None


# A long result keeps its first and last halves of SUMMARY_RESULT_CHARS.
SUMMARY_HEAD_CHARS = SUMMARY_RESULT_CHARS // 2
SUMMARY_TAIL_CHARS = SUMMARY_RESULT_CHARS - SUMMARY_HEAD_CHARS


def summary_result_text(text: str) -> str:
    """A tool result as the summary request shows it: whole up to SUMMARY_RESULT_CHARS,
    otherwise its head and tail around a marker naming how many characters were cut."""
    if len(text) <= SUMMARY_RESULT_CHARS:
        return text
    left_out = len(text) - SUMMARY_HEAD_CHARS - SUMMARY_TAIL_CHARS
    return (
        f"{text[:SUMMARY_HEAD_CHARS]}\n[... {left_out:,} characters of this result left out "
        f"...]\n{text[-SUMMARY_TAIL_CHARS:]}"
    )


def serialize_for_summary(messages: Sequence[Message]) -> str:
    blocks = []
    for message in messages:
        if isinstance(message, UserMessage):
            blocks.append(f"[User]: {message.text}")
        elif isinstance(message, AssistantMessage):
            if message.text:
                blocks.append(f"[Assistant]: {message.text}")
            if message.tool_calls:
                calls = "; ".join(
                    f"{c.name}({_json.encode(c.arguments).decode()})" for c in message.tool_calls
                )
                blocks.append(f"[Assistant tool calls]: {calls}")
        else:
            blocks.append(f"[Tool result]: {summary_result_text(message.text)}")
    return "\n\n".join(blocks)


def _summary_prompt(messages: Sequence[Message], previous: str | None, *, prefix: bool) -> str:
    sections = "\n".join(f"## {s}" for s in SUMMARY_SECTIONS)
    ask = (
        "Summarize the first part of the turn below; the rest of the turn stays in context."
        if prefix
        else "Summarize the conversation below so the work can continue. Use these sections "
        "(Progress as Done / In Progress / Blocked):\n" + sections
    )
    carried = (
        f"\n\nThe previous summary, to update:\n<summary>\n{previous}\n</summary>"
        if (previous and not prefix)
        else ""
    )
    return f"{ask}{carried}\n\n<conversation>\n{serialize_for_summary(messages)}\n</conversation>"


def _entry_tokens(entry: MessageEntry) -> int:
    return message_tokens(entry.message)


def _candidates(session: DurableSession) -> tuple[list[MessageEntry], str | None]:
    """The message entries currently in context (after the last compaction's cut), and
    the previous summary if there is one."""
    path = session.path_to_leaf()
    last = max((i for i, e in enumerate(path) if isinstance(e, CompactionEntry)), default=None)
    if last is None:
        return [e for e in path if isinstance(e, MessageEntry)], None
    compaction = path[last]
    assert isinstance(compaction, CompactionEntry)
    start = next((i for i, e in enumerate(path) if e.id == compaction.first_kept_entry_id), last)
    kept = [e for e in path[start:] if isinstance(e, MessageEntry)]
    return kept, compaction.summary


def _is_turn_start(entry: MessageEntry) -> bool:
    message = entry.message
    return isinstance(message, UserMessage) and message.source in ("owner", "probe", "reseed")


def _cut(entries: Sequence[MessageEntry], policy: CompactionPolicy) -> int | None:
    """Where the kept tail starts: the recent entries worth `policy.keep_recent_tokens`,
    moved forward past tool results (a result never opens the kept tail)."""
    kept_tokens = 0
    start = len(entries)
    while start > 0 and kept_tokens < policy.keep_recent_tokens:
        start -= 1
        kept_tokens += _entry_tokens(entries[start])
    return next(
        (
            i
            for i in range(start, len(entries))
            if not isinstance(entries[i].message, ToolResultMessage)
        ),
        None,
    )


def _split_at(
    entries: Sequence[MessageEntry], cut: int
) -> tuple[list[Message], list[Message], bool]:
    """The history to summarize and, when `cut` falls inside a turn, that turn's prefix
    (summarized on its own) and True."""
    turn_start = cut
    while turn_start > 0 and not _is_turn_start(entries[turn_start]):
        turn_start -= 1
    split = turn_start < cut and not _is_turn_start(entries[cut])
    history = [e.message for e in entries[: turn_start if split else cut]]
    prefix = [e.message for e in entries[turn_start:cut]] if split else []
    return history, prefix, split


async def _summarize(
    session: DurableSession,
    summarizer: Provider,
    model: str,
    previous: str | None,
    history: Sequence[Message],
    prefix: Sequence[Message],
) -> tuple[str, Usage]:
    """The summary of `history` (and of the turn `prefix`, requested in parallel) and the
    usage of its requests."""

    def request(messages: Sequence[Message], *, is_prefix: bool) -> ModelRequest:
        return ModelRequest(
            session_id=f"{session.header.session_id}:summary",
            provider=summarizer.name,
            model=model,
            system=SUMMARY_SYSTEM,
            messages=(
                UserMessage(
                    text=_summary_prompt(messages, previous, prefix=is_prefix),
                    attribution="host",
                    source="summary",
                ),
            ),
        )

    results: dict[str, str] = {}
    usage = Usage()

    async def summarize(label: str, messages: Sequence[Message], is_prefix: bool) -> None:
        nonlocal usage
        done = await complete(summarizer, request(messages, is_prefix=is_prefix))
        results[label] = done.message.text
        usage = usage + done.usage

    async with anyio.create_task_group() as group:  # the turn prefix runs in parallel
        group.start_soon(summarize, "history", history, False)
        if prefix:
            group.start_soon(summarize, "prefix", prefix, True)
    summary = results["history"]
    if prefix:
        summary += f"\n\n## Turn in progress (prefix)\n{results['prefix']}"
    return summary, usage


async def compact_conversation(
    session: DurableSession,
    summarizer: Provider,
    *,
    policy: CompactionPolicy,
    reason: Reason = "manual",
    model: str = "summarizer",
) -> CompactionEvent | None:
    """Compact the session now (the promptless manual trigger, or a due proactive one).

    Returns None when nothing lies before the kept tail (there is nothing to summarize).
    """
    entries, previous = _candidates(session)
    tokens_before = context_tokens(session.context())
    cut = _cut(entries, policy)
    if cut is None or cut == 0:
        return None
    history, prefix, split = _split_at(entries, cut)
    summary, usage = await _summarize(session, summarizer, model, previous, history, prefix)
    entry = session.append_compaction(
        summary,
        entries[cut].id,
        tokens_before,
        {"reason": reason, "split_turn": split, "summarized_messages": len(history) + len(prefix)},
    )
    return CompactionEvent(
        reason=reason,
        tokens_before=tokens_before,
        tokens_after=context_tokens(session.context()),
        summarized_messages=len(history) + len(prefix),
        kept_messages=len(entries) - cut,
        split_turn=split,
        summary_requests=2 if split else 1,
        usage=usage,
        entry_id=entry.id,
    )
