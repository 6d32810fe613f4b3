"""The lookup report (lookup-allowed-v1): every planned slot, mechanics and recovery.

Per arm it keeps every planned slot (from ``<run>/lookup-slots.json``): missing (never
observed), duplicate (observed more than once, reported with its occurrence count),
blocked (its planned disposition is ``unknown``: the policy never measured it, which
raises ``lookup_unknown_feasibility``; counted independently of observation status, so
it can overlap missing or duplicate), unstarted, failed and skipped
(inventory-infeasible). A duplicate slot is ambiguous: none of its occurrences enters
exact accuracy or the call, byte and latency statistics (never first- or last-wins);
the aggregate also keeps it out of every other table and the spend
(continuity.report.duplicates).
It names the scripted reader binding(s) the units ran on, and reports

- **source availability** of annotated slots (in context, retrievable, absent) and how
  many slots have unknown source provenance;
- **reference feasibility** (the policy's class of every annotated slot);
- **exact**: correct over completed eligible exact-value (tool-identifier) slots;
  inventory-infeasible slots are in neither numerator nor denominator;
- **exact with failures**: the same, counting failed feasible slots as incorrect, with
  that count shown; missing and unstarted slots stay coverage-only;
- **witnessed recovery**: slots whose value was initially absent from the reader's
  context, whose annotated source came back whole with a verified digest, and whose
  answer is correct. Unknown provenance never establishes recovery. Descriptive
  evidence, not a causal estimate;
- calls, bytes and latency per completed slot, and exhaustion by cause (the proxy
  aborted on calls or bytes) and the reader's voluntary budget stops. Latency is the
  probe process's wall time (fork to reap) from its `ProcessReceipt`, which the unit's
  action entry keeps beside the sealed unit (`with_latency`); a slot with no receipt
  (the store holds no action entry for the unit) has no latency, is left out of the
  mean and counted in ``latency_unknown``.

Witnesses persist only ids, digests, counts and classifications.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from continuity.messages import Usage
from continuity.report.results import DuplicateOccurrence, LookupArm, Rate
from continuity.runner.units.build import UnitRecord
from continuity.sampling.receipts import ProcessReceipt

__all__ = ["UNKNOWN", "LookupRow", "SlotKey", "lookup_rows", "lookup_table", "with_latency"]

SlotKey = tuple[int, str, str, str]  # (repeat, trace id, arm, probe id)
UNKNOWN = "unknown"  # a planned slot's disposition when the policy never measured it


class LookupRow(msgspec.Struct, frozen=True, array_like=True):
    probe_id: str
    category: str
    status: str
    reason: str
    annotated: bool
    correct: bool | None
    fact: str | None
    initially_absent: bool | None
    source_returned: bool
    calls: int
    bytes: int
    # The probe process's wall time in seconds (its ProcessReceipt); None when unknown.
    elapsed: float | None
    exhausted: str | None
    reader_stopped: str | None
    reader: str  # the scripted reader binding's provider:model
    # What the probe spent (its probe-turn and compaction tokens, and the keys of its
    # model calls), so an ambiguous duplicate slot can be taken out of the arm's spend
    # (continuity.report.duplicates).
    usage: Usage = Usage()
    compaction_usage: Usage = Usage()
    call_keys: list[str] = []
    # The probe's index in its trace (what its ProcessReceipt names); -1 when unknown.
    index: int = -1


def lookup_rows(record: UnitRecord) -> list[LookupRow]:
    """The lookup view of one unit (empty for a recall-only unit). The unit holds no
    times (it is deterministic bytes), so every row's ``elapsed`` is None here; see
    `with_latency`."""
    if not record.binding or "lookup" not in record.binding:
        return []
    reader = str(record.binding["lookup"].get("reader", ""))
    rows = []
    for probe in record.probes:
        witness = probe.evidence.lookup if probe.evidence is not None else probe.witness
        annotated = (
            witness.sources > 0 if witness is not None else probe.status == "inventory_infeasible"
        )
        fact = probe.availability.fact if probe.availability else None
        rows.append(
            LookupRow(
                probe.probe_id,
                probe.category,
                probe.status,
                probe.reasons[0] if probe.reasons else "",
                annotated,
                probe.correct,
                fact,
                None if fact in (None, "not_applicable") else fact != "in_context",
                bool(witness and witness.sources_returned),
                witness.meter.calls if witness else 0,
                witness.meter.bytes if witness else 0,
                None,
                witness.meter.exhausted if witness else None,
                witness.reader_stopped if witness else None,
                reader,
                probe.usage,
                probe.compaction_usage,
                [c.key for c in probe.evidence.calls] if probe.evidence is not None else [],
                probe.index,
            )
        )
    return rows


def with_latency(rows: Sequence[LookupRow], processes: Sequence[ProcessReceipt]) -> list[LookupRow]:
    """`rows` with each probe's latency from the `ProcessReceipt` of the process that ran
    it (matched by probe index); a row with no receipt keeps ``elapsed`` None."""
    elapsed = {p.probe_index: p.elapsed_seconds for p in processes}
    return [msgspec.structs.replace(r, elapsed=elapsed.get(r.index)) for r in rows]


def _rate(correct: int, n: int) -> Rate:
    return Rate(correct=correct, n=n, rate=correct / n if n else None)


def _observations(
    units: Iterable[tuple[int, str, str, Sequence[LookupRow]]],
) -> tuple[dict[SlotKey, LookupRow], dict[SlotKey, int]]:
    """Slots observed exactly once (with their row) and slots observed more than once
    (with their occurrence count). A duplicate is ambiguous: no occurrence is chosen."""
    seen: dict[SlotKey, list[LookupRow]] = defaultdict(list)
    for repeat, trace_id, arm, rows in units:
        for row in rows:
            seen[(repeat, trace_id, arm, row.probe_id)].append(row)
    single = {key: rows[0] for key, rows in seen.items() if len(rows) == 1}
    duplicate = {key: len(rows) for key, rows in seen.items() if len(rows) > 1}
    return single, duplicate


class _Coverage(msgspec.Struct, frozen=True, kw_only=True):
    """One arm's planned slots: how many, and how many are missing, blocked or
    duplicate (with each duplicate's occurrences)."""

    slots_planned: int
    missing: int
    blocked: int
    duplicate: int
    duplicate_occurrences: list[DuplicateOccurrence]


def lookup_table(
    units: Iterable[tuple[int, str, str, Sequence[LookupRow]]],
    planned: Sequence[dict[str, Any]] | None,
) -> dict[str, LookupArm]:
    """Per-arm lookup figures from (repeat, trace id, arm, rows) of every unit and the
    planned slots of ``lookup-slots.json`` (each with its ``disposition``)."""
    present, duplicates = _observations(units)
    planned_slots = {
        (d["repeat"], d["trace_id"], d["arm"], d["probe_id"]): str(d.get("disposition", ""))
        for d in planned or []
    }
    if not present and not duplicates and not planned_slots:
        return {}
    planned_keys = set(planned_slots) if planned else set(present) | set(duplicates)
    by_arm: dict[str, list[LookupRow]] = defaultdict(list)
    for key, row in present.items():
        by_arm[key[2]].append(row)
    arms = sorted({k[2] for k in planned_keys} | set(by_arm) | {k[2] for k in duplicates})
    table: dict[str, LookupArm] = {}
    for arm in arms:
        mine = [k for k in planned_keys if k[2] == arm]
        coverage = _Coverage(
            slots_planned=len(mine),
            missing=sum(1 for k in mine if k not in present and k not in duplicates),
            blocked=sum(1 for k in mine if planned_slots.get(k) == UNKNOWN),
            duplicate=sum(1 for k in duplicates if k[2] == arm),
            duplicate_occurrences=[
                DuplicateOccurrence(repeat=k[0], trace_id=k[1], probe_id=k[3], occurrences=n)
                for k, n in sorted(duplicates.items())
                if k[2] == arm
            ],
        )
        table[arm] = _arm_figures(by_arm.get(arm, []), coverage)
    return table


def _arm_figures(rows: list[LookupRow], coverage: _Coverage) -> LookupArm:
    """The figures of one arm's slots observed exactly once, and its coverage."""
    unstarted = [r for r in rows if r.status == "failed" and "admission_stopped" in r.reason]
    failed = [r for r in rows if r.status == "failed" and r not in unstarted]
    infeasible = Counter(r.reason for r in rows if r.status == "inventory_infeasible")
    annotated = [r for r in rows if r.annotated]
    completed = [r for r in rows if r.status not in ("failed", "inventory_infeasible")]
    # Resolved identifier samples only: an unresolved one has no right/wrong call.
    exact = [
        r
        for r in completed
        if r.category == "tool_identifier" and r.status == "valid" and r.correct is not None
    ]
    exact_correct = sum(1 for r in exact if r.correct)
    failed_feasible = sum(1 for r in failed if r.category == "tool_identifier")
    availability = Counter(r.fact for r in annotated if r.status == "valid" and r.fact)
    timed = [r.elapsed for r in completed if r.elapsed is not None]
    return LookupArm(
        readers=sorted({r.reader for r in rows if r.reader}),
        slots_present=len(rows),
        unstarted=len(unstarted),
        failed=len(failed),
        inventory_infeasible=sum(infeasible.values()),
        infeasible_by_class=dict(sorted(infeasible.items())),
        unknown_provenance=sum(1 for r in rows if not r.annotated),
        source_availability=dict(sorted(availability.items())),
        reference_feasibility={
            "feasible": sum(1 for r in annotated if r.status != "inventory_infeasible"),
            **dict(sorted(infeasible.items())),
        },
        exact=_rate(exact_correct, len(exact)),
        exact_with_failures=_rate(exact_correct, len(exact) + failed_feasible),
        failed_feasible=failed_feasible,
        witnessed_recovery=sum(
            1
            for r in exact
            if r.annotated and r.initially_absent and r.source_returned and r.correct
        ),
        calls=sum(r.calls for r in completed),
        bytes=sum(r.bytes for r in completed),
        mean_calls=sum(r.calls for r in completed) / len(completed) if completed else None,
        mean_bytes=sum(r.bytes for r in completed) / len(completed) if completed else None,
        # Over the completed slots whose latency is known; the others are counted.
        mean_latency_s=sum(timed) / len(timed) if timed else None,
        latency_unknown=len(completed) - len(timed),
        exhausted=dict(sorted(Counter(r.exhausted for r in rows if r.exhausted).items())),
        reader_budget_stops=sum(1 for r in rows if r.reader_stopped == "budget"),
        **msgspec.structs.asdict(coverage),
    )
