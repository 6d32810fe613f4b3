"""Per-arm sample tables of one suite: accuracy, outcomes, exclusions, availability,
flips, tool use and the observed pressure range.

Each function takes the unit summaries of one arm in one suite; the aggregate calls them
suite by suite, so no row ever mixes trace families.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import msgspec

from continuity.arms import ARMS
from continuity.evidence import EXCLUDED_CLASSES
from continuity.probes.availability import AVAILABILITY_COLUMNS
from continuity.probes.scoring import OUTCOMES
from continuity.report.results import (
    AccuracyCell,
    AnswerLineUse,
    FlipRate,
    FreeRecallCell,
    PressureCell,
    RepeatAccuracy,
    ToolUse,
    ToolUseSplit,
)
from continuity.report.stats import mean, sample_sd
from continuity.report.summary import PRESSURE_FIGURES, ProbeRow, UnitSummary

__all__ = [
    "EXCLUDED_COLUMNS",
    "accuracy_cell",
    "accuracy_cells",
    "answer_line_use",
    "availability_counts",
    "excluded_counts",
    "flip_rate",
    "free_recall_cell",
    "outcome_counts",
    "pressure_range",
    "tool_use",
]

# Sample classes that never count toward accuracy; lookup mode adds its inventory skips.
EXCLUDED_COLUMNS: tuple[str, ...] = (*EXCLUDED_CLASSES, "inventory_infeasible")


def accuracy_cell(rows: list[tuple[int, ProbeRow]], repeats: list[int]) -> AccuracyCell:
    """Mean of per-repeat accuracies over resolved samples, with the split, the SD and
    the coverage (resolved ÷ valid): an unresolved sample is never counted right or
    wrong."""
    scored = dict.fromkeys(repeats, 0)
    right = dict.fromkeys(repeats, 0)
    valid = judge_decided = 0
    for repeat, row in rows:  # one pass, not one per repeat
        valid += row.status == "valid"
        if row.resolved:
            scored[repeat] += 1
            right[repeat] += bool(row.correct)
            judge_decided += row.decided_by == "judge"
    per_repeat = [
        RepeatAccuracy(
            repeat=repeat,
            correct=right[repeat],
            n=scored[repeat],
            accuracy=right[repeat] / scored[repeat] if scored[repeat] else None,
        )
        for repeat in repeats
    ]
    values = [p.accuracy for p in per_repeat if p.accuracy is not None]
    n = sum(p.n for p in per_repeat)
    return AccuracyCell(
        mean=mean(values),
        sd=sample_sd(values),
        n=n,
        per_repeat=per_repeat,
        valid=valid,
        coverage=n / valid if valid else None,
        judge_decided=judge_decided,
    )


def accuracy_cells(
    units: list[UnitSummary], repeats: list[int], categories: list[str]
) -> dict[str, AccuracyCell]:
    """``overall`` and one cell per category for one arm in one suite (without the
    paired deltas, which continuity.report.paired adds)."""
    rows = [(s.repeat, r) for s in units for r in s.rows]
    by_category: dict[str, list[tuple[int, ProbeRow]]] = defaultdict(list)
    for repeat, row in rows:
        by_category[row.category].append((repeat, row))
    cells = {"overall": accuracy_cell(rows, repeats)}
    for category in categories:
        cells[category] = accuracy_cell(by_category[category], repeats)
    return cells


def _valid(units: list[UnitSummary]) -> list[tuple[UnitSummary, ProbeRow]]:
    return [(s, r) for s in units for r in s.rows if r.status == "valid"]


def flip_rate(units: list[UnitSummary]) -> FlipRate:
    """How often a probe resolved in two or more repeats changed its right/wrong call."""
    per_probe: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for summary, row in _valid(units):
        if not row.resolved:
            continue
        per_probe[(summary.trace_id, row.probe_id)].append(bool(row.correct))
    repeated = [v for v in per_probe.values() if len(v) > 1]
    flips = sum(1 for v in repeated if len(set(v)) > 1)
    return FlipRate(
        probes=len(repeated), flips=flips, rate=flips / len(repeated) if repeated else None
    )


def outcome_counts(units: list[UnitSummary]) -> dict[str, int]:
    counts = Counter(row.outcome or "?" for _, row in _valid(units))
    return {name: counts.get(name, 0) for name in OUTCOMES}


def excluded_counts(units: list[UnitSummary], *, treated: bool = False) -> dict[str, int]:
    """Every exclusion class's count; ``treatment_invalid`` only for an arm with a
    treatment to invalidate (the ledger arm, `treated`) or where it occurred."""
    counts = Counter(r.status for s in units for r in s.rows if r.status != "valid")
    fixed = {
        name: counts.get(name, 0)
        for name in EXCLUDED_COLUMNS
        if name != "treatment_invalid" or treated or counts.get(name)
    }
    # Other classes (an outside agent's: replay_failed, contradicted, ...) where they occur.
    return fixed | {name: counts[name] for name in sorted(counts) if name not in fixed}


def availability_counts(units: list[UnitSummary]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for _, row in _valid(units):
        counts[row.fact or "not_applicable"] += 1
        counts["superseded_present"] += bool(row.superseded_present)
        if row.loss:
            counts[row.loss] += 1
    return {name: counts.get(name, 0) for name in AVAILABILITY_COLUMNS}


def answer_line_use(units: list[UnitSummary]) -> AnswerLineUse | None:
    """How an arm's valid value-probe replies ended (None without one)."""
    kinds = Counter(row.line for _, row in _valid(units) if row.line is not None)
    samples = sum(kinds.values())
    if not samples:
        return None
    return AnswerLineUse(
        samples=samples,
        value=kinds["value"],
        unknown=kinds["unknown"],
        conflict=kinds["conflict"],
        missing=kinds["missing"],
        missing_rate=kinds["missing"] / samples,
    )


def free_recall_cell(units: list[UnitSummary]) -> FreeRecallCell | None:
    """The accuracy over an arm's resolved free-recall samples and the mean token-F1
    over all its valid ones (None without a valid one)."""
    rows = [row for _, row in _valid(units) if row.category == "free_recall"]
    if not rows:
        return None
    scored = [row.token_f1 for row in rows if row.token_f1 is not None]
    resolved = [row for row in rows if row.resolved]
    correct = sum(1 for row in resolved if row.correct)
    return FreeRecallCell(
        n=len(resolved),
        correct=correct,
        accuracy=correct / len(resolved) if resolved else None,
        token_f1=sum(scored) / len(scored) if scored else None,
        with_f1=len(scored),
    )


def tool_use(units: list[UnitSummary], categories: list[str]) -> ToolUse:
    """Call rate (over valid samples) and accuracy (over resolved ones) with and without
    a ConversationHistory call (observational)."""
    rows = [row for _, row in _valid(units)]

    def split(selected: list[ProbeRow]) -> ToolUseSplit:
        called = [r for r in selected if r.history_called and r.resolved]
        uncalled = [r for r in selected if not r.history_called and r.resolved]
        with_call = sum(1 for r in selected if r.history_called)
        return ToolUseSplit(
            samples=len(selected),
            with_call=with_call,
            call_rate=with_call / len(selected) if selected else None,
            accuracy_with_call=(
                sum(1 for r in called if r.correct) / len(called) if called else None
            ),
            accuracy_without_call=(
                sum(1 for r in uncalled if r.correct) / len(uncalled) if uncalled else None
            ),
        )

    return ToolUse(
        **msgspec.structs.asdict(split(rows)),
        by_category={c: split([r for r in rows if r.category == c]) for c in categories},
    )


def pressure_range(arm: str, units: list[UnitSummary]) -> dict[str, PressureCell]:
    """Min and max of every figure the arm's pressure rule checks, over its valid
    samples (empty for an arm without a pressure rule). The threshold is enforced on
    long traces only; on other suites the range is descriptive."""
    rule = ARMS[arm].pressure if arm in ARMS else None
    if rule is None:
        return {}
    thresholds = {k: v for k, v in msgspec.structs.asdict(rule).items() if v is not None}
    table: dict[str, PressureCell] = {}
    for name, threshold in thresholds.items():
        values = [r.pressure[name] for _, r in _valid(units) if name in r.pressure]
        table[name] = PressureCell(
            figure=PRESSURE_FIGURES[name],
            threshold=threshold,
            min=min(values) if values else None,
            max=max(values) if values else None,
            n=len(values),
        )
    return table
