"""The probe child's last step: seal what the probe observed into its `SampleEvidence`.

The evidence is content-free (counts, events, digests) apart from the reader's answer,
and deterministic: two samples of one key are the same bytes. It includes the
evaluator's needle states: whether each needle was in what the reader had before the
probe question, and whether the reference lookup path finds it in the retained store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import msgspec
from msgspec import UNSET, UnsetType

from continuity.harness.loop import TurnReport
from continuity.harness.workspace import Workspace
from continuity.lookup.receipts import LookupWitness, PathReceipt
from continuity.memory.ledger import is_ledger
from continuity.memory.pack import is_pack
from continuity.memory.retained import RetainedStore
from continuity.messages import ModelRequest, UserMessage
from continuity.probes.availability import ContextText, NeedleState, reference_lookup
from continuity.sampling.boundary import (
    Crossing,
    MidRunCompaction,
    ProbeSetup,
    Restored,
    journal_rows,
)
from continuity.sampling.reader import ProbeReader
from continuity.sampling.receipts import HistoryCall, LedgerInjection, SampleEvidence

__all__ = ["Asked", "before_probe", "needle_states", "seal_evidence"]


@dataclass(frozen=True)
class Asked:
    """What the probe turn did: the loop's report, the tools offered, every history
    call, the reference paths (lookup reference mode) and the first request's input
    tokens when the turn step measured them itself (None: the reader's count)."""

    report: TurnReport
    tools_offered: list[str]
    history_calls: list[HistoryCall]
    paths: list[PathReceipt]
    probe_input_tokens: int | None = None


def before_probe(first: ModelRequest | None) -> list[str]:
    """The texts the reader had before the probe question: the first probe request's
    messages up to the last one before the probe turn (never the question itself)."""
    if first is None:
        return []
    messages = list(first.messages)
    probe_at = max(
        (i for i, m in enumerate(messages) if isinstance(m, UserMessage) and m.source == "probe"),
        default=len(messages),
    )
    return [getattr(m, "text", "") for m in messages[:probe_at]]


def needle_states(
    needles: list[str], first: ModelRequest | None, store: RetainedStore | None
) -> list[NeedleState]:
    """Availability facts for the evaluator's needles: in the reader's context before the
    probe question (after the boundary, before any retrieval; normalised once, matched
    whole-token), and, where a retained store is offered, found by the reference lookup
    path within the lookup budget."""
    if not needles:
        return []
    context = ContextText(before_probe(first))
    states = []
    for needle in needles:
        found = reference_lookup(store, needle) if store is not None else None
        states.append(
            NeedleState(
                in_context=context.holds(needle),
                retrievable=found.retrievable if found is not None else None,
                calls=found.calls if found is not None else 0,
                bytes=found.bytes if found is not None else 0,
            )
        )
    return states


def _ledger_messages(message: object) -> int:
    return int(isinstance(message, UserMessage) and is_ledger(message.text))


def seal_evidence(
    setup: ProbeSetup,
    restored: Restored,
    crossing: Crossing,
    reader: ProbeReader,
    asked: Asked,
    mid_run: MidRunCompaction,
    witness: LookupWitness | None,
    workspace: Workspace,
) -> SampleEvidence:
    """The sample's evidence, once the turn and its tools are closed (the ledger arm's
    journal is counted again here: a row added during the probe would be upkeep)."""
    request, arm, seen = setup.request, setup.arm, reader.seen
    store = restored.store
    states = needle_states(
        request.needles, seen[0] if seen else None, store if arm.history_tool else None
    )
    answer = restored.session.context()[-1]
    ledger, counts = _ledger_evidence(crossing, workspace, seen)
    first_input = asked.probe_input_tokens
    return SampleEvidence(
        arm=arm.id,
        probe_index=request.probe_index,
        trace_id=restored.facts.trace_id,
        # The pids themselves differ between two runs of one sample: the parent
        # keeps them in the sample's ProcessReceipt, outside the sealed evidence.
        fresh_process=os.getpid() != request.parent_pid,
        history_model=crossing.history_model,
        reader_model=setup.config.models.reader,
        operations=crossing.operations,
        reseed=crossing.reseed,
        compaction=crossing.compaction,
        mid_trace_compaction=restored.facts.mid_trace_compaction,
        mid_run_compactions=mid_run.events,
        tools_offered=asked.tools_offered,
        history_calls=asked.history_calls,
        store=store.stats() if store is not None else None,
        store_error=restored.store_error,
        tool_history_status=restored.tool_history.status,
        tool_history_warnings=list(restored.tool_history.warnings),
        pack=crossing.pack,
        packs_per_request=[sum(is_pack(m) for m in r.messages) for r in seen],
        requests=asked.report.requests,
        probe_input_tokens=first_input if first_input is not None else reader.probe_input_tokens(),
        usage=asked.report.usage,
        compaction_usage=mid_run.usage(crossing.compaction),
        answer=getattr(answer, "text", ""),
        needle_states=states,
        calls=reader.calls(),
        lookup=witness,
        ledger=ledger,
        ledgers_per_request=counts,
    )


def _ledger_evidence(
    crossing: Crossing, workspace: Workspace, seen: list[ModelRequest]
) -> tuple[LedgerInjection | UnsetType, list[int] | UnsetType]:
    """The ledger arm's injection (the journal counted again after the probe) and the
    ledger messages per request; for a control, the counts only if a request carried a
    ledger (otherwise nothing: its sealed evidence is as it always was)."""
    counts = [sum(_ledger_messages(m) for m in r.messages) for r in seen]
    injection = crossing.ledger
    if injection is None:
        return UNSET, (counts if any(counts) else UNSET)
    if injection.error is None:
        injection = msgspec.structs.replace(injection, operations_after=journal_rows(workspace))
    return injection, counts
