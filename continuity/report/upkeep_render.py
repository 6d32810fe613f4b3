"""The ledger arm's upkeep tables (`continuity.report.upkeep`), shared by summary.md
and report.html: its preparations, its known and conservative charges kept apart, and
every stage outcome with its class."""

from __future__ import annotations

from msgspec import UNSET

from continuity.memory.upkeep_receipts import reason_class
from continuity.report.results import Results, UpkeepSpend
from continuity.report.sections import Table

__all__ = ["upkeep_tables"]

_NOT_BILLED = "- (offline)"


def _usd(value: float | None, spend: UpkeepSpend, unpriced: int) -> str:
    if not spend.priced:
        return _NOT_BILLED
    if value is None:
        return f"unknown ({unpriced} unpriced)"
    return f"{value:.4f}"


def _arms(r: Results) -> list[tuple[str, UpkeepSpend]]:
    upkeep = r.upkeep if r.upkeep is not UNSET else {}
    names = [a for a in r.arms if a in upkeep] + sorted(set(upkeep) - set(r.arms))
    return [(arm, upkeep[arm]) for arm in names]


def _preparations(arms: list[tuple[str, UpkeepSpend]]) -> Table:
    rows = [
        [
            arm,
            f"{u.units:,}",
            f"{u.valid_preparations:,}",
            f"{u.invalid_preparations:,}",
            f"{u.stages:,}",
            f"{u.dispatched:,}",
            f"{u.zero_dispatch:,}",
            f"{u.d6_input_overruns:,} / {u.d6_output_overruns:,}",
            f"{u.offered_spans:,} of {u.spans:,} (gap {u.gap_spans:,})",
        ]
        for arm, u in arms
    ]
    return (
        "Ledger upkeep: preparations",
        [
            "arm",
            "units",
            "valid",
            "invalid",
            "stages",
            "dispatched",
            "zero dispatch",
            "d6 overruns (input / output)",
            "spans offered",
        ],
        rows,
        "Three preparations per trace and repeat (A -> R -> A), counted once per unit, "
        "never per probe. An invalid preparation's samples are excluded "
        "(treatment_invalid); its upkeep still counts. Spans offered: of every retained "
        "span, those some pass offered; the gap is what a pass that published nothing "
        "was offered (never repaired, never offered again).",
    )


def _accounting(arms: list[tuple[str, UpkeepSpend]]) -> Table:
    rows = [
        [
            arm,
            f"{u.known_calls:,}",
            f"{u.known_input + u.known_cache_read:,} / {u.known_output:,}",
            _usd(u.estimated_cost_usd, u, u.unpriced_known_calls),
            f"{u.conservative_calls:,}",
            f"{u.conservative_input_tokens:,} / {u.conservative_output_tokens:,}",
            _usd(u.conservative_cost_usd, u, u.unpriced_conservative_calls),
            f"{u.observed_input_tokens:,}",
        ]
        for arm, u in arms
    ]
    return (
        "Ledger upkeep: accounting",
        [
            "arm",
            "known calls",
            "known input / output",
            "estimated cost (USD)",
            "conservative calls",
            "conservative input / output",
            "conservative cost (USD)",
            "observed input",
        ],
        rows,
        "Known calls reported their usage; a dispatched call that reported none is "
        "charged its whole reservation (128k bootstrap or 64k incremental input and "
        "4,096 output tokens) at catalog prices, kept apart and never added to the "
        "known cost. A stage that never dispatched costs nothing. Observed input takes "
        "the larger of the reported and the conservative input. Accounting, not an "
        "invoice: a stream abort cannot stop remote work already billed.",
    )


def _outcomes(arms: list[tuple[str, UpkeepSpend]]) -> Table:
    rows = [
        [arm, outcome, reason_class(outcome), f"{count:,}"]
        for arm, u in arms
        for outcome, count in u.outcomes.items()
    ] + [
        [arm, problem, "integrity", f"{count:,}"]
        for arm, u in arms
        for problem, count in u.integrity.items()
    ]
    return (
        "Ledger upkeep: stage outcomes",
        ["arm", "outcome", "class", "stages"],
        rows,
        "ok: published, or analysis-only (a valid empty delta); provider and capacity "
        "outcomes are allowlisted degradations the preparation continued after; "
        "configuration skips, unknown reasons and every integrity problem invalidate "
        "the treatment.",
    )


def upkeep_tables(r: Results) -> list[Table]:
    """Three tables for a run with a ledger arm; none without one."""
    arms = _arms(r)
    if not arms:
        return []
    return [_preparations(arms), _accounting(arms), _outcomes(arms)]
