"""The records a ledger preparation exchanges and keeps (light: no MCP or HTTP imports).

- `LedgerBinding`: what a prepared checkpoint's key binds: the answering sequence
  (A -> R -> A), the extractor, the strict request-cap policy and, for tests and the
  mechanism smoke only, a scripted extractor fault.
- `StageRequest`: one stage, sent to its fresh child process on its stdin pipe.
- `StageReceipt`: what the stage proved, content-free: the boundary it crossed, as the
  durable session recorded it, and its upkeep receipt.
- `PreparationReceipt`: the three stages, the final committed generation, and the
  integrity problems and degradations found. Sealed in the prepared checkpoint's action
  entry and in every unit that forks it.
- `StageProcess`: which process ran a stage (pids differ between two builds of one key,
  so they are kept beside the sealed receipt, never in it).
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from continuity.memory.upkeep_receipts import GenerationRef, UpkeepReceipt
from continuity.providers.endpoint import RealBinding

__all__ = [
    "FAULTS",
    "PREPARATION_SCHEMA",
    "STAGES",
    "Fault",
    "LedgerBinding",
    "PreparationReceipt",
    "Script",
    "StageProcess",
    "StageReceipt",
    "StageReply",
    "StageRequest",
]

PREPARATION_SCHEMA = "continuity-ledger-preparation-v1"
STAGES = 3
# Scripted extractor faults (offline; each drives one outcome through the real path).
Fault = Literal[
    "invalid_json",
    "empty_output",
    "output_overrun",
    "input_overrun",
    "stream_overrun",
    "unavailable",
    "hang",
]
Script = Literal["excerpt", "salient"]
FAULTS: tuple[str, ...] = get_args(Fault)


class LedgerBinding(msgspec.Struct, frozen=True, kw_only=True):
    """What a prepared checkpoint binds beyond its base checkpoint and repeat.

    `sequence` is the answering model of each stage (A, R, A: alternate, reader,
    alternate); `extractor` is the model that extracts (the reader unless the plan
    names another); `faults` maps a stage number to a scripted fault (never set by a
    plan: the smoke and the tests only)."""

    schema: str = "continuity-ledger-binding-v1"
    sequence: tuple[str, str, str]
    extractor: str
    require_request_cap: bool = False
    faults: dict[int, Fault] = msgspec.field(default_factory=dict)
    # The scripted extractor's answer (offline): ``excerpt`` (every plan) or ``salient``
    # (the mechanism smoke: every line holding a reference or an amount).
    script: Script = "excerpt"


class StageRequest(msgspec.Struct, frozen=True, kw_only=True):
    workspace: str
    arm: str
    stage: int
    tag: str
    answering_model: str
    extractor: str
    require_request_cap: bool
    enforcement: str
    context_window: int | None = None
    fault: Fault | None = None
    real: RealBinding | None = None  # the extractor's endpoint in real mode
    capture: str | None = None  # this stage's capture file (fictional traces only)
    script: Script = "excerpt"
    # Offline diagnostics (the mechanism smoke): every extraction request's wire payload
    # is appended here, one a line.
    dump_requests: str | None = None
    parent_pid: int


class StageReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """One stage, content-free: the model change it made (from the session's model to
    its answering model), the operations the durable session recorded for it, whether
    it ran in a process other than its parent, and its upkeep."""

    stage: int
    tag: str
    answering_model: str
    from_model: str
    to_model: str
    operations: list[str]
    fresh_process: bool
    upkeep: UpkeepReceipt
    failure: str | None = None  # the child failed (its code and message), no receipt


class StageProcess(msgspec.Struct, frozen=True, kw_only=True):
    stage: int
    parent_pid: int
    child_pid: int
    elapsed_seconds: float


class StageReply(msgspec.Struct, frozen=True, kw_only=True):
    """A stage child's reply: its receipt and its pid (the pid goes beside the sealed
    receipt)."""

    receipt: StageReceipt
    pid: int
    # Real mode: the keys of its calls replayed from the call cache (beside the receipt).
    replayed: list[str] = msgspec.field(default_factory=list)


class PreparationReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """Three stages over one checkpoint. `integrity` lists every protocol problem (any
    problem invalidates the treatment: its samples are excluded, never scored);
    `degradations` the allowlisted reasons the stages continued after."""

    schema: str = PREPARATION_SCHEMA
    trace_id: str
    repeat: int
    sequence: tuple[str, str, str]
    extractor: str
    stages: list[StageReceipt]
    final: GenerationRef | None
    integrity: list[str]
    degradations: list[str]

    @property
    def valid(self) -> bool:
        return not self.integrity
