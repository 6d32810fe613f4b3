"""The lookup report (lookup-allowed-v1): every planned slot, mechanics and recovery.

Per arm it keeps every planned slot (from ``<run>/lookup-slots.json``): missing (no unit
file), duplicate (a slot met more than once; a duplicate unit file is already refused
by the aggregate, so these are probe-level repeats inside units, counted once), unstarted,
failed and inventory-infeasible. It names the scripted reader binding(s) the units ran
on, and reports

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
  aborted on calls or bytes) and the reader's voluntary budget stops.

Witnesses persist only ids, digests, counts and classifications.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from continuity.runner.units import UnitRecord

__all__ = ["LookupRow", "lookup_rows", "lookup_table"]


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
    elapsed: float
    exhausted: str | None
    reader_stopped: str | None
    reader: str  # the scripted reader binding's provider:model


def lookup_rows(record: UnitRecord) -> list[LookupRow]:
    """The lookup view of one unit (empty for a recall-only unit)."""
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
                witness.elapsed_seconds if witness else 0.0,
                witness.meter.exhausted if witness else None,
                witness.reader_stopped if witness else None,
                reader,
            )
        )
    return rows


def _rate(correct: int, n: int) -> dict[str, Any]:
    return {"correct": correct, "n": n, "rate": correct / n if n else None}


def lookup_table(
    units: Iterable[tuple[int, str, str, Sequence[LookupRow]]],
    planned: Sequence[dict[str, Any]] | None,
) -> dict[str, dict[str, Any]]:
    """Per-arm lookup figures from (repeat, trace id, arm, rows) of every unit."""
    present: dict[tuple[int, str, str, str], LookupRow] = {}
    duplicates: Counter[str] = Counter()
    for repeat, trace_id, arm, rows in units:
        for row in rows:
            key = (repeat, trace_id, arm, row.probe_id)
            if key in present:
                duplicates[arm] += 1
                continue
            present[key] = row
    if not present:
        return {}
    planned_keys = (
        {(d["repeat"], d["trace_id"], d["arm"], d["probe_id"]) for d in planned}
        if planned
        else set(present)
    )
    by_arm: dict[str, list[LookupRow]] = defaultdict(list)
    for key, row in present.items():
        by_arm[key[2]].append(row)
    arms = sorted({k[2] for k in planned_keys} | set(by_arm))
    table: dict[str, dict[str, Any]] = {}
    for arm in arms:
        rows = by_arm.get(arm, [])
        planned_n = sum(1 for k in planned_keys if k[2] == arm)
        missing = sum(1 for k in planned_keys if k[2] == arm and k not in present)
        unstarted = [r for r in rows if r.status == "failed" and "admission_stopped" in r.reason]
        failed = [r for r in rows if r.status == "failed" and r not in unstarted]
        infeasible = Counter(r.reason for r in rows if r.status == "inventory_infeasible")
        annotated = [r for r in rows if r.annotated]
        completed = [r for r in rows if r.status not in ("failed", "inventory_infeasible")]
        exact = [r for r in completed if r.category == "tool_identifier" and r.status == "valid"]
        exact_correct = sum(1 for r in exact if r.correct)
        failed_feasible = sum(1 for r in failed if r.category == "tool_identifier")
        availability = Counter(r.fact for r in annotated if r.status == "valid" and r.fact)
        table[arm] = {
            "readers": sorted({r.reader for r in rows if r.reader}),
            "slots_planned": planned_n,
            "slots_present": len(rows),
            "missing": missing,
            "duplicate": duplicates[arm],
            "unstarted": len(unstarted),
            "failed": len(failed),
            "inventory_infeasible": sum(infeasible.values()),
            "infeasible_by_class": dict(sorted(infeasible.items())),
            "unknown_provenance": sum(1 for r in rows if not r.annotated),
            "source_availability": dict(sorted(availability.items())),
            "reference_feasibility": {
                "feasible": sum(1 for r in annotated if r.status != "inventory_infeasible"),
                **dict(sorted(infeasible.items())),
            },
            "exact": _rate(exact_correct, len(exact)),
            "exact_with_failures": _rate(exact_correct, len(exact) + failed_feasible),
            "failed_feasible": failed_feasible,
            "witnessed_recovery": sum(
                1
                for r in exact
                if r.annotated and r.initially_absent and r.source_returned and r.correct
            ),
            "calls": sum(r.calls for r in completed),
            "bytes": sum(r.bytes for r in completed),
            "mean_calls": sum(r.calls for r in completed) / len(completed) if completed else None,
            "mean_bytes": sum(r.bytes for r in completed) / len(completed) if completed else None,
            "mean_latency_s": sum(r.elapsed for r in completed) / len(completed)
            if completed
            else None,
            "exhausted": dict(sorted(Counter(r.exhausted for r in rows if r.exhausted).items())),
            "reader_budget_stops": sum(1 for r in rows if r.reader_stopped == "budget"),
        }
    return table
