"""A run's samples as rows other tools read: JSON Lines or CSV, one row per sample
(an Inspect eval log is built from the same rows: `continuity.report.inspect_log`).

Each row is what the report's drill-down shows for one probe sample (`Sample`: where it
ran, the question, what the scorer expected and the values the drill-down highlights
(the expected ones, `needles`, and the superseded ones), the answer, its
classification, outcome and why, where the fact was after the boundary and the loss,
the boundary's evidence, what the reader saw (`context`: the digest of the stored
reader-context tree, `continuity.sampling.context`, or why there is none) and the tool
calls it made at the probe with their results, the judge's verdict, the unit file),
graded by the same scorer as the aggregate, plus what it used: the reader model, the
probe's tokens, the compaction's tokens, the ConversationHistory calls, and the
list-price cost of the sample's real model calls (the judge's left out), priced as the
run's spend table prices them (None offline, where no call is real, and when the model
or one of its rates is unpriced).

The needles and superseded values are the evaluator's: the reader was never given them,
and they are never added to what it saw (`ExportedRun.contexts` holds each stored
context as the store keeps it).

The rows are in the report's order (suite, arm, trace, repeat, probe), so an export of
the same run is the same bytes. JSON Lines keeps the types (null, booleans, lists); CSV
(RFC 4180: ``\r\n`` line ends, a cell holding a line break, quote or comma quoted) writes
a list of strings as its items joined by ``"; "``, the tool calls as a JSON array (an
empty list as an empty cell), None as an empty cell, booleans as ``true``/``false``.
Cells are data: one starting with ``=`` is not escaped, so a spreadsheet may read it as
a formula.
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
from continuity.sampling.context import ReaderContext
from continuity.store import Store

__all__ = [
    "EXPORT_FORMATS",
    "ExportFormat",
    "ExportRow",
    "ExportToolCall",
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


class ExportToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call the reader made at the probe, before it answered: the tool, its
    arguments and what came back (None when no result followed it)."""

    name: str
    arguments: dict[str, Any]
    result: str | None
    is_error: bool


class ExportRow(msgspec.Struct, frozen=True, kw_only=True):
    """One sample (the module doc). Token fields are the probe's own calls; the
    ``compaction_`` ones the compaction its arm made before the probe. `context` is the
    digest of the stored reader-context tree (None when the unit kept none);
    `context_note` says why it is missing or no longer readable ("" when it reads)."""

    suite: str
    arm: str
    trace_id: str
    repeat: int
    probe_id: str
    category: str
    question: str
    expected: str
    needles: list[str]
    superseded: list[str]
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
    context: str | None
    context_note: str
    probe_tool_calls: list[ExportToolCall]
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


def _tool_calls(seen: ReaderContext | None) -> list[ExportToolCall]:
    """The reader's tool calls at the probe, each with the result that answered it."""
    if seen is None:
        return []
    results = {m.call_id: m for m in seen.turn.messages if m.role == "tool"}
    calls = []
    for call in seen.tool_calls():
        result = results.get(call.call_id)
        calls.append(
            ExportToolCall(
                name=call.name,
                arguments=call.arguments,
                result=result.text if result is not None else None,
                is_error=result.is_error if result is not None else False,
            )
        )
    return calls


def _row(sample: Sample, catalog: Catalog | None) -> ExportRow:
    usage, compaction = sample.usage, sample.compaction_usage
    note = sample.seen_note if sample.seen is None else ""
    return ExportRow(
        suite=sample.suite,
        arm=sample.arm,
        trace_id=sample.trace_id,
        repeat=sample.repeat,
        probe_id=sample.probe_id,
        category=sample.category,
        question=sample.question,
        expected=sample.expected,
        needles=sample.needles,
        superseded=sample.superseded,
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
        context=sample.context_digest,
        context_note=note,
        probe_tool_calls=_tool_calls(sample.seen),
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
    """A run's rows, its manifest (None for a run without one) and the reader contexts
    the store still holds, by the tree digest a row's `context` names."""

    manifest: RunManifest | None
    rows: list[ExportRow]
    contexts: dict[str, ReaderContext] = msgspec.field(default_factory=dict)


def export_run(
    store: Store, run_dir: Path, scorer: str = "current", catalog: Catalog | None = None
) -> ExportedRun:
    """Every sample of the run in `run_dir`, graded by `scorer` (``current`` or
    ``original``, as ``doit aggregate --scorer``), priced with `catalog`; the run's
    manifest, and the reader contexts the rows name that the store still holds.

    Raises:
        UsageError: ``scorer_unknown``. AggregateError: ``run_manifest_malformed``,
            ``unit_malformed`` (`continuity.report.drilldown.report_context`).
    """
    context = report_context(store, run_dir, Scorer(store, run_dir, scorer))
    rows, contexts = [], {}
    for sample in context.samples:
        rows.append(_row(sample, catalog))
        if sample.context_digest is not None and sample.seen is not None:
            contexts[sample.context_digest] = sample.seen
    return ExportedRun(manifest=context.manifest, rows=rows, contexts=contexts)


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
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "; ".join(value)
    if isinstance(value, list):  # the tool calls: structured, so JSON
        return msgspec.json.encode(value).decode("utf-8")
    return str(value)
