"""Score artifacts: a scorer's grades of a unit's recorded answers, kept beside the unit.

A unit file holds the answers and the grades the scorer gave them when the unit ran:
its original grades, which never change. A corrected scorer does not rewrite them (seed
004: earlier grades stay as they were when the evaluator is corrected); it grades the
same recorded answers again into a **score artifact**, keyed by the unit (its key and
content digest) and by the scorer's code digest (`scorer_digest`: every scorer
module, listed in `SCORER_MODULES`). `doit score` stores each artifact in the store
and materialises it as ``<run>/scores/<scorer16>/r<repeat>-<trace>-<arm>.json``.

`doit aggregate` chooses the grades with `Scorer`: ``current`` (the default) uses the
current scorer's artifacts, grading the recorded answers itself, with the same
function, where `doit score` has not run; ``original`` uses the unit files' grades and
reproduces the numbers a run reported before any re-score.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec
from msgspec import UNSET, UnsetType

from continuity.digest import KeySpec, value_digest
from continuity.errors import AggregateError, UsageError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.probes.availability import Availability
from continuity.probes.scorer_version import SCORER_DATA, SCORER_MODULES, scorer_digest
from continuity.probes.scoring import locale_for
from continuity.report.results import ChangedOutcome, ScorerChange, ScorerSection
from continuity.runner.units.build import (
    ProbeResult,
    UnitRecord,
    decide,
    score_result,
    unit_filename,
)
from continuity.store import Store
from continuity.traces.schema import Trace
from continuity.traces.validate import load_trace

if TYPE_CHECKING:
    from continuity.report.summary import UnitSummary

__all__ = [
    "SCORER_CHOICES",
    "SCORER_DATA",
    "SCORER_MODULES",
    "SCORE_SALT",
    "SCORE_SCHEMA",
    "Cell",
    "ProbeScore",
    "ScoreRecord",
    "Scorer",
    "apply_scores",
    "encode_score",
    "load_unit_trace",
    "score_key",
    "score_path",
    "score_unit",
    "scorer_digest",
    "scorer_section",
    "store_score",
]

# SCORER_MODULES, SCORER_DATA and scorer_digest live beside the scoring modules
# (continuity.probes.scorer_version), where the runner's manifest can name them too.
SCORE_SALT = "score-v1"
SCORE_SCHEMA = "continuity-score-v1"
SCORER_CHOICES = ("current", "original")


class ProbeScore(msgspec.Struct, frozen=True, kw_only=True):
    """One valid probe's grade under a scorer."""

    probe_id: str
    outcome: str | None
    correct: bool | None
    score_reason: str | None
    availability: Availability | None
    loss: str | None
    # "judge" when the unit's recorded judge verdict decided a sample this scorer left
    # unresolved (left out otherwise).
    decided_by: Literal["judge"] | UnsetType = UNSET


class ScoreRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A scorer's grades of one unit's valid probes (excluded samples are never graded)."""

    schema: str = SCORE_SCHEMA
    key: str
    scorer: str  # the scorer's code digest
    unit: str  # the unit's key
    unit_digest: str  # the unit's content digest
    repeat: int
    trace_id: str
    arm: str
    probes: list[ProbeScore]
    content_digest: str = ""


def score_key(unit_key: str, unit_digest: str, scorer: str) -> str:
    return KeySpec(
        kind="score",
        salt=SCORE_SALT,
        code=scorer,
        params={"unit_digest": unit_digest},
        inputs={"unit": unit_key},
    ).key()


def _seal(record: ScoreRecord) -> ScoreRecord:
    blank = msgspec.structs.replace(record, content_digest="")
    digest = value_digest(("continuity-score", msgspec.json.encode(blank)))
    return msgspec.structs.replace(record, content_digest=digest)


def score_path(run_dir: Path, scorer: str, record: UnitRecord) -> Path:
    """Where a unit's score artifact under `scorer` is materialised."""
    return run_dir / "scores" / scorer[:16] / unit_filename(record)


def score_unit(record: UnitRecord, trace: Trace, scorer: str) -> ScoreRecord:
    """Grade a unit's recorded answers with the current scoring code (no model call)."""
    by_id = {p.probe_id: p for p in trace.probes}
    rescored = []
    for result in record.probes:
        if result.status != "valid":
            continue
        states = (
            result.evidence.needle_states
            if result.evidence is not None
            else result.agent.needle_states  # an outside agent's sample
            if result.agent is not UNSET
            else []
        )
        rescored.append(
            score_result(result, by_id[result.probe_id], states, locale=locale_for(trace.family))
        )
    # The unit's recorded judge verdicts decide what this scorer leaves unresolved.
    probes = [
        ProbeScore(
            probe_id=graded.probe_id,
            outcome=graded.outcome,
            correct=graded.correct,
            score_reason=graded.score_reason,
            availability=graded.availability,
            loss=graded.loss,
            decided_by=graded.decided_by,
        )
        for graded in decide(rescored, record.judge)
    ]
    return _seal(
        ScoreRecord(
            key=score_key(record.key, record.content_digest, scorer),
            scorer=scorer,
            unit=record.key,
            unit_digest=record.content_digest,
            repeat=record.repeat,
            trace_id=record.trace_id,
            arm=record.arm,
            probes=probes,
        )
    )


def encode_score(record: ScoreRecord) -> bytes:
    return msgspec.json.format(msgspec.json.encode(record)) + b"\n"


def store_score(store: Store, record: ScoreRecord) -> None:
    store.record_action(
        record.key,
        kind="score",
        output=store.put_blob(msgspec.json.encode(record)),
        inputs={"unit": record.unit},
        meta={"scorer": record.scorer, "trace_id": record.trace_id, "arm": record.arm},
    )


def apply_scores(record: UnitRecord, scores: ScoreRecord) -> UnitRecord:
    """The unit as `scores` grades it (for the report only; never written anywhere)."""
    by_id = {s.probe_id: s for s in scores.probes}

    def graded(result: ProbeResult) -> ProbeResult:
        score = by_id.get(result.probe_id)
        if result.status != "valid" or score is None:
            return result
        return msgspec.structs.replace(
            result,
            outcome=score.outcome,
            correct=score.correct,
            score_reason=score.score_reason,
            availability=score.availability,
            loss=score.loss,
            decided_by=score.decided_by,
        )

    return msgspec.structs.replace(record, probes=[graded(p) for p in record.probes])


def load_unit_trace(
    store: Store, record: UnitRecord, where: Path, cache: dict[str, Trace]
) -> Trace:
    """The unit's trace from the store (read once per trace).

    Raises:
        AggregateError: ``trace_missing`` when the store no longer holds it.
    """
    if record.trace_key not in cache:
        stored = store.load_output(record.trace_key)
        if stored is None:
            raise AggregateError(
                f"trace {record.trace_id} ({record.trace_key[:16]}...) is not in the store "
                f"{store.root}; rebuild it with doit traces, then grade again",
                code="trace_missing",
                location=str(where),
            )
        cache[record.trace_key] = load_trace(stored, source=record.trace_id)
    return cache[record.trace_key]


class Scorer:
    """Which grades a report uses: ``original`` (the unit files') or ``current``
    (the current scorer's, from `doit score`'s artifacts or graded on the fly)."""

    def __init__(self, store: Store, run_dir: Path, choice: str = "current") -> None:
        if choice not in SCORER_CHOICES:
            raise UsageError(
                f"unknown scorer {choice!r}; use {' or '.join(SCORER_CHOICES)}",
                code="scorer_unknown",
                location="--scorer",
            )
        self.store = store
        self.run_dir = run_dir
        self.choice = choice
        self.digest = scorer_digest() if choice == "current" else None
        self._traces: dict[str, Trace] = {}

    @property
    def label(self) -> str:
        """What enters summary cache keys: the choice and the scorer's version."""
        return self.digest or "original"

    def describe(self) -> str:
        if self.digest is None:
            return (
                "original grades: the scorer as it was when each unit ran (the unit files' "
                "grades, never rewritten)"
            )
        return (
            f"current scorer {self.digest[:16]} (its score artifacts from doit score, or the "
            "same grading of the recorded answers where doit score has not run); "
            "--scorer original shows the grades recorded in the unit files"
        )

    def _artifact(self, path: Path, record: UnitRecord) -> ScoreRecord | None:
        """The unit's verified score artifact, or None when there is none for this unit
        and scorer (never written, or written for another version of the unit).

        Raises:
            AggregateError: ``score_tampered`` for an artifact that does not decode, whose
                content does not match its digest, or that differs from the store's copy.
        """
        assert self.digest is not None
        where = score_path(self.run_dir, self.digest, record)
        try:
            data = read_user_bytes(where, limit=DOCUMENT_MAX_BYTES, what="a score artifact")
        except OSError:
            return None
        try:
            scores = msgspec.json.decode(data, type=ScoreRecord)
        except msgspec.MsgspecError as exc:
            raise AggregateError(
                f"not a score record: {exc}", code="score_tampered", location=str(where)
            ) from None
        if _seal(scores).content_digest != scores.content_digest:
            raise AggregateError(
                "the score's content does not match its digest",
                code="score_tampered",
                location=str(where),
            )
        if scores.key != score_key(record.key, record.content_digest, self.digest):
            return None  # another unit version's grades: grade this one afresh
        stored = self.store.load_output(scores.key)
        if stored is not None and msgspec.json.decode(stored) != msgspec.to_builtins(scores):
            raise AggregateError(
                "the score differs from the store's copy of it",
                code="score_tampered",
                location=str(where),
            )
        return scores

    def grade(
        self, path: Path, record: UnitRecord
    ) -> tuple[UnitRecord, list[tuple[str, bool | None, str | None]]]:
        """The unit as this scorer grades it, and its original grades of valid probes as
        ``(probe_id, correct, outcome)`` (empty for ``original``)."""
        if self.digest is None:
            return record, []
        scores = self._artifact(path, record)
        if scores is None:
            trace = load_unit_trace(self.store, record, path, self._traces)
            scores = score_unit(record, trace, self.digest)
        original: list[tuple[str, bool | None, str | None]] = [
            (p.probe_id, p.correct, p.outcome) for p in record.probes if p.status == "valid"
        ]
        return apply_scores(record, scores), original


def _mean(values: Iterable[bool | None]) -> float | None:
    chosen = [bool(v) for v in values]
    return sum(chosen) / len(chosen) if chosen else None


Cell = tuple[str, str]  # (suite, arm)


def _compared(
    summaries: Iterable[UnitSummary],
) -> tuple[dict[Cell, list[tuple[bool | None, bool | None]]], dict[Cell, list[ChangedOutcome]]]:
    """Per suite and arm, the (original, current) correctness of every valid sample
    graded both ways, and every sample whose outcome changed."""
    rows: dict[Cell, list[tuple[bool | None, bool | None]]] = defaultdict(list)
    changed: dict[Cell, list[ChangedOutcome]] = defaultdict(list)
    for summary in summaries:
        cell = (summary.family, summary.arm)
        current = {r.probe_id: r for r in summary.rows if r.status == "valid"}
        for probe_id, correct, outcome in summary.original:
            row = current.get(probe_id)
            if row is None:
                continue
            rows[cell].append((correct, row.correct))
            if (outcome, bool(correct)) != (row.outcome, bool(row.correct)):
                changed[cell].append(
                    ChangedOutcome(
                        repeat=summary.repeat,
                        trace_id=summary.trace_id,
                        probe_id=probe_id,
                        original=outcome,
                        current=row.outcome,
                    )
                )
    return rows, changed


def scorer_section(summaries: Iterable[UnitSummary], scorer: Scorer) -> ScorerSection:
    """The report's scorer record: which grades produced the numbers and, for the
    current scorer, the change against the original grades per suite and arm
    (``changes[suite][arm]``: accuracy under both over the same valid samples, repeats
    pooled, never suites) with every probe whose outcome changed."""
    changes: dict[str, dict[str, ScorerChange]] = defaultdict(dict)
    if scorer.digest is not None:
        rows, changed = _compared(summaries)
        for (suite, arm), pairs in sorted(rows.items()):
            changes[suite][arm] = ScorerChange(
                n=len(pairs),
                original_accuracy=_mean(o for o, _ in pairs),
                current_accuracy=_mean(c for _, c in pairs),
                changed=sorted(
                    changed[(suite, arm)], key=lambda c: (c.repeat, c.trace_id, c.probe_id)
                ),
            )
    return ScorerSection(
        scorer=scorer.choice,
        digest=scorer.digest,
        description=scorer.describe(),
        changes=dict(changes),
    )
