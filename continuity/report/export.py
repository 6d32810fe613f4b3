"""A run's samples as rows other tools read: JSON Lines or CSV, one row per sample
(an Inspect eval log is built from the same rows: `continuity.report.inspect_log`).

Each row is what the report's drill-down shows for one probe sample (`Sample`: where it
ran, the question, what the scorer expected, the answer, its classification, outcome and
why, where the fact was after the boundary and the loss, the boundary's evidence, the
judge's verdict, the unit file), graded by the same scorer as the aggregate, plus what
it used: the reader model, the probe's tokens, the compaction's tokens, the
ConversationHistory calls, and the list-price cost of the sample's real model calls
(the judge's left out), priced as the run's spend table prices them (None offline,
where no call is real, and when the model or one of its rates is unpriced).

The rows are in the report's order (suite, arm, trace, repeat, probe), so an export of
the same run is the same bytes. JSON Lines keeps the types (null, booleans, lists); CSV
(RFC 4180: ``\r\n`` line ends, a cell holding a line break, quote or comma quoted) writes
a list as its items joined by ``"; "``, None as an empty cell, booleans as
``true``/``false``. Cells are data: one starting with ``=`` is not escaped, so a
spreadsheet may read it as a formula.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from continuity.plan.pricing import Catalog, call_cost
from continuity.report.drilldown import report_context
from continuity.report.results import Sample
from continuity.report.scores import Scorer
from continuity.runner.manifest import RunManifest
from continuity.store import Store

__all__ = [
    "EXPORT_FORMATS",
    "ExportFormat",
    "ExportRow",
    "ExportedRun",
    "RowFormat",
    "export_bytes",
    "export_rows",
    "export_run",
    "sample_cost",
]

RowFormat = Literal["jsonl", "csv"]
# inspect: Inspect eval logs (`continuity.report.inspect_log`), needing the inspect extra.
ExportFormat = Literal["jsonl", "csv", "inspect"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("jsonl", "csv", "inspect")


class ExportRow(msgspec.Struct, frozen=True, kw_only=True):
    """One sample (the module doc). Token fields are the probe's own calls; the
    ``compaction_`` ones the compaction its arm made before the probe."""

    suite: str
    arm: str
    trace_id: str
    repeat: int
    probe_id: str
    category: str
    question: str
    expected: str
    answer: str
    status: str
    reasons: list[str]
    outcome: str | None
    correct: bool | None
    score_reason: str | None
    decided_by: str | None
    judge: str | None
    fact: str | None
    superseded_present: bool | None
    loss: str | None
    boundary: str
    reader_model: str | None
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    compaction_input_tokens: int
    compaction_output_tokens: int
    history_calls: int
    cost_usd: float | None
    unit_file: str
    report_anchor: str


def sample_cost(catalog: Catalog | None, sample: Sample) -> float | None:
    """The list price of the sample's real calls, as the spend table prices them; None
    offline (no real call), without a catalog, or when a call is unpriced."""
    if catalog is None or not sample.billed_as or not sample.billed_calls:
        return None
    costs = [call_cost(catalog, sample.billed_as, usage) for usage in sample.billed_calls]
    if any(c is None for c in costs):
        return None
    return round(sum(c for c in costs if c is not None), 8)


def _row(sample: Sample, catalog: Catalog | None) -> ExportRow:
    usage, compaction = sample.usage, sample.compaction_usage
    return ExportRow(
        suite=sample.suite,
        arm=sample.arm,
        trace_id=sample.trace_id,
        repeat=sample.repeat,
        probe_id=sample.probe_id,
        category=sample.category,
        question=sample.question,
        expected=sample.expected,
        answer=sample.answer,
        status=sample.status,
        reasons=sample.reasons,
        outcome=sample.outcome,
        correct=sample.correct,
        score_reason=sample.score_reason,
        decided_by=sample.decided_by,
        judge=sample.judge,
        fact=sample.fact,
        superseded_present=sample.superseded_present,
        loss=sample.loss,
        boundary=sample.boundary,
        reader_model=sample.reader_model,
        input_tokens=usage.total_input,
        cached_input_tokens=usage.cache_read,
        output_tokens=usage.output,
        compaction_input_tokens=compaction.total_input,
        compaction_output_tokens=compaction.output,
        history_calls=sample.history_calls,
        cost_usd=sample_cost(catalog, sample),
        unit_file=sample.path,
        report_anchor=sample.anchor,
    )


class ExportedRun(msgspec.Struct, frozen=True, kw_only=True):
    """A run's rows and its manifest (None for a run without one)."""

    manifest: RunManifest | None
    rows: list[ExportRow]


def export_run(
    store: Store, run_dir: Path, scorer: str = "current", catalog: Catalog | None = None
) -> ExportedRun:
    """Every sample of the run in `run_dir`, graded by `scorer` (``current`` or
    ``original``, as ``doit aggregate --scorer``), priced with `catalog`; and the
    run's manifest.

    Raises:
        UsageError: ``scorer_unknown``. AggregateError: ``run_manifest_malformed``,
            ``unit_malformed`` (`continuity.report.drilldown.report_context`).
    """
    context = report_context(store, run_dir, Scorer(store, run_dir, scorer))
    return ExportedRun(
        manifest=context.manifest, rows=[_row(sample, catalog) for sample in context.samples]
    )


def export_rows(
    store: Store, run_dir: Path, scorer: str = "current", catalog: Catalog | None = None
) -> list[ExportRow]:
    """The rows of `export_run` (the same arguments and errors)."""
    return export_run(store, run_dir, scorer, catalog).rows


def export_bytes(rows: Sequence[ExportRow], form: RowFormat) -> bytes:
    """`rows` in `form`: one JSON object per line, or CSV with a header row."""
    if form == "jsonl":
        return b"".join(msgspec.json.encode(row) + b"\n" for row in rows)
    fields = ExportRow.__struct_fields__
    text = io.StringIO()
    writer = csv.writer(text)  # RFC 4180: \r\n rows; a cell with \r or \n is quoted
    writer.writerow(fields)
    for row in rows:
        writer.writerow(_cell(getattr(row, name)) for name in fields)
    return text.getvalue().encode("utf-8")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return str(value)
