"""The records a probe child exchanges with its parent (light: no MCP imports)."""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from continuity.harness.compaction import CompactionEvent
from continuity.harness.reseed import ReseedEvent
from continuity.lookup.receipts import LookupBinding, LookupWitness
from continuity.memory.pack import PackReceipt
from continuity.memory.retained import RetainedStats
from continuity.messages import Usage
from continuity.probes.availability import NeedleState
from continuity.providers.endpoint import CallReceipt, RealBinding
from continuity.store import ObjectRef

__all__ = [
    "HistoryCall",
    "LedgerInjection",
    "ProbeCall",
    "ProbeReply",
    "ProbeRequest",
    "ProcessReceipt",
    "SampleEvidence",
]


class ProbeRequest(msgspec.Struct, frozen=True, kw_only=True):
    arm: str
    probe_text: str
    # The probe's expectation category: which answer form the probe turn asks for
    # (`continuity.probes.protocol.answer_form`); "" asks for free text.
    category: str = ""
    probe_index: int = 0
    parent_pid: int
    dump_requests: str | None = None
    # Evaluator-only values whose presence availability analysis checks after the turn;
    # they never reach the reader.
    needles: list[str] = msgspec.field(default_factory=list)
    # Real mode: the reader endpoint, call cache and ledger (None: the scripted reader).
    real: RealBinding | None = None
    # Lookup mode (lookup-allowed-v1); None for recall-only.
    lookup: LookupBinding | None = None
    # (reader, alternate) replacing the configured pair (the ledger arm's plan models).
    models: tuple[str, str] | None = None
    # The store the reader's context is kept in (`continuity.sampling.context`); None
    # keeps none.
    store_root: str | None = None


class HistoryCall(msgspec.Struct, frozen=True):
    action: str
    status: Literal["succeeded", "unavailable", "invalid"]
    bytes: int


class LedgerInjection(msgspec.Struct, frozen=True, kw_only=True):
    """The ledger arm's treatment in one probe, content-free: the committed generation
    injected into every reader request, its size, the upkeep journal's row count before
    the probe and after it (upkeep never runs in a probe), and whether the probe's
    configuration had upkeep enabled. `error` is the code when no ledger could be read
    (missing, unowned or corrupt store): no ledger is injected then."""

    generation: int = 0
    generation_id: str = ""
    entries: int = 0
    tokens: int = 0
    operations_before: int = 0
    operations_after: int = 0
    upkeep_enabled: bool = False
    error: str | None = None


class SampleEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What one probe sample observed. Content-free: counts, events, digests.

    Deterministic: two samples of one key are the same bytes, so nothing that differs
    between two runs of it (process ids, times) is here; those go in its
    `ProcessReceipt`, kept beside the artifact, never in it."""

    schema: str = "continuity-sample-evidence-v2"
    arm: str
    probe_index: int
    trace_id: str
    # The probe ran in a process other than the one that asked for it (the child's pid
    # differed from the requesting parent's pid); the pids are in its ProcessReceipt.
    fresh_process: bool
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
    tool_history_status: Literal["ok", "degraded"]
    tool_history_warnings: list[str]
    pack: PackReceipt | None
    packs_per_request: list[int]
    requests: int
    probe_input_tokens: int
    usage: Usage
    compaction_usage: Usage
    answer: str
    needle_states: list[NeedleState] = msgspec.field(default_factory=list)
    # Real mode: one receipt per model call (answer and summary), made or replayed (the
    # replayed keys are in the sample's ProcessReceipt).
    calls: list[CallReceipt] = msgspec.field(default_factory=list)
    lookup: LookupWitness | None = None
    # The ledger arm: its injected ledger, and the ledger messages of every reader
    # request. Unset (left out of the sealed bytes) for a control whose requests carried
    # none, so every other arm's evidence is what it was before the ledger arm existed.
    ledger: LedgerInjection | UnsetType = UNSET
    ledgers_per_request: list[int] | UnsetType = UNSET
    # What the reader saw at the probe: the store tree of its last request
    # (`continuity.sampling.context`). Unset when the probe kept none (no store given).
    context: ObjectRef | UnsetType = UNSET


class ProcessReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """Which processes ran one probe sample, for how long, and which of its calls were
    replayed: what differs between two runs of one sample, so it is kept beside the
    sealed artifact (the unit's or sample's action-entry meta), never inside it."""

    schema: str = "continuity-process-receipt-v2"
    probe_index: int
    parent_pid: int
    child_pid: int
    elapsed_seconds: float
    # Real mode: the keys of the sample's calls that were replayed from the call cache
    # (the rest were made live); its sealed `CallReceipt`s do not say which.
    replayed_calls: list[str] = msgspec.field(default_factory=list)


class ProbeCall(msgspec.Struct, frozen=True):
    """`probe_target`'s payload: the checkpoint's workspace and the request."""

    workspace: str
    request: ProbeRequest


class ProbeReply(msgspec.Struct, frozen=True):
    """`probe_target`'s reply: the child's pid, and its evidence or its error line."""

    pid: int
    evidence: SampleEvidence | None = None
    error: str | None = None
