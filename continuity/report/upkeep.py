"""Ledger upkeep accounting: what the ledger arm's preparations cost, known and
conservative, kept apart.

Each unit of the ledger arm carries the receipt of the prepared checkpoint its probes
forked; its upkeep is counted once per unit (`upkeep_row`), never per probe, and also
when the preparation was invalid (a failed extraction still cost what it cost). One
stage is charged by `stage_charge`:

- a stage that never dispatched (a configuration skip, a capacity reason, a released
  row) costs nothing: zero calls, zero tokens, zero cost, never an unknown call;
- a dispatched stage whose usage was reported is a **known** call: its tokens and its
  catalog list price (``estimated_cost_usd``; an unpriced model leaves the cost
  unknown, never zero);
- a dispatched stage with no reported usage (the endpoint failed after dispatch, the
  acknowledgement was lost) is a **conservative** call: charged its whole reservation
  (128k bootstrap or 64k incremental input, plus 4,096 output tokens) at catalog
  prices, never merely what it may have reported; nothing partial is added on top.
  An unpriced reservation is counted in ``unpriced_conservative_calls``, not as free.

Observed input is the larger of the reported and the conservative input per call (an
overrun reported above the reservation wins; cached input is counted once). Overruns
are counted separately (``d6_input_overruns``, ``d6_output_overruns``). Offline units
are not billed: their tokens are shown, their costs are not computed. These figures are
accounting, not an invoice: a stream abort cannot stop remote work already billed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import msgspec
from msgspec import UNSET

from continuity.messages import Usage
from continuity.plan.pricing import Catalog, call_cost
from continuity.report.results import UpkeepSpend
from continuity.runner.units.build import UnitRecord

__all__ = [
    "StageCharge",
    "UpkeepRow",
    "UpkeepStageRow",
    "known_usage",
    "stage_charge",
    "upkeep_row",
    "upkeep_spend",
]


class UpkeepStageRow(msgspec.Struct, frozen=True, array_like=True):
    tag: str
    outcome: str
    outcome_class: str
    dispatched: bool
    released: bool
    input_reservation: int
    output_reservation: int
    usage: Usage | None
    input_overrun: bool
    output_overrun: bool


class UpkeepRow(msgspec.Struct, frozen=True, array_like=True):
    """What the aggregate keeps of one unit's preparation (cached with its summary)."""

    extractor: str
    priced: bool  # a real unit (offline units are not billed)
    valid: bool
    stages: list[UpkeepStageRow]
    integrity: list[str]
    degradations: list[str]
    spans: int
    offered: int
    gap: int


def upkeep_row(record: UnitRecord) -> UpkeepRow | None:
    receipt = record.upkeep
    if receipt is UNSET:
        return None
    coverage = next(
        (s.upkeep.coverage for s in reversed(receipt.stages) if s.upkeep.coverage), None
    )
    return UpkeepRow(
        extractor=receipt.extractor,
        priced=record.binding is not None and "reader" in record.binding,
        valid=receipt.valid,
        stages=[
            UpkeepStageRow(
                s.tag,
                s.upkeep.outcome,
                s.upkeep.outcome_class,
                s.upkeep.dispatched,
                s.upkeep.state == "released",
                s.upkeep.input_reservation,
                s.upkeep.output_reservation,
                s.upkeep.usage,
                s.upkeep.input_overrun,
                s.upkeep.output_overrun,
            )
            for s in receipt.stages
        ],
        integrity=list(receipt.integrity),
        degradations=list(receipt.degradations),
        spans=coverage.spans if coverage else 0,
        offered=coverage.offered if coverage else 0,
        gap=coverage.gap if coverage else 0,
    )


class StageCharge(msgspec.Struct, frozen=True, kw_only=True):
    """One stage's charge: known or conservative (never both), or nothing."""

    kind: str  # none | known | conservative
    usage: Usage  # the known usage, or the conservative reservation
    cost_usd: float | None  # None: unpriced (or not billed offline)
    observed_input: int


def stage_charge(
    catalog: Catalog, model: str, stage: UpkeepStageRow, *, priced: bool
) -> StageCharge:
    """The charge of one stage (see the module doc)."""
    if not stage.dispatched:
        return StageCharge(kind="none", usage=Usage(), cost_usd=0.0, observed_input=0)
    if stage.usage is not None:
        cost = call_cost(catalog, model, stage.usage) if priced else None
        return StageCharge(
            kind="known", usage=stage.usage, cost_usd=cost, observed_input=stage.usage.total_input
        )
    reserve = Usage(input=stage.input_reservation, output=stage.output_reservation)
    return StageCharge(
        kind="conservative",
        usage=reserve,
        cost_usd=call_cost(catalog, model, reserve) if priced else None,
        observed_input=stage.input_reservation,
    )


def _rounded(values: Iterable[float | None], priced: bool) -> tuple[float | None, int]:
    """The sum of `values` and how many are unknown (None); the sum is None when any
    is unknown or nothing is priced."""
    known = 0.0
    unknown = 0
    for value in values:
        if value is None:
            unknown += 1
        else:
            known += value
    return (round(known, 6) if priced and not unknown else None), unknown


def known_usage(rows: Iterable[UpkeepRow]) -> Usage:
    """The tokens of the known calls: every dispatched stage that reported its usage."""
    return sum(
        (
            stage.usage
            for row in rows
            for stage in row.stages
            if stage.dispatched and stage.usage is not None
        ),
        Usage(),
    )


def _output_overrun(stage: UpkeepStageRow) -> bool:
    """An output overrun: the explicit reason, or a reported output above the cap."""
    return stage.output_overrun or stage.outcome in ("output_overrun", "output_aborted")


def _arm(catalog: Catalog, rows: Sequence[UpkeepRow]) -> UpkeepSpend:
    charges = [
        (stage_charge(catalog, row.extractor, stage, priced=row.priced), stage, row.priced)
        for row in rows
        for stage in row.stages
    ]
    known = [c for c, _, _ in charges if c.kind == "known"]
    conservative = [c for c, _, _ in charges if c.kind == "conservative"]
    priced = any(row.priced for row in rows)
    known_cost, unpriced_known = _rounded((c.cost_usd for c in known), priced)
    reserve_cost, unpriced_reserve = _rounded((c.cost_usd for c in conservative), priced)
    usage = known_usage(rows)
    integrity = Counter(p.split(":", 1)[-1] for row in rows for p in row.integrity)
    return UpkeepSpend(
        units=len(rows),
        valid_preparations=sum(1 for row in rows if row.valid),
        invalid_preparations=sum(1 for row in rows if not row.valid),
        stages=len(charges),
        dispatched=sum(1 for _, stage, _ in charges if stage.dispatched),
        zero_dispatch=sum(1 for c, _, _ in charges if c.kind == "none"),
        released=sum(1 for _, stage, _ in charges if stage.released),
        known_calls=len(known),
        known_input=usage.input,
        known_cache_read=usage.cache_read,
        known_output=usage.output,
        estimated_cost_usd=known_cost,
        unpriced_known_calls=unpriced_known if priced else 0,
        conservative_calls=len(conservative),
        conservative_input_tokens=sum(c.usage.input for c in conservative),
        conservative_output_tokens=sum(c.usage.output for c in conservative),
        conservative_cost_usd=reserve_cost if conservative else (0.0 if priced else None),
        unpriced_conservative_calls=unpriced_reserve if priced else 0,
        observed_input_tokens=sum(c.observed_input for c, _, _ in charges),
        d6_input_overruns=sum(1 for _, stage, _ in charges if stage.input_overrun),
        d6_output_overruns=sum(1 for _, stage, _ in charges if _output_overrun(stage)),
        outcomes=dict(sorted(Counter(stage.outcome for _, stage, _ in charges).items())),
        degradations=dict(
            sorted(Counter(d.split(":", 1)[-1] for row in rows for d in row.degradations).items())
        ),
        integrity=dict(sorted(integrity.items())),
        priced=priced,
        spans=sum(row.spans for row in rows),
        offered_spans=sum(row.offered for row in rows),
        gap_spans=sum(row.gap for row in rows),
    )


def upkeep_spend(
    catalog: Catalog, units: Iterable[tuple[str, UpkeepRow | None]]
) -> dict[str, UpkeepSpend]:
    """The upkeep accounting of every arm that kept a ledger, from (arm, row) pairs."""
    by_arm: dict[str, list[UpkeepRow]] = {}
    for arm, row in units:
        if row is not None:
            by_arm.setdefault(arm, []).append(row)
    return {arm: _arm(catalog, rows) for arm, rows in by_arm.items()}
