"""The report's tables as (title, header, rows, note), shared by summary.md and report.html.

Every table of samples has a ``suite`` column: rows are per suite and arm, never pooled
across trace families. Deltas are paired and carry their pair count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from msgspec import UNSET

from continuity.probes.availability import AVAILABILITY_COLUMNS
from continuity.probes.scoring import OUTCOMES
from continuity.report.results import (
    AccuracyCell,
    Agreement,
    Disagreement,
    Results,
    Spend,
    ToolUseSplit,
)
from continuity.report.samples import EXCLUDED_COLUMNS

__all__ = [
    "COVERAGE_NOTE",
    "DELTA_NOTE",
    "SPEND_COLUMNS",
    "Cell",
    "Table",
    "accuracy_tables",
    "flip_table",
    "free_recall_tables",
    "judge_tables",
    "num",
    "paired_table",
    "pct",
    "per_arm_table",
    "pressure_table",
    "sample_count_tables",
    "spend_table",
    "suite_arm_rows",
    "tool_use_tables",
]

Table = tuple[str, list[str], list[list[str]], str]
Cell = TypeVar("Cell")


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def suite_arm_rows(
    r: Results, table: Mapping[str, Mapping[str, Cell]]
) -> list[tuple[str, str, Cell]]:
    """(suite, arm, cell) in report order for a ``[suite][arm]`` table."""
    return [
        (suite, arm, table[suite][arm])
        for suite in r.suites
        if suite in table
        for arm in r.arms
        if arm in table[suite]
    ]


def _split(cell: AccuracyCell) -> str:
    return " ".join(f"r{p.repeat} {pct(p.accuracy)} ({p.n})" for p in cell.per_repeat)


def _sd(cell: AccuracyCell) -> str:
    return num(None if cell.sd is None else 100 * cell.sd)


DELTA_NOTE = (
    "delta vs native is paired: arm minus native correct, over the samples both resolved "
    "(same suite, repeat, trace and probe); paired n is that count."
)
COVERAGE_NOTE = (
    "n counts resolved samples: valid ones with a right/wrong call. Coverage is resolved ÷ "
    "valid: the scorer leaves a sample unresolved when neither its rules nor the answer "
    "support a confident verdict, and an unresolved sample is never counted right or "
    "wrong. Judge is the share of resolved samples whose call is the judge's (decided "
    "where the scorer left them unresolved), not the scorer's."
)


def _coverage(cell: AccuracyCell) -> str:
    return f"{pct(cell.coverage)} ({cell.n}/{cell.valid})"


def _judged(cell: AccuracyCell) -> str:
    return pct(cell.judge_decided / cell.n) if cell.n else "-"


def _compact(cell: AccuracyCell) -> str:
    share = f"; judge {_judged(cell)}" if cell.judge_decided else ""
    return f"{pct(cell.mean)} ({cell.n}; coverage {pct(cell.coverage)}{share})"


def accuracy_tables(r: Results) -> list[Table]:
    overall = [
        [
            suite,
            arm,
            str(cells["overall"].n),
            pct(cells["overall"].mean),
            _coverage(cells["overall"]),
            _judged(cells["overall"]),
            _sd(cells["overall"]),
            _split(cells["overall"]),
            num(cells["overall"].delta_pp),
            str(cells["overall"].delta_n),
        ]
        for suite, arm, cells in suite_arm_rows(r, r.accuracy)
    ]
    compact = [
        [suite, arm] + [_compact(cells[c]) if c in cells else "-" for c in r.categories]
        for suite, arm, cells in suite_arm_rows(r, r.accuracy)
    ]
    full = [
        [
            suite,
            arm,
            category,
            str(cell.n),
            pct(cell.mean),
            _coverage(cell),
            _judged(cell),
            _sd(cell),
            _split(cell),
            num(cell.delta_pp),
            str(cell.delta_n),
        ]
        for suite, arm, cells in suite_arm_rows(r, r.accuracy)
        for category, cell in cells.items()
        if category != "overall"
    ]
    head = ["suite", "arm", "n", "accuracy", "coverage", "judge", "SD (pp)", "per repeat"]
    delta = ["delta vs native (pp)", "paired n"]
    return [
        (
            "Accuracy per arm",
            [*head, *delta],
            overall,
            "Per suite (trace family). Mean of per-repeat accuracies over resolved "
            "samples; excluded samples are never scored. " + COVERAGE_NOTE + " " + DELTA_NOTE,
        ),
        (
            "Accuracy per arm and category",
            ["suite", "arm", *r.categories],
            compact,
            "Each cell: mean accuracy (n resolved samples; coverage, resolved ÷ valid; the "
            "judge's share where it decided any); '-' where the suite has no such probe. "
            "The SD, per-repeat split and paired delta of every cell are in the next table.",
        ),
        (
            "Accuracy per arm and category, in full",
            [*head[:2], "category", *head[2:], *delta],
            full,
            "As the per-arm table, for each category of the suite.",
        ),
    ]


def per_arm_table(
    r: Results, title: str, table: dict[str, dict[str, dict[str, int]]], names: list[str]
) -> Table:
    rows = [
        [suite, arm] + [str(cell.get(n, "-")) for n in names]
        for suite, arm, cell in suite_arm_rows(r, table)
    ]
    return (title, ["suite", "arm", *names], rows, "")


def sample_count_tables(r: Results) -> list[Table]:
    outcomes = per_arm_table(r, "Outcomes", r.outcomes, list(OUTCOMES))
    present = {name for cells in r.excluded.values() for cell in cells.values() for name in cell}
    columns = [name for name in EXCLUDED_COLUMNS if name in present]
    excluded = per_arm_table(r, "Excluded samples", r.excluded, columns)
    availability = per_arm_table(
        r, "Availability and loss attribution", r.availability, list(AVAILABILITY_COLUMNS)
    )
    return [
        outcomes,
        (
            *excluded[:3],
            "Excluded samples are counted here and never scored as passes or failures; "
            "inventory_infeasible counts lookup slots the frozen policy cannot run."
            + (
                " treatment_invalid (the ledger arm only) counts samples whose preparation "
                "or ledger injection broke the upkeep protocol."
                if "treatment_invalid" in columns
                else ""
            ),
        ),
        (
            *availability[:3],
            "Where the answer-bearing fact was after the boundary, and where each miss was lost.",
        ),
    ]


def pressure_table(r: Results) -> Table:
    rows = [
        [
            suite,
            arm,
            name,
            f"{cell.threshold:,}",
            num(cell.min, 0),
            num(cell.max, 0),
            str(cell.n),
        ]
        for suite, arm, figures in suite_arm_rows(r, r.pressure)
        for name, cell in figures.items()
    ]
    return (
        "Observed pressure",
        ["suite", "arm", "figure", "threshold", "min", "max", "n"],
        rows,
        "Per arm, the figure its pressure rule checks, over valid samples: "
        "probe_input_tokens (native: provider-reported probe input), replayed_messages and "
        "dropped_records (reseeding arms), compaction_tokens_before (compaction-1, ceiling, "
        "store-compaction; compaction-2's probe compaction), mid_tokens_before "
        "(compaction-2's mid-trace compaction). Thresholds are enforced on long traces only.",
    )


def free_recall_tables(r: Results) -> list[Table]:
    """Free recall with LoCoMo's token-F1 beside the scorer's accuracy (none without
    free-recall samples)."""
    if r.free_recall is UNSET:
        return []
    rows = [
        [suite, arm, str(cell.n), pct(cell.accuracy), num(cell.token_f1, 3), str(cell.with_f1)]
        for suite, arm, cell in suite_arm_rows(r, r.free_recall)
    ]
    return [
        (
            "Free recall",
            ["suite", "arm", "resolved samples", "accuracy", "token_F1", "answers with F1"],
            rows,
            "Imported corpora's human-written answers. Accuracy is the deterministic "
            "scorer's (free_recall in the accuracy table); token_F1 is LoCoMo's own "
            "metric (mean stemmed-token F1 of the answer against the gold, by LoCoMo "
            "category), reported beside it so results can be set beside published ones. "
            "It rewards an answer that repeats the question's words and punishes a correct "
            "paraphrase, so it never replaces the scorer's grade.",
        )
    ]


def flip_table(r: Results) -> Table:
    rows = [
        [suite, arm, str(cell.probes), str(cell.flips), pct(cell.rate)]
        for suite, arm, cell in suite_arm_rows(r, r.flip_rate)
    ]
    return ("Flip rate", ["suite", "arm", "probes in 2+ repeats", "flips", "rate"], rows, "")


def tool_use_tables(r: Results) -> list[Table]:
    if not r.tool_use:
        return []

    def cells(c: ToolUseSplit) -> list[str]:
        return [pct(c.call_rate), pct(c.accuracy_with_call), pct(c.accuracy_without_call)]

    rates = ["call rate", "accuracy with call", "accuracy without call"]
    overall = [
        [suite, arm, str(t.samples), str(t.with_call), *cells(t)]
        for suite, arm, t in suite_arm_rows(r, r.tool_use)
    ]
    by_category = [
        [suite, arm, category, str(c.samples), *cells(c)]
        for suite, arm, t in suite_arm_rows(r, r.tool_use)
        for category, c in t.by_category.items()
    ]
    return [
        (
            "Tool use",
            ["suite", "arm", "samples", "with a call", *rates],
            overall,
            "Observational: the reader chooses when to call ConversationHistory.",
        ),
        ("Tool use by category", ["suite", "arm", "category", "samples", *rates], by_category, ""),
    ]


def paired_table(r: Results) -> list[Table]:
    if not r.paired:
        return []
    rows = [
        [
            suite,
            arm,
            str(p.pairs),
            str(p.both_correct),
            str(p.arm_only),
            str(p.native_only),
            str(p.both_wrong),
            f"{p.mcnemar_p:.4f}",
            num(p.delta_pp),
            "-" if p.ci_low is None or p.ci_high is None else f"[{p.ci_low:.1f}, {p.ci_high:.1f}]",
        ]
        for suite, arm, p in suite_arm_rows(r, r.paired)
    ]
    header = ["suite", "arm", "pairs", "both correct", "arm only", "native only", "both wrong"]
    return [
        (
            "Paired comparison with native",
            [*header, "McNemar p", "delta (pp)", "95% bootstrap CI (pp)"],
            rows,
            "Same suite, repeat, trace and probe, both samples valid. Exact two-sided "
            "McNemar; percentile bootstrap over pairs (2,000 resamples).",
        )
    ]


def judge_tables(r: Results) -> list[Table]:
    j = r.judge

    def row(suite: str, name: str, cell: Agreement) -> list[str]:
        return [
            suite,
            name,
            str(cell.pairs),
            str(cell.agree),
            pct(cell.agreement),
            str(cell.judge_pass),
            str(cell.proxy_pass),
        ]

    rows = [
        line
        for suite, t in j.by_suite.items()
        for line in [
            *(row(suite, c, cell) for c, cell in t.by_category.items()),
            row(suite, "all", t.overall),
        ]
    ]
    unreadable = ", ".join(f"{suite} {t.unreadable}" for suite, t in j.by_suite.items()) or "none"
    disagreements = [_disagreement_row(d) for d in j.disagreements]
    return [
        (
            "Judge agreement",
            ["suite", "category", "pairs", "agree", "agreement", "judge pass", "proxy pass"],
            rows,
            "The independent judge against the deterministic scorer, per suite, over the "
            "samples both graded: next actions, whose scorer is a keyword proxy (the judge "
            "never sees the arm); the row 'all' is the suite's total, never pooled across "
            "suites. The judge also decides the samples the scorer left unresolved; those "
            "count in the main tables, labelled by the judge column there, and not here. "
            f"Unreadable verdicts, left out: {unreadable}.",
        ),
        (
            "Judge disagreements",
            ["suite", "unit", "probe", "category", "answer", "scorer", "judge", "judge's reason"],
            disagreements,
            "Every sample where the scorer and the judge disagree; inspect the answer "
            "before trusting either.",
        ),
    ]


def _disagreement_row(d: Disagreement) -> list[str]:
    return [
        d.suite,
        d.unit,
        d.probe_id,
        d.category,
        d.answer,
        f"{d.scorer_outcome or '-'} ({'pass' if d.scorer_correct else 'fail'})",
        f"{'pass' if d.judge_passed else 'fail'} ({d.judge_outcome or '-'})",
        d.reason or "-",
    ]


def _cost_cell(spend: Spend) -> str:
    if not spend.model_calls:
        return "-"
    if spend.cost_usd is not None:
        return f"{spend.cost_usd:.4f}"
    return f"unknown ({spend.unpriced_calls} unpriced; known {spend.cost_known_usd:.4f})"


SPEND_COLUMNS = (
    "input",
    "cache_read",
    "cache_write",
    "output",
    "compaction_input",
    "compaction_cache_read",
    "compaction_cache_write",
    "compaction_output",
)


def _spend_row(arm: str, spend: Spend) -> list[str]:
    suites = spend.suites if spend.suites is not UNSET else []
    live_turns = spend.live_turns if spend.live_turns is not UNSET else "-"
    # Calls that reported no usage are not in the counts: each is a lower bound.
    floor = "≥ " if spend.unreported_calls is not UNSET else ""
    return [
        arm,
        ", ".join(suites),
        str(live_turns),
        *(f"{floor}{getattr(spend, n)}" for n in SPEND_COLUMNS),
        _cost_cell(spend),
    ]


def _usage_note(r: Results) -> str:
    """What the counts leave out (calls without usage) and every HTTP retry."""
    notes = []
    unreported = sum(
        s.unreported_calls for s in r.spend.values() if s.unreported_calls is not UNSET
    )
    if unreported:
        notes.append(
            f" ≥: {unreported} distinct calls reported no usage (llama-cpp-python streams "
            "none), so their tokens are unknown and not in the counts, which are lower "
            "bounds."
        )
    sends = r.sends
    if sends is not UNSET:
        why = ", ".join(f"after {k} {v}" for k, v in sends.retried_after.items()) or "none"
        notes.append(
            f" HTTP sends: {sends.sends} for {sends.requests} requests; {sends.retries} "
            f"retries ({why}); {sends.timed_out} timed out (never re-sent by the client; "
            "a rerun sends them again). From the run's attempts.jsonl."
        )
    return "".join(notes)


def spend_table(r: Results) -> Table:
    """Tokens and list price per arm, and the judge's on a row of its own."""
    judge = r.spend["judge"]
    rows = [_spend_row(arm, r.spend[arm]) for arm in r.arms]
    rows.append(
        ["judge (separately)", "-", "-"]
        + [str(getattr(judge, n)) for n in SPEND_COLUMNS[:4]]
        + ["-", "-", "-", "-", _cost_cell(judge)]
    )
    return (
        "Spend (tokens)",
        ["arm", "suites", "live turns", *SPEND_COLUMNS, "list price (USD)"],
        rows,
        "Probe turns including their compaction summary requests; the compaction_* "
        "columns are the 'of which' summary-request subtotal. Token counts are per "
        "sample: a call one sample replayed from the call cache counts in every sample "
        "that used it. Spend is accounting, not a comparison: arms that ran on "
        "different suites spent on different traces. The judge is reported separately. "
        "List price: real calls at list prices (the pricing catalog, else genai-prices), "
        "each distinct call once; an "
        "estimate, not an invoice; unpriced calls make it unknown, never zero; "
        "scripted runs are not billed (-)." + _usage_note(r),
    )
