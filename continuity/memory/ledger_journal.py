"""The ledger journal's records as read back: operation rows, a journal snapshot, a
source scan, and deterministic operation ids (`continuity.memory.ledger_store` writes
them; a preparation's parent compares snapshots)."""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.digest import value_digest
from continuity.messages import Usage

__all__ = [
    "JournalSnapshot",
    "OpKind",
    "OpState",
    "Operation",
    "operation_id",
]

OpKind = Literal["bootstrap", "incremental"]
OpState = Literal["reserved", "dispatched", "settled", "released"]


class Operation(msgspec.Struct, frozen=True, kw_only=True):
    """One journal row, as read back (content-free)."""

    seq: int
    op_id: str
    stage: int
    tag: str
    kind: OpKind
    state: OpState
    input_reservation: int
    output_reservation: int
    offer_digest: str
    offers: int
    generation_before: str
    generation_after: str | None
    outcome: str | None
    usage: Usage | None

    @property
    def consuming(self) -> bool:
        """Dispatched (settled or not) and never released: it consumed its offer and,
        if it is the bootstrap, the bootstrap."""
        return self.state in ("dispatched", "settled")


class JournalSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The journal and the head generation at one moment: what a preparation's parent
    compares before and after each stage (operation ids, not just counts)."""

    operations: tuple[Operation, ...]
    offered: tuple[tuple[int, int], ...]  # settled offers: (ordinal, span), sorted
    head: str
    head_number: int
    entry_ids: tuple[str, ...]

    def by_id(self) -> dict[str, Operation]:
        return {op.op_id: op for op in self.operations}


def operation_id(stage: int, tag: str, offer_digest: str, generation: str) -> str:
    """A deterministic operation id: two builds of one preparation journal alike."""
    return "op-" + value_digest(("continuity-upkeep-op", stage, tag, offer_digest, generation))[:24]
