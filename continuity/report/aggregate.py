"""Aggregate a run's unit records into results.json, summary.md and report.html.

Every unit file is verified before it counts (continuity.report.verify: ``unit_malformed``,
``unit_tampered``, ``unit_key_mismatch``), and no repeat x trace x arm may appear twice
(``unit_duplicate``) unless every unit file for it is a lookup unit: then each slot they
share is an ambiguous duplicate, reported with its occurrence count and kept out of
every score and cost (continuity.report.duplicates). A refused unit stops the
aggregate; it is never averaged in.

Aggregation is incremental (continuity.report.collect): each verified unit is reduced
to a small summary, cached in the store under the digest of the unit file's bytes;
paired bootstrap intervals are cached under the digest of the paired outcomes.
Re-aggregating after one unit changed re-reads only that unit (and recomputes only the
intervals its arm takes part in).

Results are split by suite (the trace family: original, hard, hard-distractors): every
accuracy, outcome, exclusion, availability, flip, tool-use, pressure and paired table is
per suite and arm, and every "delta vs native" is paired (see continuity.report.paired).
Units run under different probe protocols are never aggregated together
(``unit_protocol_mixed``): their readers saw different bytes. Outside agents' units
(continuity.runner.agent_units) have a protocol of their own, so a run of them never
mixes with the reference arms; their report opens with the black-box banner
(`agent_banner`).

The order inside the package is one way: the result types (continuity.report.results)
-> the statistics and tables that compute them -> this module, which builds a `Results`
and hands it to the renderer (continuity.report.render), which reads it and never
imports this module.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from continuity.agents.identity import AGENT_PROBE_PROTOCOL, unit_arm
from continuity.agents.identity import ARMS as AGENT_ARMS
from continuity.arms import ARMS
from continuity.errors import AggregateError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.outputs import write_json, write_output
from continuity.plan.plan import Plan
from continuity.plan.pricing import Catalog, load_catalog, model_price
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.providers.attempts import ATTEMPT_LOG, summarize_attempts
from continuity.providers.endpoint import is_loopback
from continuity.report.collect import load_summaries
from continuity.report.drilldown import report_context
from continuity.report.duplicates import without_duplicate_slots
from continuity.report.judging import judge_agreement
from continuity.report.lookup import lookup_table
from continuity.report.paired import paired_with_native
from continuity.report.render import render_html, render_markdown
from continuity.report.results import (
    AccuracyCell,
    AgentBanner,
    AnswerLineUse,
    FlipRate,
    FreeRecallCell,
    Paired,
    PressureCell,
    Results,
    Spend,
    ToolUse,
)
from continuity.report.samples import (
    accuracy_cells,
    answer_line_use,
    availability_counts,
    excluded_counts,
    flip_rate,
    free_recall_cell,
    outcome_counts,
    pressure_range,
    tool_use,
)
from continuity.report.scores import Scorer, scorer_section
from continuity.report.spend import arm_spend, judge_spend
from continuity.report.summary import UnitSummary
from continuity.report.upkeep import upkeep_spend
from continuity.store import Store

__all__ = [
    "LEGACY_PROTOCOL",
    "SUITE_ORDER",
    "agent_banner",
    "aggregate_run",
    "combine",
    "local_model",
    "probe_protocols",
]

SUITE_ORDER = ("original", "hard", "hard-distractors", "smoke")
# Units written before the probe protocol was recorded ran under its first version.
LEGACY_PROTOCOL = "probe-protocol-v1"


def _suites(summaries: list[UnitSummary]) -> list[str]:
    present = {s.family for s in summaries}
    return [f for f in SUITE_ORDER if f in present] + sorted(present - set(SUITE_ORDER))


def probe_protocols(summaries: list[UnitSummary], location: str) -> tuple[list[str], str | None]:
    """The probe protocol of the run's units and the report's note on it (None when it
    is the current protocol).

    Raises:
        AggregateError: ``unit_protocol_mixed`` when the units ran under different probe
            protocols: their readers saw different bytes, so their results are not
            comparable and are never averaged together.
    """
    example: dict[str, UnitSummary] = {}
    for summary in summaries:
        example.setdefault(summary.probe_protocol or LEGACY_PROTOCOL, summary)
    if len(example) > 1:
        named = "; ".join(
            f"{protocol} (e.g. r{s.repeat}-{s.trace_id}-{s.arm})"
            for protocol, s in sorted(example.items())
        )
        raise AggregateError(
            f"the units ran under different probe protocols: {named}. Results under "
            "different probe protocols are not comparable; aggregate each protocol's "
            "units in a run directory of its own",
            code="unit_protocol_mixed",
            location=location,
        )
    protocols = sorted(example)
    if protocols == [PROBE_PROTOCOL]:
        return protocols, None
    if protocols == [AGENT_PROBE_PROTOCOL]:
        return protocols, (
            "These units are outside agents': each probe was the agent's next owner turn "
            f"({AGENT_PROBE_PROTOCOL}), not the reference reader's probe turn. Compare "
            "them with other outside agents' runs, never with the reference arms."
        )
    return protocols, (
        f"These units ran under {protocols[0]}, older than the current {PROBE_PROTOCOL}: "
        "the reader saw different probe-turn bytes. Results under different probe "
        "protocols are not comparable; do not set these numbers beside a run under "
        f"{PROBE_PROTOCOL}."
    )


class _SuiteTables(msgspec.Struct, frozen=True, kw_only=True):
    """Every ``[arm]`` table of one suite."""

    accuracy: dict[str, dict[str, AccuracyCell]]
    paired: dict[str, Paired]
    flips: dict[str, FlipRate]
    outcomes: dict[str, dict[str, int]]
    excluded: dict[str, dict[str, int]]
    availability: dict[str, dict[str, int]]
    pressure: dict[str, dict[str, PressureCell]]
    tools: dict[str, ToolUse]
    free_recall: dict[str, FreeRecallCell]
    answer_line: dict[str, AnswerLineUse]


def _suite_tables(
    store: Store, by_arm: dict[str, list[UnitSummary]], repeats: list[int]
) -> _SuiteTables:
    """The tables of one suite from its units, arm by arm (`by_arm`: arms with units)."""
    in_suite = sorted({r.category for us in by_arm.values() for s in us for r in s.rows})
    accuracy = {a: accuracy_cells(u, repeats, in_suite) for a, u in by_arm.items()}
    paired, accuracy = paired_with_native(store, by_arm, in_suite, accuracy)
    return _SuiteTables(
        accuracy=accuracy,
        paired=paired,
        flips={a: flip_rate(u) for a, u in by_arm.items()},
        outcomes={a: outcome_counts(u) for a, u in by_arm.items()},
        excluded={
            a: excluded_counts(u, treated=a in ARMS and ARMS[a].ledger) for a, u in by_arm.items()
        },
        availability={a: availability_counts(u) for a, u in by_arm.items()},
        pressure={a: pressure_range(a, u) for a, u in by_arm.items()},
        tools={
            a: tool_use(u, in_suite)
            for a, u in by_arm.items()
            if a in ARMS and ARMS[a].history_tool
        },
        free_recall={a: cell for a, u in by_arm.items() if (cell := free_recall_cell(u))},
        answer_line={a: use for a, u in by_arm.items() if (use := answer_line_use(u))},
    )


def _by_suite(
    store: Store,
    summaries: list[UnitSummary],
    suites: list[str],
    arms: list[str],
    repeats: list[int],
) -> dict[str, _SuiteTables]:
    units: dict[str, dict[str, list[UnitSummary]]] = defaultdict(lambda: defaultdict(list))
    for summary in summaries:
        units[summary.family][summary.arm].append(summary)
    return {
        suite: _suite_tables(
            store, {arm: units[suite][arm] for arm in arms if units[suite][arm]}, repeats
        )
        for suite in suites
    }


def _spend(
    catalog: Catalog,
    summaries: list[UnitSummary],
    arms: list[str],
    suites: list[str],
    verdicts: int,
) -> dict[str, Spend]:
    """Every arm's spend, then the judge's (under ``judge``)."""
    spend = {
        arm: arm_spend(catalog, [s for s in summaries if s.arm == arm], suites) for arm in arms
    }
    spend["judge"] = judge_spend(catalog, summaries, verdicts)
    return spend


def agent_banner(summaries: list[UnitSummary]) -> AgentBanner | UnsetType:
    """The banner counts of a run's outside-agent units (UNSET without any)."""
    tallies = [s.agent for s in summaries if s.agent is not None]
    if not tallies:
        return UNSET
    verdicts: Counter[str] = Counter()
    for tally in tallies:
        verdicts.update(tally.verdicts)
    return AgentBanner(
        agents=sorted({t.label for t in tallies}),
        total=sum(verdicts.values()),
        verified=verdicts["verified"],
        contradicted=verdicts["contradicted"],
        not_crossed=verdicts["not_crossed"],
        copies_unverified=sum(t.copies_unverified for t in tallies),
        replay_failed=sum(t.replay_failed for t in tallies),
        unsandboxed=sum(t.unsandboxed for t in tallies),
        not_from_model=sum(t.not_from_model for t in tallies),
        declared=sum(t.declared for t in tallies),
    )


def combine(
    store: Store,
    run: str,
    summaries: list[UnitSummary],
    planned_slots: list[dict[str, Any]] | None = None,
    catalog: Catalog | None = None,
) -> Results:
    """The results of a run from its unit summaries, suite by suite (see the module doc).
    Duplicate lookup slots are in the lookup table only (continuity.report.duplicates).

    Raises:
        AggregateError: ``unit_protocol_mixed`` (see `probe_protocols`).
    """
    protocols, protocol_note = probe_protocols(summaries, run)
    observed, summaries = summaries, without_duplicate_slots(summaries)
    order = {arm_id: i for i, arm_id in enumerate([*ARMS, *map(unit_arm, AGENT_ARMS)])}
    arms = sorted({s.arm for s in summaries}, key=lambda a: (order.get(a, len(order)), a))
    suites = _suites(summaries)
    repeats = sorted({s.repeat for s in summaries})
    categories = sorted({r.category for s in summaries for r in s.rows})
    tables = _by_suite(store, summaries, suites, arms, repeats)
    judge = judge_agreement(summaries, categories, suites)
    return Results(
        run=run,
        units=len(observed),
        arms=arms,
        suites=suites,
        repeats=repeats,
        categories=categories,
        probe_protocols=protocols,
        protocol_note=protocol_note,
        accuracy={suite: t.accuracy for suite, t in tables.items()},
        flip_rate={suite: t.flips for suite, t in tables.items()},
        outcomes={suite: t.outcomes for suite, t in tables.items()},
        tool_use={suite: t.tools for suite, t in tables.items() if t.tools},
        excluded={suite: t.excluded for suite, t in tables.items()},
        availability={suite: t.availability for suite, t in tables.items()},
        pressure={suite: t.pressure for suite, t in tables.items()},
        judge=judge,
        spend=_spend(catalog or load_catalog(), summaries, arms, suites, judge.pairs),
        paired={suite: t.paired for suite, t in tables.items() if t.paired},
        lookup=lookup_table(
            ((s.repeat, s.trace_id, s.arm, s.lookup_rows) for s in observed), planned_slots
        ),
        upkeep=upkeep_spend(catalog or load_catalog(), ((s.arm, s.upkeep) for s in summaries))
        or UNSET,
        free_recall={s: t.free_recall for s, t in tables.items() if t.free_recall} or UNSET,
        agent=agent_banner(summaries),
        answer_line={s: t.answer_line for s, t in tables.items() if t.answer_line} or UNSET,
    )


def _planned_slots(run_dir: Path) -> list[dict[str, Any]] | None:
    """The lookup slots a run planned (``lookup-slots.json``), if it is a lookup run."""
    try:
        slots_file = run_dir / "lookup-slots.json"
        data = read_user_bytes(slots_file, limit=DOCUMENT_MAX_BYTES, what="lookup-slots.json")
        document = msgspec.json.decode(data)
    except (OSError, msgspec.MsgspecError):
        return None
    slots = document.get("slots") if isinstance(document, dict) else None
    return slots if isinstance(slots, list) else None


def local_model(run_dir: Path, catalog: Catalog) -> str | None:
    """``reader at base URL`` when the run's plan (``plan.json``) is real, its endpoint is
    on this machine and no price list knows its reader (None otherwise)."""
    try:
        data = read_user_bytes(run_dir / "plan.json", limit=DOCUMENT_MAX_BYTES, what="plan.json")
        document = msgspec.json.decode(data)
        plan = msgspec.convert(document.get("plan", document), Plan)
    except (OSError, msgspec.MsgspecError, AttributeError):
        return None
    if plan.mode != "real" or not is_loopback(plan.endpoint.base_url):
        return None
    if model_price(catalog, plan.reader) is not None:
        return None
    return f"{plan.reader} at {plan.endpoint.base_url}"


def aggregate_run(
    store: Store, run_dir: Path, catalog: Catalog | None = None, scorer: str = "current"
) -> tuple[Results, dict[str, Path], int]:
    """Aggregate ``<run_dir>/units`` and write the three outputs into `run_dir`, pricing
    real calls with `catalog` (default: the checked-in pricing catalog) and grading with
    `scorer`: ``current`` (the current scorer, `continuity.report.scores`) or
    ``original`` (the grades recorded in the unit files).

    Returns the results, the output paths and how many units were read in full.
    Raises:
        AggregateError: a unit was refused (see the module doc), or there were none.
    """
    chosen = Scorer(store, run_dir, scorer)
    summaries, read = load_summaries(store, run_dir / "units", chosen)
    results = combine(store, run_dir.name, summaries, _planned_slots(run_dir), catalog)
    scored = without_duplicate_slots(summaries)
    results = msgspec.structs.replace(
        results,
        scorer=scorer_section(scored, chosen),
        sends=summarize_attempts(run_dir / ATTEMPT_LOG) or UNSET,
        local_model=local_model(run_dir, catalog or load_catalog()) or UNSET,
    )
    paths = {
        "results": run_dir / "results.json",
        "summary": run_dir / "summary.md",
        "report": run_dir / "report.html",
    }
    write_json(paths["results"], results)
    write_output(paths["summary"], render_markdown(results).encode("utf-8"))
    context = report_context(store, run_dir, chosen)  # the header and the drill-down
    write_output(paths["report"], render_html(results, context).encode("utf-8"))
    return results, paths, read
