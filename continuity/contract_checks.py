"""The offline contract's checks of what its units and stages showed, and the sentences
its report gives for them (`continuity.contract` runs the stages)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from msgspec import UNSET

from continuity.arms import LEDGER_ARM
from continuity.errors import ContinuityError
from continuity.runner.units.build import judged

if TYPE_CHECKING:
    from continuity.runner.units.build import UnitRecord

__all__ = ["check_ledger_units", "check_units", "contract_checks"]


def check_units(units: Sequence[UnitRecord]) -> None:
    """Every valid answer the judge reads judged (the unresolved ones and next actions:
    `continuity.runner.units.grading.judged`), and every probe sample valid (crossed its
    boundary).

    Raises:
        ContinuityError: ``arm_contract_failed`` naming the first bad unit's trace.
    """
    unjudged = [
        (u.trace_id, u.arm)
        for u in units
        if {v.probe_id for v in u.judge}
        != {p.probe_id for p in u.probes if p.status == "valid" and judged(p)}
    ]
    if unjudged:
        raise ContinuityError(
            f"{len(unjudged)} units lack a judge verdict for some answer the judge reads "
            "(unresolved, or a next action); first: "
            f"{unjudged[0]}",
            code="arm_contract_failed",
            location=unjudged[0][0],
        )
    bad = [
        (u.trace_id, u.arm, p.probe_id, p.status, p.reasons)
        for u in units
        for p in u.probes
        if p.status != "valid"
    ]
    if bad:
        raise ContinuityError(
            f"{len(bad)} probe samples did not cross their boundary under pressure; first: "
            f"{bad[0]}",
            code="arm_contract_failed",
            location=bad[0][0],
        )


def _ledger_problems(unit: UnitRecord) -> list[str]:
    """What a ledger unit must show offline: a valid preparation of three stages in
    three processes answering A -> R -> A, the scripted empty second delta (an
    analysis-only stage keeping the generation), the committed ledger exactly once in
    every reader request, and no upkeep during any probe."""
    receipt = unit.upkeep
    if receipt is UNSET:
        return ["no preparation receipt"]
    problems = [f"preparation: {p}" for p in receipt.integrity]
    if [s.to_model for s in receipt.stages] != list(receipt.sequence):
        problems.append(f"stages answered {[s.to_model for s in receipt.stages]}")
    second = receipt.stages[1].upkeep if len(receipt.stages) > 1 else None
    if (
        second is None
        or second.outcome != "analysis_only"
        or second.generation_after != second.generation_before
    ):
        problems.append("the second stage was not the empty, analysis-only delta")
    committed = receipt.final.id if receipt.final is not None else None
    for probe in unit.probes:
        evidence = probe.evidence
        ledger = evidence.ledger if evidence is not None else UNSET
        counts = evidence.ledgers_per_request if evidence is not None else UNSET
        if ledger is UNSET or ledger.generation_id != committed:
            problems.append(f"{probe.probe_id}: the committed ledger was not injected")
        elif counts is UNSET or any(count != 1 for count in counts):
            problems.append(f"{probe.probe_id}: ledgers per request {counts}")
        elif ledger.operations_after != ledger.operations_before:
            problems.append(f"{probe.probe_id}: upkeep ran during the probe")
    return problems


def check_ledger_units(units: Sequence[UnitRecord]) -> None:
    """Every ledger unit shows the ledger arm's offline evidence (`_ledger_problems`),
    and the controls never carry a preparation.

    Raises:
        ContinuityError: ``arm_contract_failed`` naming the first bad unit's trace.
    """
    ledger_units = [u for u in units if u.arm == LEDGER_ARM]
    bad = [(u.trace_id, p) for u in ledger_units for p in _ledger_problems(u)]
    bad += [
        (u.trace_id, f"{u.arm} bought upkeep")
        for u in units
        if u.arm != LEDGER_ARM and u.upkeep is not UNSET
    ]
    if not ledger_units:
        bad.append(("-", "no ledger unit ran"))
    if bad:
        raise ContinuityError(
            f"{len(bad)} ledger problems; first: {bad[0][1]}",
            code="arm_contract_failed",
            location=bad[0][0],
        )


def contract_checks(
    units: Sequence[UnitRecord], checkpoints: int, aggregate: str, ledger_samples: int = 0
) -> dict[str, str]:
    """The contract's checks, each a sentence saying what passed (in report order)."""
    samples = sum(len(u.probes) for u in units)
    return {
        "suites_valid": "every trace of the three default suites validated before storage",
        "units": (
            f"{len(units)} units, {samples} probe samples, every arm on the originals and hard "
            "101-102, each probe in a fresh process on a fresh copy of its checkpoint: every "
            "sample crossed its boundary, met its pressure threshold on the hard traces and "
            "had a healthy store where it needs one; packs only in the pack arm"
        ),
        "ledger": (
            f"{sum(u.arm == LEDGER_ARM for u in units)} ledger units: each forked a checkpoint "
            "prepared by three upkeep stages in three fresh processes answering A -> R -> A "
            "(extractor R), the second an empty, analysis-only delta; every reader request "
            "carried the committed ledger exactly once and no probe ran upkeep; the controls "
            f"bought none; {ledger_samples} doit checkpoints --arms continuity-ledger-cold "
            "samples valid"
        ),
        "aggregate": aggregate,
        "judge": (
            f"the scripted judge graded every valid answer ({sum(len(u.judge) for u in units)} "
            "verdicts); the report shows its agreement with the scorer (mechanics only)"
        ),
        "design": (
            "on hard 101-102 the early account reference is in the native context and not the "
            "cold one, the booking pack's head identifier survives cold rebuild, and the secret "
            "is in no retained store, pack or receipt"
        ),
        "checkpoints": (
            f"{checkpoints} checkpoints replayed with real MCP calls: every tool record served "
            "once in order, every steer delivered as owner input, durable state reloaded "
            "equal; each fork seen intact by a fresh child at the original path"
        ),
        "distractors_neutral": (
            "hard-distractors differ from their hard twins only in labelled filler units; "
            "facts, probes, byte sizes and estimated tokens are identical"
        ),
    }
