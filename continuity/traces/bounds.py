"""Token estimates and the app's context bounds, shared by traces and the harness.

Token estimates follow Pi: ``ceil(chars / 4)`` per message, where an assistant message
counts its text plus each tool call's name and compact JSON arguments. The bounds are
the benchmark's own settings from the seed: cold rebuild keeps the canonical last 64
text messages plus a projection of the newest tool-history records (at most 32 records
and 64 KiB of retained bytes); tool history retains the first 16 KiB of a result; the
compaction summary serializer keeps the first 2,000 characters of a tool result.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from continuity.traces.schema import (
    AssistantMessage,
    OwnerMessage,
    ReplayTrace,
    Steer,
    ToolResult,
    Turn,
    iter_turns,
)

__all__ = [
    "PROJECTION_MAX_BYTES",
    "PROJECTION_MAX_RECORDS",
    "RESEED_TEXT_MESSAGES",
    "RESULT_HEAD_BYTES",
    "SUMMARY_RESULT_CHARS",
    "estimate_chars",
    "estimate_tokens",
    "is_text_message",
    "projected_records",
    "projection_indexes",
    "retained_bytes",
    "turn_tokens",
]

RESULT_HEAD_BYTES = 16 * 1024
RESEED_TEXT_MESSAGES = 64
PROJECTION_MAX_RECORDS = 32
PROJECTION_MAX_BYTES = 64 * 1024
SUMMARY_RESULT_CHARS = 2000

_json = msgspec.json.Encoder()


def estimate_chars(turn: Turn) -> int:
    """Characters Pi's estimator counts for one message."""
    if isinstance(turn, (OwnerMessage, Steer)):
        return len(turn.text)
    if isinstance(turn, ToolResult):
        return len(turn.output)
    total = len(turn.text)
    for call in turn.tool_calls:
        total += len(call.tool) + len(_json.encode(call.arguments).decode("utf-8"))
    return total


def turn_tokens(turn: Turn) -> int:
    return -(-estimate_chars(turn) // 4)


def estimate_tokens(trace: ReplayTrace) -> int:
    """Pi's context estimate with the whole conversation in context (the probe turn)."""
    return sum(turn_tokens(turn) for _, _, turn in iter_turns(trace))


def is_text_message(turn: Turn) -> bool:
    """Whether the canonical history keeps `turn` as a text message (reseed window)."""
    if isinstance(turn, AssistantMessage):
        return bool(turn.text)
    return isinstance(turn, (OwnerMessage, Steer))


def retained_bytes(result: ToolResult) -> int:
    """Bytes tool history retains for a result: its UTF-8 size, capped at 16 KiB."""
    return min(len(result.output.encode("utf-8")), RESULT_HEAD_BYTES)


def projection_indexes(retained_sizes: Sequence[int]) -> list[int]:
    """Indexes (oldest first) of the records the cold-rebuild tool projection keeps.

    Walks from the newest record back, taking records while fewer than 32 are taken and
    the retained bytes stay within 64 KiB; the first record that would break either
    bound ends the projection.
    """
    taken: list[int] = []
    total = 0
    for index in range(len(retained_sizes) - 1, -1, -1):
        size = retained_sizes[index]
        if len(taken) >= PROJECTION_MAX_RECORDS or total + size > PROJECTION_MAX_BYTES:
            break
        taken.append(index)
        total += size
    return sorted(taken)


def projected_records(records: Sequence[ToolResult]) -> list[int]:
    """`projection_indexes` for a trace's tool results."""
    return projection_indexes([retained_bytes(r) for r in records])
