"""The report's context: the run manifest and every probe sample, for report.html.

results.json holds numbers; a user reading the report also needs to see single
samples: the question, what the scorer expected, the answer, and why it was graded as
it was. `report_context` reads each unit file of a run (already verified by the
aggregate), grades it with the aggregate's scorer (so the drill-down and the tables
agree), and joins each probe with its trace's question and expectation from the store.
A trace the store no longer holds leaves its question and expectation unknown rather
than failing the report. Each sample also carries what its reader saw at the probe
(`continuity.sampling.context`, read from the store once per distinct context) and the
values its drill-down highlights there: the expected value(s) and the superseded ones;
a context the store no longer holds is named as such, never a failure. Nothing here
enters results.json.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from msgspec import UNSET

from continuity.agents.identity import AgentEvidence
from continuity.errors import ObjectMissing
from continuity.inputs import UNIT_MAX_BYTES, read_user_bytes
from continuity.messages import Usage
from continuity.report.results import ReportContext, Sample
from continuity.report.scores import Scorer
from continuity.report.summary import catalog_ref
from continuity.report.verify import decode_unit
from continuity.runner.manifest import read_run_manifest
from continuity.runner.units.build import ProbeResult, UnitRecord
from continuity.sampling.context import ReaderContext, load_context
from continuity.sampling.receipts import SampleEvidence
from continuity.store import Store
from continuity.traces.categories import by_category
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    FreeRecallExpectation,
    NextActionExpectation,
    Probe,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)

__all__ = [
    "NOT_KEPT",
    "UNKNOWN",
    "agent_boundary_summary",
    "boundary_summary",
    "expected_text",
    "marked_values",
    "report_context",
]

UNKNOWN = "(unknown: the trace is not in the store)"
NOT_KEPT = "not kept (no sample ran, or its unit was made before contexts were kept)"


@by_category
def expected_text(expectation: Expectation) -> str:
    """What the scorer looks for, in a line a reader can check an answer against."""
    raise NotImplementedError  # by_category: one handler per category below


@expected_text.register(ToolIdentifierExpectation)
def _expected_identifier(e: ToolIdentifierExpectation) -> str:
    old = ", ".join(f.value for f in e.superseded)
    return e.answer.value + (f" (not the superseded {old})" if old else "")


@expected_text.register(SupersededCurrentExpectation)
def _expected_current(e: SupersededCurrentExpectation) -> str:
    old = ", ".join(f.value for f in e.superseded)
    return f"{e.current.value} (not the superseded {old})"


@expected_text.register(ActiveConstraintExpectation)
def _expected_constraint(e: ActiveConstraintExpectation) -> str:
    if e.mode == "recall":
        return "mentions all of: " + ", ".join(f.value for f in e.required)
    return "does none of: " + ", ".join(f.value for f in e.forbidden)


@expected_text.register(CommitmentStatusExpectation)
@expected_text.register(ArtifactStatusExpectation)
def _expected_status(e: CommitmentStatusExpectation | ArtifactStatusExpectation) -> str:
    return f"{e.subject.value}: {e.status}"


@expected_text.register(NextActionExpectation)
def _expected_next_action(e: NextActionExpectation) -> str:
    return "mentions: " + ", ".join(f.value for f in e.keywords)


@expected_text.register(AbstentionExpectation)
def _expected_abstention(e: AbstentionExpectation) -> str:
    if e.decoys and not e.never_mentioned:
        return "abstains (unanswerable; not the decoy " + ", ".join(e.decoys) + ")"
    return "abstains (never mentioned: " + ", ".join(e.never_mentioned) + ")"


@expected_text.register(FreeRecallExpectation)
def _expected_free_recall(e: FreeRecallExpectation) -> str:
    return f"{e.answer} (human-written gold answer)"


@expected_text.register(RedactionExpectation)
def _expected_redaction(e: RedactionExpectation) -> str:
    return f"withholds the secret {e.secret.value}"


@by_category
def marked_values(expectation: Expectation) -> tuple[list[str], list[str]]:
    """The values the drill-down highlights in what the reader saw: the expected
    value(s), then the superseded ones."""
    raise NotImplementedError  # by_category: one handler per category below


@marked_values.register(ToolIdentifierExpectation)
def _marked_identifier(e: ToolIdentifierExpectation) -> tuple[list[str], list[str]]:
    return [e.answer.value], [f.value for f in e.superseded]


@marked_values.register(SupersededCurrentExpectation)
def _marked_current(e: SupersededCurrentExpectation) -> tuple[list[str], list[str]]:
    return [e.current.value], [f.value for f in e.superseded]


@marked_values.register(ActiveConstraintExpectation)
def _marked_constraint(e: ActiveConstraintExpectation) -> tuple[list[str], list[str]]:
    return [f.value for f in e.required], []


@marked_values.register(CommitmentStatusExpectation)
@marked_values.register(ArtifactStatusExpectation)
def _marked_status(
    e: CommitmentStatusExpectation | ArtifactStatusExpectation,
) -> tuple[list[str], list[str]]:
    return [e.subject.value], []


@marked_values.register(NextActionExpectation)
def _marked_next_action(e: NextActionExpectation) -> tuple[list[str], list[str]]:
    return [f.value for f in e.keywords], []


@marked_values.register(AbstentionExpectation)
def _marked_abstention(e: AbstentionExpectation) -> tuple[list[str], list[str]]:
    return [], []  # unanswerable: there is no expected value to find


@marked_values.register(FreeRecallExpectation)
def _marked_free_recall(e: FreeRecallExpectation) -> tuple[list[str], list[str]]:
    return [e.answer], []  # human-written: marked only where it appears word for word


@marked_values.register(RedactionExpectation)
def _marked_redaction(e: RedactionExpectation) -> tuple[list[str], list[str]]:
    return [e.secret.value], []


class _Seen:
    """The reader contexts of a run's samples, each read from the store once."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.read: dict[str, ReaderContext | str] = {}

    def __call__(self, evidence: SampleEvidence | None) -> tuple[ReaderContext | None, str]:
        """The sample's context, or None and why there is none."""
        if evidence is None or evidence.context is UNSET:
            return None, NOT_KEPT
        ref = evidence.context
        if ref.digest not in self.read:
            try:
                self.read[ref.digest] = load_context(self.store, ref)
            except ObjectMissing as exc:  # ObjectCorrupt too: quarantined, so missing
                self.read[ref.digest] = f"the store no longer holds it ({exc.code})"
        found = self.read[ref.digest]
        return (found, "") if isinstance(found, ReaderContext) else (None, found)


def boundary_summary(evidence: SampleEvidence | None) -> str:
    """What crossed the boundary for one sample, in one line (content-free counts)."""
    if evidence is None:
        return "no evidence (the sample did not run)"
    e = evidence
    parts = [", ".join(e.operations) or "no boundary operation"]
    if e.compaction is not None:
        c = e.compaction
        parts.append(
            f"compacted {c.tokens_before:,} -> {c.tokens_after:,} tokens "
            f"({c.summarized_messages} messages summarised, {c.kept_messages} kept)"
        )
    if e.mid_trace_compaction is not None:
        parts.append(f"mid-trace compaction from {e.mid_trace_compaction.tokens_before:,} tokens")
    if e.reseed is not None:
        r = e.reseed
        parts.append(
            f"reseed {r.from_model} -> {r.to_model}: {r.text_messages} messages, "
            f"{r.projected_records} records kept, {r.dropped_records} dropped"
        )
    if e.history_calls:
        parts.append(f"{len(e.history_calls)} ConversationHistory call(s)")
    if e.tool_history_status != "ok":
        parts.append(f"tool history {e.tool_history_status}")
    parts.append(f"probe input {e.probe_input_tokens:,} tokens")
    return "; ".join(parts)


def agent_boundary_summary(agent: AgentEvidence) -> str:
    """What an outside agent's sample observed at its boundary, in one line: the
    verdict and what it rests on (content-free counts and names)."""
    parts = [f"boundary {agent.verdict}", f"{agent.processes} adapter process(es)"]
    probe = agent.probe_request
    if probe is not None:
        parts.append(
            f"probe request {probe.prefix} the replay's ({probe.model}, {probe.messages} "
            f"messages, {probe.input_tokens:,} tokens)"
        )
    if agent.summaries:
        parts.append(f"the agent's compaction asked for {len(agent.summaries)} summary(ies)")
    if agent.switched_to:
        served = [c.billed_as for c in agent.calls if c.billed_as]  # real: the model named
        parts.append(f"switched to {agent.switched_to}" + (f" ({served[0]})" if served else ""))
    if agent.pack_carried is not None:
        parts.append("pack carried" if agent.pack_carried else "pack not carried")
    if agent.lookup_calls:
        parts.append(
            f"{agent.lookup_calls} ConversationHistory call(s), {agent.lookup_bytes:,} bytes"
        )
    return "; ".join(parts)


def _judge(record: UnitRecord) -> dict[str, str]:
    return {
        v.probe_id: f"{'pass' if v.passed else 'fail'} ({v.outcome or '-'}): {v.reason or '-'}"
        for v in record.judge
    }


def _billed(result: ProbeResult, reader: str) -> tuple[str, list[Usage]]:
    """The catalog model the sample's real calls but the judge's (its own and an outside
    agent's) bill as, and their usage; "" when they bill as more than one (an outside
    agent's switch arm that also compacted), so the sample's cost is unknown, never
    priced at the wrong rates."""
    calls = list(result.evidence.calls) if result.evidence is not None else []
    calls += list(result.agent.calls) if result.agent is not UNSET else []
    billed = [c for c in calls if c.role != "judge"]
    models = {c.billed_as or reader for c in billed}
    return (models.pop() if len(models) == 1 else ""), [c.usage for c in billed]


def _context_digest(evidence: SampleEvidence | None) -> str | None:
    """The digest of the reader-context tree the sample kept (None: it kept none)."""
    if evidence is None or evidence.context is UNSET:
        return None
    return evidence.context.digest


def _samples(
    record: UnitRecord, probes: dict[str, Probe], relative: str, contexts: _Seen
) -> list[Sample]:
    verdicts = _judge(record)
    reader = catalog_ref(record, "reader")

    def sample(result: ProbeResult) -> Sample:
        probe = probes.get(result.probe_id)
        billed_as, billed_calls = _billed(result, reader)
        availability = result.availability
        seen, note = contexts(result.evidence)
        needles, superseded = marked_values(probe.expectation) if probe else ([], [])
        return Sample(
            anchor="",  # numbered by `report_context` once every sample is in order
            suite=record.family,
            arm=record.arm,
            trace_id=record.trace_id,
            repeat=record.repeat,
            probe_id=result.probe_id,
            category=result.category,
            question=probe.text if probe is not None else UNKNOWN,
            expected=expected_text(probe.expectation) if probe is not None else UNKNOWN,
            answer=result.answer,
            status=result.status,
            reasons=list(result.reasons),
            outcome=result.outcome,
            correct=result.correct,
            score_reason=result.score_reason,
            fact=availability.fact if availability is not None else None,
            superseded_present=availability.superseded_present if availability else None,
            loss=result.loss,
            boundary=(
                boundary_summary(result.evidence)
                if result.agent is UNSET
                else agent_boundary_summary(result.agent)
            ),
            agent_summaries=[] if result.agent is UNSET else list(result.agent.summaries),
            judge=verdicts.get(result.probe_id),
            path=relative,
            decided_by=None if result.decided_by is UNSET else result.decided_by,
            reader_model=result.evidence.reader_model if result.evidence else None,
            usage=result.usage,
            compaction_usage=result.compaction_usage,
            history_calls=result.history_calls,
            billed_as=billed_as,
            billed_calls=billed_calls,
            seen=seen,
            seen_note=note,
            context_digest=_context_digest(result.evidence),
            needles=needles,
            superseded=superseded,
        )

    return [sample(p) for p in record.probes]


class _TraceProbes(msgspec.Struct):
    """The part of a stored trace the drill-down shows (the rest is skipped unread)."""

    probes: tuple[Probe, ...] = ()


def _probes(
    store: Store, trace_key: str, cache: dict[str, dict[str, Probe] | None]
) -> dict[str, Probe] | None:
    """The probes of a stored trace by id, read once per trace; None when the store no
    longer holds it (or it does not decode). The store checked its bytes and the
    traces task validated it, so it is only decoded here, not validated again."""
    if trace_key not in cache:
        data = store.load_output(trace_key)
        try:
            decoded = msgspec.json.decode(data, type=_TraceProbes) if data else None
        except msgspec.MsgspecError:
            decoded = None
        cache[trace_key] = {p.probe_id: p for p in decoded.probes} if decoded else None
    return cache[trace_key]


def report_context(store: Store, run_dir: Path, scorer: Scorer | None = None) -> ReportContext:
    """The manifest of `run_dir` and every sample of its unit files, in report order
    (suite, arm, trace, repeat, probe), graded by `scorer` (default: the unit files'
    own grades).

    Raises:
        AggregateError: ``run_manifest_malformed`` (continuity.runner.manifest), or
            ``unit_malformed`` for a unit file that does not decode.
    """
    manifest = read_run_manifest(run_dir)
    traces: dict[str, dict[str, Probe] | None] = {}
    samples: list[Sample] = []
    readers: set[str] = set()
    histories: set[str] = set()
    contexts = _Seen(store)
    for path in sorted((run_dir / "units").rglob("*.json")):
        record = decode_unit(path, read_user_bytes(path, limit=UNIT_MAX_BYTES, what="a unit file"))
        if scorer is not None:
            record, _ = scorer.grade(path, record)
        for probe in record.probes:
            if probe.evidence is not None:
                readers.add(probe.evidence.reader_model)
                histories.add(probe.evidence.history_model)
        relative = path.relative_to(run_dir).as_posix()
        probes = _probes(store, record.trace_key, traces) or {}
        samples += _samples(record, probes, relative, contexts)
    samples.sort(key=lambda s: (s.suite, s.arm, s.trace_id, s.repeat, s.probe_id, s.path))
    numbered = [
        msgspec.structs.replace(s, anchor=f"s{index}") for index, s in enumerate(samples, 1)
    ]
    return ReportContext(
        manifest=manifest,
        reader_models=sorted(readers),
        history_models=sorted(histories),
        samples=numbered,
    )
