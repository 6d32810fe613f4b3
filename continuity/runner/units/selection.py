"""Unit selection: which units a run builds, and which of a unit's probes run.

`plan_units` turns a suite, its seeds and the selection flags (arms, repeats, traces)
into the run's units, one `UnitPlan` per repeat x trace x arm. `probe_slots` splits one
unit's planned probes into the ones its worker runs and, in lookup mode, the slots the
policy classes as inventory-infeasible. Selecting part of a plan never changes a unit's
key.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from continuity.arms import Arm, ProbeMode, parse_arms
from continuity.errors import UsageError
from continuity.lookup.receipts import LookupBinding
from continuity.probes.availability import needles_for
from continuity.runner.lookup_run import LookupRun
from continuity.runner.units.plan import UnitPlan
from continuity.store import Store
from continuity.traces.schema import Probe, Trace

if TYPE_CHECKING:
    from continuity.sampling.worker import ProbeSpec
    from continuity.traces.suites import SuiteItem

__all__ = ["UnitPlan", "limited", "plan_units", "probe_slots"]

# One unit to build: its trace (suite item and trace), arm and repeat.


def limited(trace: Trace, probe_limit: int | None) -> list[Probe]:
    """The trace's probes a unit plans: the first `probe_limit` of them (None: all)."""
    return list(trace.probes[:probe_limit] if probe_limit else trace.probes)


def _check_repeats(wanted: set[int] | None, repeats: int) -> None:
    """Raises:
    UsageError: ``repeat_unknown`` when a selected repeat is outside 1-`repeats`."""
    if wanted is not None and not wanted <= set(range(1, repeats + 1)):
        raise UsageError(
            f"--repeat {sorted(wanted)} is outside the plan's repeats 1-{repeats}",
            code="repeat_unknown",
            location="--repeat",
        )


def plan_units(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None,
    *,
    out_dir: Path,
    arms: str | None,
    repeats: int,
    traces: str | None,
    only_repeats: Sequence[int] | None,
    probe_mode: ProbeMode,
    items: Sequence[SuiteItem] | None = None,
) -> list[UnitPlan]:
    """Every unit of the selection, trace by trace, repeat by repeat, arm by arm.

    The suite's traces are built (or reused) with their files under `out_dir`; `items`
    (an external holdout's selected traces, already in the store) replaces building.

    Raises:
        UsageError: ``repeat_unknown`` when `only_repeats` names a repeat the plan lacks.
    """
    from continuity.runner.checkpoints import select_traces
    from continuity.traces.suites import build_suite, suite_from_items
    from continuity.traces.validate import load_trace

    if items is not None:
        result = suite_from_items(store, suite, items, out_dir=out_dir)
    else:
        result = build_suite(store, suite, seeds, out_dir=out_dir)
    chosen = set(select_traces([i.trace_id for i in result.items], traces))
    wanted = set(only_repeats) if only_repeats else None
    _check_repeats(wanted, repeats)
    plans: list[UnitPlan] = []
    for item in (i for i in result.items if i.trace_id in chosen):
        trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
        plans.extend(
            UnitPlan(item, trace, arm, repeat)
            for repeat in range(1, repeats + 1)
            if wanted is None or repeat in wanted
            for arm in parse_arms(arms, family=trace.family, probe_mode=probe_mode)
        )
    return plans


def probe_slots(
    trace: Trace, arm: Arm, probes: Sequence[Probe], lookup: LookupRun | None
) -> tuple[list[ProbeSpec], dict[str, str]]:
    """The probes the unit's worker runs (with their evaluator-only needles and, in
    lookup mode, their lookup binding), and the skipped slots: probe id -> the policy's
    class, for every slot that is neither ``feasible`` nor ``unannotated``."""
    from continuity.sampling.worker import ProbeSpec

    specs = []
    skipped: dict[str, str] = {}
    for index, probe in enumerate(probes):
        needles = needles_for(probe.expectation, trace)
        binding_for_probe = None
        if lookup is not None:
            sources, slot = lookup.disposition(trace, arm, probe)
            if slot not in ("feasible", "unannotated"):
                skipped[probe.probe_id] = slot
                continue
            binding_for_probe = LookupBinding(
                call_budget=lookup.policy.calls,
                byte_budget=lookup.policy.bytes,
                soul_sha256=lookup.soul_sha256,
                soul_core_sha256=lookup.soul_core_sha256,
                sources=sources,
                models=lookup.models(),
            )
        specs.append(
            ProbeSpec(
                index,
                probe.text,
                needles.fact + needles.superseded,
                binding_for_probe,
                probe.category,
            )
        )
    return specs, skipped
