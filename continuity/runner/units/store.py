"""Sealing and storing units: a unit's record assembled and sealed from its results,
recorded in the store under its key, and materialised as its run's unit file.

A sealed record is deterministic bytes: two builds of one key store the same blob.
What differs between builds (pids, times, which calls were replayed from the call
cache) is kept beside it, in its action entry's meta (`store_unit`, `replayed_calls`).
A unit file is written from the store's copy, never from memory (`materialise`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from continuity.arms import Arm
from continuity.errors import ObjectMissing, UsageError
from continuity.lookup.receipts import LookupWitness
from continuity.outputs import write_output
from continuity.preparation.receipts import PreparationReceipt
from continuity.probes.judge import JudgeVerdict
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.providers.endpoint import CallReceipt
from continuity.runner.units.record import (
    ProbeResult,
    ProbeStatus,
    UnitRecord,
    seal,
    unit_filename,
)
from continuity.sampling.receipts import ProcessReceipt
from continuity.store import ObjectRef, Store
from continuity.traces.schema import Probe, Trace

if TYPE_CHECKING:
    from continuity.traces.suites import SuiteItem

__all__ = [
    "RETRIEVAL_LOSS",
    "UnitFrame",
    "calls_made",
    "context_refs",
    "failed_result",
    "invalid_treatment_result",
    "materialise",
    "refuse_second_observations",
    "replayed_calls",
    "seal_unit",
    "store_unit",
]


@dataclass(frozen=True)
class UnitFrame:
    """What a unit's record says before any probe runs: its key, trace, arm, repeat,
    checkpoint, planned probes, the slots it skips (probe id -> the policy's class) and
    the binding its key binds."""

    key: str
    item: SuiteItem
    trace: Trace
    arm: Arm
    repeat: int
    checkpoint: str
    probes: Sequence[Probe]
    skipped: dict[str, str]
    binding: dict[str, Any] | None
    # The ledger arm: the generation its preparation committed (set once prepared).
    committed: str | None = None


def _unsampled(
    probe: Probe,
    index: int,
    status: ProbeStatus,
    reasons: list[str],
    witness: LookupWitness | None = None,
) -> ProbeResult:
    """A probe result with no sample (no answer, never scored)."""
    return ProbeResult(
        probe_id=probe.probe_id,
        index=index,
        category=probe.category,
        design_role=probe.design_role,
        status=status,
        reasons=reasons,
        answer="",
        witness=witness,
    )


# A probe child that failed because its ConversationHistory went away (the server died
# mid-call, the retained store vanished): its retrieval was unavailable.
RETRIEVAL_LOSS = ("tool_server_unavailable", "history_unavailable")


def failed_result(
    probe: Probe,
    index: int,
    reason: str,
    witness: LookupWitness | None = None,
    *,
    retrieves: bool = False,
) -> ProbeResult:
    """A probe with no sample: its child (or the unit's checkpoint) failed. In an arm
    that retrieves (`retrieves`), a failure from losing its retrieval is
    ``store_degraded`` (`RETRIEVAL_LOSS`); anything else is ``failed``. Both are
    excluded, never scored."""
    lost = retrieves and reason.split(":", 1)[0] in RETRIEVAL_LOSS
    return _unsampled(probe, index, "store_degraded" if lost else "failed", [reason], witness)


def invalid_treatment_result(probe: Probe, index: int, problems: list[str]) -> ProbeResult:
    """A ledger-arm probe whose preparation broke the upkeep protocol: it never ran
    (there is no valid treatment to ask it under); excluded, never scored."""
    reasons = [f"preparation: {problem}" for problem in problems]
    return _unsampled(probe, index, "treatment_invalid", reasons)


def _infeasible_result(probe: Probe, index: int, slot: str) -> ProbeResult:
    """A lookup slot the policy classes as inventory-infeasible: it never ran."""
    return _unsampled(probe, index, "inventory_infeasible", [slot])


def seal_unit(
    frame: UnitFrame,
    results: list[ProbeResult],
    verdicts: list[JudgeVerdict] | None = None,
    judge_calls: list[CallReceipt] | None = None,
    upkeep: PreparationReceipt | None = None,
) -> UnitRecord:
    """The sealed record, with inventory-infeasible slots in their probe order."""
    ran = {r.probe_id: r for r in results}
    ordered = [
        _infeasible_result(probe, index, frame.skipped[probe.probe_id])
        if probe.probe_id in frame.skipped
        else ran[probe.probe_id]
        for index, probe in enumerate(frame.probes)
    ]
    return seal(
        UnitRecord(
            key=frame.key,
            repeat=frame.repeat,
            family=frame.trace.family,
            trace_id=frame.trace.trace_id,
            trace_key=frame.item.key,
            arm=frame.arm.id,
            checkpoint=frame.checkpoint,
            probe_ids=[p.probe_id for p in frame.probes],
            probes=ordered,
            judge=verdicts or [],
            binding=frame.binding,
            judge_calls=judge_calls or [],
            probe_protocol=PROBE_PROTOCOL,
            complete=not frame.skipped,
            eligible_terminal=True,
            upkeep=upkeep if upkeep is not None else UNSET,
        )
    )


def store_unit(store: Store, record: UnitRecord, **meta: Any) -> UnitRecord:
    """Record a sealed unit in the store under its key (what later runs reuse).

    The record is deterministic bytes (two builds of one key write the same blob);
    what differs between builds (the probes' `ProcessReceipt`s, the replayed call keys)
    goes in `meta`."""
    store.record_action(
        record.key,
        kind="unit",
        output=store.put_blob(msgspec.json.encode(record)),
        inputs={"checkpoint": record.checkpoint, "trace": record.trace_key},
        meta={"trace_id": record.trace_id, "arm": record.arm, "repeat": record.repeat, **meta},
    )
    return record


def context_refs(records: Iterable[UnitRecord]) -> list[ObjectRef]:
    """The stored reader contexts the `records`' samples name, once each, in order: a
    plan that pins the units pins these too, so ``doit gc`` keeps what their drill-down
    shows (a unit names them inside its blob, which the store does not read)."""
    refs: dict[str, ObjectRef] = {}
    for record in records:
        for probe in record.probes:
            evidence = probe.evidence
            if evidence is not None and evidence.context is not UNSET:
                refs.setdefault(evidence.context.digest, evidence.context)
    return list(refs.values())


def replayed_calls(store: Store, record: UnitRecord) -> set[str]:
    """The keys of the calls the unit's build replayed from the call cache instead of
    making them (its probes', its judge's and its mid-trace summary's), read from its
    action entry's meta: the sealed unit does not say. Empty when the store holds no
    entry for it (nothing is known to have been replayed)."""
    entry = store.get_action(record.key, verify_output=False)
    if entry is None:
        return set()
    keys = {
        key
        for process in msgspec.convert(entry.meta.get("processes") or [], list[ProcessReceipt])
        for key in process.replayed_calls
    }
    keys.update(entry.meta.get("judge_replayed") or [])
    keys.update(entry.meta.get("mid_trace_replayed") or [])
    keys.update(entry.meta.get("agent_replayed") or [])  # an outside agent's probe calls
    return keys


def calls_made(store: Store, records: Sequence[UnitRecord], keys: Iterable[str]) -> int:
    """How many of the call `keys` (of `records`' samples) their units' builds made,
    rather than replayed from the call cache (`replayed_calls`)."""
    replayed: set[str] = set().union(*(replayed_calls(store, r) for r in records))
    return sum(1 for key in keys if key not in replayed)


def refuse_second_observations(records: Sequence[UnitRecord], folder: Path) -> None:
    """Lookup mode never replaces one observation of a slot with another: a unit file
    already holding a different unit (another key) for the same repeat, trace and arm
    stops the run before anything is written.

    Raises:
        UsageError: ``lookup_slot_observed``, naming the first such file.
    """
    clashes = []
    for record in records:
        path = folder / unit_filename(record)
        try:
            present = msgspec.json.decode(path.read_bytes(), type=UnitRecord).key
        except FileNotFoundError:
            continue
        except (OSError, msgspec.MsgspecError):
            present = "?"
        if present != record.key:
            clashes.append(path)
    if clashes:
        raise UsageError(
            f"{len(clashes)} unit files of this run already hold another observation of "
            f"their slot (first: {clashes[0].name}); lookup mode never overwrites one. "
            "Use a new --run, or remove those files to discard the old observations. The "
            "new units are in the store, so the rerun only materialises them",
            code="lookup_slot_observed",
            location=str(clashes[0]),
        )


def materialise(store: Store, folder: Path, record: UnitRecord) -> UnitRecord:
    """Write a stored unit's file from the store's copy, never from memory: when another
    invocation built the same key concurrently, the file is what the store keeps.

    Raises:
        ObjectMissing: ``object_missing`` when the store no longer holds the unit (a
            concurrent ``doit gc``, or its blob failed its digest); rerun to rebuild it.
    """
    stored = store.load_output(record.key)
    if stored is None:
        raise ObjectMissing(
            f"unit {record.key[:16]} ({unit_filename(record)}) was stored but the store no "
            "longer holds a verified copy; run the same command again to rebuild it",
            location=str(folder / unit_filename(record)),
        )
    write_output(folder / unit_filename(record), msgspec.json.format(stored) + b"\n")
    return msgspec.json.decode(stored, type=UnitRecord)
