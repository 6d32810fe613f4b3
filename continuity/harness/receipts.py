"""The records a probe child exchanges with its parent (light: no MCP imports)."""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.harness.compaction import CompactionEvent
from continuity.harness.messages import Usage
from continuity.harness.reseed import ReseedEvent
from continuity.memory.pack import PackReceipt
from continuity.memory.retained import RetainedStats
from continuity.probes.availability import NeedleState
from continuity.providers.endpoint import CallReceipt, RealBinding

__all__ = ["HistoryCall", "ProbeRequest", "SampleEvidence"]


class ProbeRequest(msgspec.Struct, frozen=True, kw_only=True):
    arm: str
    probe_text: str
    probe_index: int = 0
    parent_pid: int
    dump_requests: str | None = None
    # Evaluator-only values whose presence availability analysis checks after the turn;
    # they never reach the reader.
    needles: list[str] = msgspec.field(default_factory=list)
    # Real mode: the reader endpoint, call cache and ledger (None: the scripted reader).
    real: RealBinding | None = None


class HistoryCall(msgspec.Struct, frozen=True):
    action: str
    status: Literal["succeeded", "unavailable", "invalid"]
    bytes: int


class SampleEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What one probe sample observed. Content-free: counts, events, digests."""

    schema: str = "continuity-sample-evidence-v1"
    arm: str
    probe_index: int
    trace_id: str
    parent_pid: int
    child_pid: int
    history_model: str
    reader_model: str
    operations: list[str]
    reseed: ReseedEvent | None
    compaction: CompactionEvent | None
    mid_trace_compaction: CompactionEvent | None
    mid_run_compactions: list[CompactionEvent]
    tools_offered: list[str]
    history_calls: list[HistoryCall]
    store: RetainedStats | None
    store_error: str | None
    tool_history_status: str
    tool_history_warnings: list[str]
    pack: PackReceipt | None
    packs_per_request: list[int]
    requests: int
    probe_input_tokens: int
    usage: Usage
    compaction_usage: Usage
    answer: str
    needle_states: list[NeedleState] = msgspec.field(default_factory=list)
    # Real mode: one receipt per model call (answer and summary), cached or not.
    calls: list[CallReceipt] = msgspec.field(default_factory=list)
