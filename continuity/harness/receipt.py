"""The replay receipt: what a checkpoint's replay records about itself, content-free.

Kept apart from `continuity.harness.replay`, so code that only reads a checkpoint's
receipt (the runner, which reuses stored checkpoints) never imports the replay's MCP,
HTTP and server stacks.
"""

from __future__ import annotations

import msgspec

from continuity.harness.compaction import CompactionEvent
from continuity.harness.keys import ReplayConfig
from continuity.memory.retained import RetainedStats
from continuity.messages import Usage
from continuity.providers.endpoint import CallReceipt

__all__ = ["ReplayReceipt"]


class ReplayReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """Content-free facts about one replay: counts, digests, usage."""

    schema: str = "continuity-replay-receipt-v1"
    trace_id: str
    trace_digest: str
    config: ReplayConfig
    owner_turns: int
    requests: int
    tool_calls: int
    steers_offered: int
    steers_owner: int
    session_entries: int
    context_messages: int
    context_digest: str
    history_records: int
    tool_records: int
    truncated_records: int
    retained_bytes: int
    call_log_verified: bool
    usage: Usage
    retained: RetainedStats | None = None
    mid_trace_compaction: CompactionEvent | None = None
    # Real mode only: the receipts of the real mid-trace summary's calls.
    mid_trace_calls: list[CallReceipt] = msgspec.field(default_factory=list)
