"""Lookup mode's run-level accounting: the run's sizing binding, its planned slots and
the partial-coverage rule.

Every planned slot (repeat x trace x arm x probe) is dispositioned before anything runs
and listed in ``<run>/lookup-slots.json``, including slots whose feasibility the policy
never measured (``unknown``): those block the run (``lookup_unknown_feasibility``), but
only after the list is written, so the report can count them as ``blocked``.

Inventory-infeasible slots get records but never make a unit complete: after every unit
is materialised, a run with such slots ends with ``lookup_partial_coverage`` (a non-zero
exit), so partial coverage never passes for a finished run.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from continuity.arms import Arm
from continuity.errors import LookupCoverageIncomplete, UsageError
from continuity.lookup.fixed_budget import FixedBudget
from continuity.lookup.policy import LookupPolicy
from continuity.lookup.reader import binding_models
from continuity.lookup.receipts import SourceRef
from continuity.lookup.sizing import Sizing
from continuity.lookup.sources import sources_for
from continuity.outputs import write_output
from continuity.traces.schema import Probe, Trace

if TYPE_CHECKING:
    from continuity.runner.units.plan import UnitPlan

__all__ = [
    "SLOTS_FILE",
    "LookupRun",
    "check_coverage",
    "check_lookup_slots",
]

SLOTS_FILE = "lookup-slots.json"


# One `Sizing` (its slot index) per policy object a run holds; the value keeps the
# policy alive, so its id is never reused while cached.
_SIZINGS: dict[tuple[int, str | None], Sizing] = {}


class LookupRun(msgspec.Struct, frozen=True, kw_only=True):
    """A lookup-allowed-v1 run: the sizing (the frozen policy, or a holdout's
    fixed-budget sizing) and the soul it binds; `role` is the lookup role a role run
    takes a fixed-budget sizing's slots for (`continuity.lookup.sizing`)."""

    policy: LookupPolicy | FixedBudget
    policy_sha256: str
    soul_sha256: str
    soul_core_sha256: str
    reader_binding: str = "default"
    watchdog_seconds: float = 720.0
    role: str | None = None

    def sizing(self) -> Sizing:
        key = (id(self.policy), self.role)
        if key not in _SIZINGS:
            _SIZINGS[key] = Sizing(self.policy, self.role)
        return _SIZINGS[key]

    def models(self) -> tuple[str, str]:
        """The reader binding's (reader, alternate) models."""
        return binding_models(self.reader_binding)

    def binding(self) -> dict[str, Any]:
        return {
            "lookup": {
                "probe_mode": "lookup-allowed-v1",
                "policy_sha256": self.policy_sha256,
                "soul_sha256": self.soul_sha256,
                "soul_core_sha256": self.soul_core_sha256,
                "reader": self.models()[0],
                "calls": self.policy.calls,
                "bytes": self.policy.bytes,
            }
        }

    def disposition(self, trace: Trace, arm: Arm, probe: Probe) -> tuple[list[SourceRef], str]:
        """The probe's sources and its slot class: ``feasible`` (or ``unannotated``,
        no source) runs; any other class is inventory-infeasible; ``unknown`` (a source
        the policy never measured) blocks execution."""
        sources = sources_for(trace, probe)
        return sources, self.sizing().disposition(
            trace.trace_id, arm.id, probe.probe_id, bool(sources)
        )


def _slot_id(slot: dict[str, Any]) -> tuple[Any, ...]:
    return (slot["repeat"], slot["trace_id"], slot["arm"], slot["probe_id"])


def check_lookup_slots(
    lookup: LookupRun,
    plans: Sequence[UnitPlan],
    probe_limit: int | None,
    run: Path,
) -> None:
    """Record every planned lookup slot (``<run>/lookup-slots.json``, ``unknown`` ones
    included), then refuse to run when any annotated slot has unknown feasibility.

    Chunks of one run (by trace or repeat) add their slots to the run's list; a slot
    planned again replaces its earlier line (the same slot, never a second one).

    Raises:
        UsageError: ``lookup_unknown_feasibility``, after the list is written and before
            any unit runs.
    """
    slots = []
    unknown = []
    for plan in plans:
        trace, arm, repeat = plan.trace, plan.arm, plan.repeat
        for probe in trace.probes[:probe_limit] if probe_limit else trace.probes:
            _, disposition = lookup.disposition(trace, arm, probe)
            slots.append(
                {
                    "repeat": repeat,
                    "trace_id": trace.trace_id,
                    "arm": arm.id,
                    "probe_id": probe.probe_id,
                    "category": probe.category,
                    "disposition": disposition,
                }
            )
            if disposition == "unknown":
                unknown.append(f"{trace.trace_id} {arm.id} {probe.probe_id}")
    path = run / SLOTS_FILE
    run.mkdir(parents=True, exist_ok=True)
    # Two invocations filling one run merge their slots one at a time (a lock on the run
    # directory itself, released by the kernel if a process dies): no slot is lost.
    folder = os.open(run, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        try:
            earlier = msgspec.json.decode(path.read_bytes())
        except (OSError, msgspec.MsgspecError):
            earlier = {}
        if isinstance(earlier, dict) and earlier.get("policy_sha256") == lookup.policy_sha256:
            mine = {_slot_id(d) for d in slots}
            slots = [d for d in earlier.get("slots", []) if _slot_id(d) not in mine] + slots
        write_output(
            path,
            msgspec.json.format(
                msgspec.json.encode({"policy_sha256": lookup.policy_sha256, "slots": slots})
            )
            + b"\n",
        )
    finally:
        os.close(folder)  # releases the lock
    if unknown:
        raise UsageError(
            f"{len(unknown)} lookup slots have unknown feasibility (first: {unknown[0]}); "
            "the sizing policy never measured them. Measure a policy that covers them "
            f"(doit lookup_budget) or leave those traces out. Every planned slot is "
            f"listed in {path}",
            code="lookup_unknown_feasibility",
            location="--policy",
        )


class _Slot(Protocol):
    @property
    def status(self) -> str: ...


class _Covered(Protocol):
    """What coverage reads of a unit record (`continuity.runner.units.build.UnitRecord`),
    named structurally so this module does not import the runner it serves."""

    @property
    def complete(self) -> bool | None: ...

    @property
    def probes(self) -> Sequence[_Slot]: ...


def check_coverage(records: Sequence[_Covered], folder: Path) -> None:
    """Fail a lookup run whose materialised units leave planned slots skipped.

    Raises:
        LookupCoverageIncomplete: ``lookup_partial_coverage``, naming how many slots and
            units were skipped (all-skipped units separately).
    """
    partial = [r for r in records if r.complete is False]
    if not partial:
        return
    skipped = sum(1 for r in partial for p in r.probes if p.status == "inventory_infeasible")
    planned = sum(len(r.probes) for r in records)
    empty = sum(1 for r in partial if all(p.status == "inventory_infeasible" for p in r.probes))
    raise LookupCoverageIncomplete(
        f"{skipped} of {planned} planned lookup slots were skipped as inventory-infeasible "
        f"({len(partial)} of {len(records)} units partial, {empty} of them with no eligible "
        f"probe); every unit is materialised in {folder} and `doit aggregate` reports the "
        "skipped slots. Their eligible probes are final: a rerun changes nothing",
        location=str(folder),
    )
