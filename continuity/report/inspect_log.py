"""A run's samples as Inspect eval logs, written with ``inspect_ai``'s own log API, so
``inspect view`` opens a run.

One log per suite and arm (the cells the report's accuracy tables show), in Inspect's
terms: the task is the suite, the solver the arm, the model the reader, an epoch a
repeat. Each export row (`continuity.report.export.ExportRow`) becomes one
``EvalSample``: the probe's question as its input, what the scorer expected as its
target, the answer as its output, one score named ``outcome`` whose value is the outcome
(``correct``, ``stale``, ... ``unresolved``; an excluded sample's is its status) with
the scorer's reason as its explanation, and every other field of the row as metadata.

Its ``messages`` are what the reader saw (`messages`): the stored reader context (the
system prompt, then every message before the probe question: the compaction summary,
pack, rebuilt or reseeded context, ledger, each user message's way in as its
``source`` metadata), the probe turn (the question, the reader's tool calls and their
results), then the answer. A sample whose context the unit did not keep, or the store
no longer holds, gets the question and the answer only, and its metadata's
``messages`` says why. The messages are the stored ones as they are: the needles and
superseded values, the evaluator's, are metadata only.
The log's results carry the report's figures for the cell: ``accuracy`` (the mean of
the per-repeat accuracies over resolved samples, as results.json) and ``coverage``
(resolved ÷ valid); a figure without a sample to measure it is left out. The outcome
counts are the score's metadata.

``inspect_ai`` is an optional extra (``pip install 'continuity[inspect]'``); without it
`require_inspect` refuses with ``export_extra_missing``.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from continuity.digest import digest_bytes
from continuity.errors import UsageError
from continuity.report.export import ExportedRun, ExportRow
from continuity.report.stats import mean
from continuity.sampling.context import ContextMessage, ReaderContext

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalResults, EvalSample
    from inspect_ai.model import ChatMessage

__all__ = [
    "INSPECT_EXTRA",
    "SEEN_MESSAGES",
    "inspect_logs",
    "messages",
    "require_inspect",
    "write_inspect_logs",
]

INSPECT_EXTRA = "pip install 'continuity[inspect]'"
_SCORE = "outcome"  # the one score every sample carries
# Row fields that are the sample's own parts (input, target, output, score), not metadata.
_PARTS = frozenset({"question", "expected", "answer", "outcome", "score_reason"})
# A sample's metadata ``messages``: what its messages are.
SEEN_MESSAGES = "what the reader saw: its stored context and probe turn, then the answer"


def require_inspect() -> None:
    """Import ``inspect_ai``'s log API, or refuse.

    Raises:
        UsageError: ``export_extra_missing`` when ``inspect_ai`` is not installed.
    """
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as error:
        raise UsageError(
            f"--format inspect needs inspect_ai, an optional extra: {INSPECT_EXTRA}",
            code="export_extra_missing",
            location="--format",
        ) from error


def _message(message: ContextMessage, number: str) -> ChatMessage:
    """One stored message as Inspect's, with the id `number` (ids are deterministic)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall, ToolCallError

    if message.role == "user":
        source = {"source": message.source} if message.source else None
        return ChatMessageUser(id=number, content=message.text, metadata=source)
    if message.role == "tool":
        error = ToolCallError("unknown", message.text) if message.is_error else None
        return ChatMessageTool(
            id=number,
            content=message.text,
            tool_call_id=message.call_id,
            function=message.tool,
            error=error,
        )
    calls = [
        ToolCall(id=c.call_id, function=c.name, arguments=c.arguments) for c in message.tool_calls
    ]
    return ChatMessageAssistant(id=number, content=message.text, tool_calls=calls or None)


def messages(row: ExportRow, seen: ReaderContext | None) -> tuple[list[ChatMessage], str]:
    """The sample's Inspect messages and what they are (`SEEN_MESSAGES`, or why they
    are the question and the answer only): `seen` (the context `row.context` names,
    None when the store does not hold it), then the answer.

    Raises:
        ImportError: without ``inspect_ai`` (`require_inspect` refuses first).
    """
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    key = f"{row.trace_id}/{row.probe_id}/{row.repeat}"
    answer = ChatMessageAssistant(id=f"{key}/answer", content=row.answer, model=row.reader_model)
    if seen is None:
        why = row.context_note or "the store no longer holds the reader context"
        question = ChatMessageUser(id=f"{key}/question", content=row.question)
        return [question, answer], f"the question and the answer only: {why}"
    stored = [*seen.context.messages, *seen.turn.messages]
    shown: list[ChatMessage] = [ChatMessageSystem(id=f"{key}/system", content=seen.context.system)]
    shown += [_message(m, f"{key}/{i}") for i, m in enumerate(stored, 1)]
    return [*shown, answer], SEEN_MESSAGES


def _sample(row: ExportRow, seen: ReaderContext | None) -> EvalSample:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    model = row.reader_model or "none"
    usage = ModelUsage(
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        total_tokens=row.input_tokens + row.output_tokens,
        input_tokens_cache_read=row.cached_input_tokens,
        total_cost=row.cost_usd,
    )
    explanation = row.score_reason or "; ".join(row.reasons) or row.status
    chat, what = messages(row, seen)
    metadata = {k: v for k, v in _fields(row).items() if k not in _PARTS}
    metadata["messages"] = what
    metadata["tools_offered"] = seen.context.tools if seen is not None else []
    return EvalSample(
        id=f"{row.trace_id}/{row.probe_id}",
        epoch=row.repeat,
        input=row.question,
        target=row.expected,
        messages=chat,
        output=ModelOutput.from_content(model=model, content=row.answer),
        scores={
            _SCORE: Score(
                value=row.outcome or row.status,
                answer=row.answer,
                explanation=explanation,
                metadata={"correct": row.correct, "decided_by": row.decided_by},
            )
        },
        metadata=metadata,
        model_usage={model: usage} if row.reader_model else {},
    )


def _fields(row: ExportRow) -> dict[str, Any]:
    """The row as JSON-ready values (the tool calls as plain objects)."""
    fields: dict[str, Any] = msgspec.to_builtins(row)
    return fields


def _results(rows: list[ExportRow]) -> EvalResults:
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    resolved = [r for r in rows if r.status == "valid" and r.correct is not None]
    valid = sum(r.status == "valid" for r in rows)
    by_repeat: dict[int, list[bool]] = defaultdict(list)
    for row in resolved:
        by_repeat[row.repeat].append(bool(row.correct))
    figures = {
        "accuracy": mean([sum(calls) / len(calls) for _, calls in sorted(by_repeat.items())]),
        "coverage": len(resolved) / valid if valid else None,
    }
    outcomes = Counter(r.outcome or r.status for r in rows)
    score = EvalScore(
        name=_SCORE,
        scorer="continuity",
        scored_samples=len(resolved),
        unscored_samples=len(rows) - len(resolved),
        metrics={
            name: EvalMetric(name=name, value=value)
            for name, value in figures.items()
            if value is not None
        },
        metadata={"outcomes": dict(sorted(outcomes.items())), "valid": valid},
    )
    return EvalResults(total_samples=len(rows), completed_samples=len(rows), scores=[score])


def _log(exported: ExportedRun, run: str, suite: str, arm: str, rows: list[ExportRow]) -> EvalLog:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats

    manifest = exported.manifest
    started = manifest.started if manifest is not None else ""
    models = sorted({r.reader_model for r in rows if r.reader_model})
    key = digest_bytes(f"{run}\0{suite}\0{arm}".encode())
    samples = [_sample(row, exported.contexts.get(row.context or "")) for row in rows]
    spec = EvalSpec(
        eval_id=key[:22],
        run_id=digest_bytes(run.encode())[:22],
        created=started or "1970-01-01T00:00:00+00:00",
        task=suite,
        task_display_name=f"{suite} · {arm}",
        solver=arm,
        tags=[run, suite, arm],
        dataset=EvalDataset(name=suite, samples=len({s.id for s in samples})),
        model=", ".join(models) or "none",
        config=EvalConfig(epochs=max(r.repeat for r in rows)),
        metadata={
            "run": run,
            "arm": arm,
            "commit": manifest.latest.commit if manifest is not None else None,
        },
    )
    return EvalLog(
        status="success",
        eval=spec,
        results=_results(rows),
        stats=EvalStats(
            started_at=started, completed_at=manifest.finished if manifest is not None else ""
        ),
        samples=samples,
    )


def inspect_logs(exported: ExportedRun, run: str) -> dict[str, EvalLog]:
    """One log per suite and arm of `exported` (the run named `run`), by file name
    (``<run>_<suite>_<arm>.eval``), in the rows' order.

    Raises:
        UsageError: ``export_extra_missing`` (`require_inspect`).
    """
    require_inspect()
    cells: dict[tuple[str, str], list[ExportRow]] = defaultdict(list)
    for row in exported.rows:
        cells[(row.suite, row.arm)].append(row)
    return {
        f"{run}_{suite}_{arm}.eval": _log(exported, run, suite, arm, rows)
        for (suite, arm), rows in cells.items()
    }


def write_inspect_logs(exported: ExportedRun, run: str, folder: Path) -> list[Path]:
    """Write `inspect_logs` into `folder`; the paths written. Each log is written beside
    its place first, and renamed into place only once all are written (and none of
    their places is a directory): a failure removes every partial log and the folders
    this call created, and re-raises, so the logs are all written or none is. Other
    files in `folder` are left alone.

    Raises:
        UsageError: ``export_extra_missing``. OSError: the folder or a log cannot be
            written.
    """
    logs = inspect_logs(exported, run)  # refuses before anything is written
    from inspect_ai.log import write_eval_log

    created = [p for p in (folder, *folder.parents) if not p.exists()]
    partials: list[tuple[Path, Path]] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, log in logs.items():
            partial = folder / f".{name}.{os.getpid()}.partial"
            partials.append((partial, folder / name))
            write_eval_log(log, location=str(partial), format="eval")
        taken = next((path for _, path in partials if path.is_dir()), None)
        if taken is not None:  # the one rename that would fail: refused before any
            raise IsADirectoryError(errno.EISDIR, "a directory holds a log's name", str(taken))
        for partial, path in partials:
            os.replace(partial, path)
    except BaseException:  # cleanup only (an interrupt too), re-raised as it was
        for partial, _ in partials:
            with contextlib.suppress(OSError):
                partial.unlink()
        for made in created:  # deepest first, each only while empty
            with contextlib.suppress(OSError):
                made.rmdir()
        raise
    return [path for _, path in partials]
