"""The free selection replay: three upkeep passes with no provider, through the real
retention, source admission, selection, fitting and durable offer settlement.

`replay_selection` retains a trace's owner turns, steers and tool results into a fresh
retained store (the retention the harness uses, credential omission included), then runs
three passes over it: each claims a journal row, scans and admits the sources, selects
and fits an offer, reserves and dispatches it and settles it as a provider-free,
analysis-only pass (the deliberately empty delta: no entry is published, so the next
pass sees the same ledger). It returns the exact fitted source descriptors and their
retained records on every pass, the empty one included.

This is a source-only projection of a trace, not the benchmark harness: it offers what
the harness would retain, without sessions, models or tools. Its snapshots
(`PassSnapshot.compact`) pin offers by digest, counts, owner ordinals, caps and budget
projections, for regression tests of the selector. They are availability regressions,
not extraction quality.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from continuity.memory.ledger_journal import operation_id
from continuity.memory.ledger_prompt import fixed_tokens
from continuity.memory.ledger_sources import admit_sources, scan_sources
from continuity.memory.ledger_store import LedgerStore
from continuity.memory.retained import RetainedStore
from continuity.memory.upkeep_selection import (
    BOOTSTRAP_CAPS,
    INCREMENTAL_CAPS,
    Offer,
    SelectionCaps,
    caps_for,
    select_offer,
)
from continuity.memory.upkeep_sources import SourceDescriptor
from continuity.traces.schema import OwnerMessage, ReplayTrace, Steer, ToolResult, iter_turns

__all__ = [
    "PASSES",
    "FittedSource",
    "PassResult",
    "PassSnapshot",
    "compact",
    "project_sources",
    "replay_selection",
]

PASSES = 3


class FittedSource(msgspec.Struct, frozen=True, kw_only=True):
    """One source an offer fitted: its descriptor, its retained record's text and the
    spans of it offered (index, bytes, digest)."""

    descriptor: SourceDescriptor
    record: str
    spans: list[tuple[int, int, str]]


class PassSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A pass, content-free: what regression tests pin."""

    stage: int
    kind: str
    outcome: str
    offer_digest: str
    spans: int
    owner_spans: int
    tool_spans: int
    owner_records: int
    tool_records: int
    owner_ordinals: list[int]
    tool_ordinals: list[int]
    source_digests: list[str]
    limit: int
    max_spans: int
    bonus: int
    input_tokens: int
    projected_tokens: int


class PassResult(msgspec.Struct, frozen=True, kw_only=True):
    snapshot: PassSnapshot
    fitted: list[FittedSource]


def project_sources(trace: ReplayTrace, retained_path: Path) -> RetainedStore:
    """Retain `trace` as the harness would: owner turns and steers attributed to the
    owner, every tool result (one holding a credential assignment omitted whole)."""
    store = RetainedStore(retained_path)
    for _, _, turn in iter_turns(trace):
        if isinstance(turn, OwnerMessage):
            store.retain_owner(turn.text, source="owner", entry_ref=turn.turn_id)
        elif isinstance(turn, Steer):
            store.retain_owner(turn.text, source="steer", entry_ref=turn.turn_id)
        elif isinstance(turn, ToolResult):
            store.retain_tool_result(
                turn.output, tool=turn.tool, tool_kind=turn.tool_kind, entry_ref=turn.turn_id
            )
    return store


def _snapshot(stage: int, caps: SelectionCaps, outcome: str, offer: Offer | None) -> PassSnapshot:
    spans = offer.spans if offer is not None else ()
    owner = [s for s in spans if s.kind == "owner"]
    return PassSnapshot(
        stage=stage,
        kind=caps.kind,
        outcome=outcome,
        offer_digest=offer.digest if offer is not None else "",
        spans=len(spans),
        owner_spans=len(owner),
        tool_spans=len(spans) - len(owner),
        owner_records=len(offer.owner_ordinals) if offer else 0,
        tool_records=len(offer.tool_ordinals) if offer else 0,
        owner_ordinals=offer.owner_ordinals if offer else [],
        tool_ordinals=offer.tool_ordinals if offer else [],
        source_digests=[s.digest for s in spans],
        limit=offer.limit if offer else 0,
        max_spans=caps.max_spans,
        bonus=offer.bonus if offer else 0,
        input_tokens=caps.input_tokens,
        projected_tokens=offer.projected_tokens if offer else 0,
    )


def replay_selection(
    trace: ReplayTrace,
    *,
    caps: Sequence[SelectionCaps] | None = None,
    workdir: Path | None = None,
) -> list[PassResult]:
    """Three provider-free upkeep passes over `trace`'s retained sources (see the
    module doc). `caps` replaces the bootstrap and incremental caps per pass (a base
    selector for regressions: the same caps with ``bonus_cap=0``)."""
    chosen = (
        list(caps) if caps is not None else [BOOTSTRAP_CAPS, INCREMENTAL_CAPS, INCREMENTAL_CAPS]
    )
    with tempfile.TemporaryDirectory(dir=workdir) as folder:
        root = Path(folder)
        retained = project_sources(trace, root / "retained.sqlite3")
        store = LedgerStore.create(root / "ledger.sqlite3", owner=f"selection:{trace.trace_id}")
        try:
            return [_pass(store, retained, stage, chosen) for stage in range(1, PASSES + 1)]
        finally:
            store.close()
            retained.close()


def _pass(
    store: LedgerStore, retained: RetainedStore, stage: int, chosen: list[SelectionCaps]
) -> PassResult:
    kind, _ = store.claim()
    caps = chosen[stage - 1] if chosen[stage - 1].kind == kind else caps_for(kind)
    oversized = admit_sources(store, retained)
    scan = scan_sources(store, retained, oversized=oversized)
    head = store.head()
    offer = select_offer(scan.spans, store.offered_slots(), caps, fixed_tokens=fixed_tokens(head))
    tag = f"p{stage}"
    if isinstance(offer, str):
        return PassResult(snapshot=_snapshot(stage, caps, offer, None), fitted=[])
    op_id = operation_id(stage, tag, offer.digest, head.id)
    store.reserve(
        op_id=op_id,
        stage=stage,
        tag=tag,
        kind=kind,
        input_reservation=caps.input_tokens,
        output_reservation=caps.output_tokens,
        offer=offer,
        generation_before=head.id,
    )
    store.dispatch(op_id)
    store.settle(op_id, outcome="analysis_only", usage=None)
    texts = {row.seq: row.text for row in retained.source_rows()}
    by_ordinal = {d.ordinal: d for d in scan.descriptors}
    fitted: dict[int, list[tuple[int, int, str]]] = {}
    for span in offer.spans:
        fitted.setdefault(span.ordinal, []).append((span.index, span.bytes, span.digest))
    return PassResult(
        snapshot=_snapshot(stage, caps, "analysis_only", offer),
        fitted=[
            FittedSource(descriptor=by_ordinal[o], record=texts[o], spans=spans)
            for o, spans in sorted(fitted.items())
        ],
    )


def compact(results: Sequence[PassResult]) -> list[dict[str, Any]]:
    """The snapshots as plain data (what a regression fixture stores)."""
    return [msgspec.to_builtins(r.snapshot) for r in results]
