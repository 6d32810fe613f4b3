"""What the aggregate keeps of one verified unit: a small, cacheable summary.

A unit record holds answers, evidence and receipts; the report needs a fraction of it.
`summarize` reduces a record to a `UnitSummary` (cached in the store by the unit file's
digest), so re-aggregating reads only the units that changed.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from continuity.agents.identity import AGENT_PROBE_PROTOCOL
from continuity.arms import ARMS
from continuity.messages import Usage
from continuity.probes import answer_line
from continuity.probes.protocol import PROBE_PROTOCOL, answer_form
from continuity.report.lookup import LookupRow, lookup_rows
from continuity.report.upkeep import UpkeepRow, upkeep_row
from continuity.runner.units.build import UnitRecord
from continuity.sampling.receipts import SampleEvidence

__all__ = [
    "LINE_PROTOCOLS",
    "PRESSURE_FIGURES",
    "AgentTally",
    "JudgeRow",
    "ProbeRow",
    "UnitSummary",
    "catalog_ref",
    "pressure_figures",
    "summarize",
]

# The figure each pressure rule checks (continuity.evidence._pressure), by rule field.
PRESSURE_FIGURES: dict[str, str] = {
    "probe_input_tokens": "provider-reported probe input tokens",
    "replayed_messages": "replayed text messages at the reseed",
    "dropped_records": "tool records dropped from the reseed projection",
    "compaction_tokens_before": "tokens before the probe's compaction",
    "mid_tokens_before": "tokens before the mid-trace compaction",
}


class ProbeRow(msgspec.Struct, frozen=True, array_like=True):
    probe_id: str
    category: str
    status: str
    correct: bool | None
    outcome: str | None
    fact: str | None
    superseded_present: bool | None
    loss: str | None
    history_called: bool
    # The figures the arm's pressure rule checks, as observed (absent when not observed).
    pressure: dict[str, int] = {}
    # Free recall: LoCoMo's token-F1 of the answer (None for any other category).
    token_f1: float | None = None
    # "judge" when the judge decided a sample the scorer left unresolved.
    decided_by: str | None = None
    # A value probe's answer line, by kind (`continuity.probes.answer_line.LineKind`:
    # value, unknown, conflict, missing); None for a free-text probe or without an answer.
    line: str | None = None

    @property
    def resolved(self) -> bool:
        """A valid sample with a right/wrong call (the scorer's, or the judge's where the
        scorer left it unresolved): the samples accuracy counts."""
        return self.status == "valid" and self.outcome != "unresolved" and self.correct is not None


class JudgeRow(msgspec.Struct, frozen=True, array_like=True):
    """One judge verdict beside the deterministic scorer's grade of the same answer."""

    probe_id: str
    category: str
    passed: bool
    scorer_correct: bool
    scorer_outcome: str | None
    judge_outcome: str | None
    reason: str
    # Kept only when the two disagree (the report lists each disagreement).
    answer: str | None


class AgentTally(msgspec.Struct, frozen=True):
    """An outside agent's unit: who (``adapter version, manifest digest``) and its
    samples' boundary verdicts and unproven copies (the report's banner counts them)."""

    label: str
    verdicts: dict[str, int]
    copies_unverified: int
    replay_failed: int = 0
    unsandboxed: int = 0  # samples run without the sandbox (--no-sandbox)
    not_from_model: int = 0  # samples whose reply was not the model's (excluded)
    declared: int = 0  # of those, by an adapter that declares post_processes


class UnitSummary(msgspec.Struct, frozen=True):
    """What the aggregate needs from one verified unit (cached by the file's digest)."""

    key: str
    repeat: int
    family: str
    trace_id: str
    arm: str
    rows: list[ProbeRow]
    usage: Usage
    compaction_usage: Usage
    judge: list[JudgeRow]
    # Real mode: every model call as (call key, catalog model, usage), judge included.
    calls: list[tuple[str, str, str, Usage]] = []
    live_turns: int = 0
    lookup_rows: list[LookupRow] = []
    probe_protocol: str = ""
    # Graded by a scorer other than the unit's own (continuity.report.scores): the unit
    # file's original grades of its valid probes, as (probe_id, correct, outcome).
    original: list[tuple[str, bool | None, str | None]] = []
    # The ledger arm: its preparation's upkeep, counted once per unit.
    upkeep: UpkeepRow | None = None
    # An outside agent's unit (continuity.runner.agent_units).
    agent: AgentTally | None = None
    # Real mode: the keys of calls whose server reported no usage (their tokens are
    # unknown, and count as zero in `usage`).
    unreported: list[str] = []


def _agent_tally(record: UnitRecord) -> AgentTally | None:
    if record.agent is UNSET:
        return None
    a = record.agent
    verdicts: dict[str, int] = {}
    for probe in record.probes:
        if probe.agent is not UNSET:
            verdicts[probe.agent.verdict] = verdicts.get(probe.agent.verdict, 0) + 1
    unproven = sum(1 for p in record.probes if p.status == "copy_unverified")
    failed = sum(1 for p in record.probes if p.status == "replay_failed")
    label = f"{a.adapter} {a.version} (manifest {a.manifest[:16]})"
    unsandboxed = len(record.probes) if a.sandbox == "none" else 0
    changed = [p for p in record.probes if p.status == "answer_not_from_model"]
    declared = sum(1 for p in changed if any("declares post_processes" in r for r in p.reasons))
    return AgentTally(label, verdicts, unproven, failed, unsandboxed, len(changed), declared)


def pressure_figures(arm_id: str, evidence: SampleEvidence | None) -> dict[str, int]:
    """The observed value of every figure the arm's pressure rule checks; a figure the
    sample never observed (no reseed, no compaction) is left out, not zero."""
    arm = ARMS.get(arm_id)
    if evidence is None or arm is None or arm.pressure is None:
        return {}
    e = evidence
    observed: dict[str, int | None] = {
        "probe_input_tokens": e.probe_input_tokens,
        "replayed_messages": e.reseed.text_messages if e.reseed else None,
        "dropped_records": e.reseed.dropped_records if e.reseed else None,
        "compaction_tokens_before": e.compaction.tokens_before if e.compaction else None,
        "mid_tokens_before": (
            e.mid_trace_compaction.tokens_before if e.mid_trace_compaction else None
        ),
    }
    rule = msgspec.structs.asdict(arm.pressure)
    return {
        name: value
        for name, value in observed.items()
        if rule.get(name) is not None and value is not None
    }


def _judge_rows(record: UnitRecord) -> list[JudgeRow]:
    valid = {p.probe_id: p for p in record.probes if p.status == "valid"}
    rows = []
    for verdict in record.judge:
        probe = valid.get(verdict.probe_id)
        if probe is None:  # an excluded sample is never graded, by either side
            continue
        if probe.correct is None or probe.decided_by is not UNSET:
            continue  # the scorer gave no verdict: the judge decided it, or nobody did
        scorer = bool(probe.correct)
        rows.append(
            JudgeRow(
                verdict.probe_id,
                probe.category,
                verdict.passed,
                scorer,
                probe.outcome,
                verdict.outcome,
                verdict.reason,
                probe.answer if scorer != verdict.passed else None,
            )
        )
    return rows


def catalog_ref(record: UnitRecord, role: str) -> str:
    """The catalog model a real unit's `role` endpoint bills as ("" offline, where an
    opted-in judge is bound by name only)."""
    part = (record.binding or {}).get(role)
    return str(part.get("ref", "")) if isinstance(part, dict) else ""


# The probe protocols that ask a value probe for an answer line (older readers were
# never asked for one, so their replies are not "missing" it).
LINE_PROTOCOLS = frozenset({PROBE_PROTOCOL, AGENT_PROBE_PROTOCOL})


def _line_kind(protocol: str, category: str, answer: str) -> str | None:
    """The kind of a value probe's answer line (None for a free-text probe, or a unit
    whose protocol never asked for the line)."""
    if protocol not in LINE_PROTOCOLS or answer_form(category) != "line":
        return None
    return answer_line.read(answer).kind


def summarize(record: UnitRecord) -> UnitSummary:
    """The summary of one verified unit record."""
    usage = Usage()
    compaction = Usage()
    rows = []
    for probe in record.probes:
        usage = usage + probe.usage
        compaction = compaction + probe.compaction_usage
        rows.append(
            ProbeRow(
                probe.probe_id,
                probe.category,
                probe.status,
                probe.correct,
                probe.outcome,
                probe.availability.fact if probe.availability else None,
                probe.availability.superseded_present if probe.availability else None,
                probe.loss,
                probe.history_calls > 0,
                pressure_figures(record.arm, probe.evidence),
                None if probe.token_f1 is UNSET else probe.token_f1,
                None if probe.decided_by is UNSET else probe.decided_by,
                _line_kind(record.probe_protocol, probe.category, probe.answer),
            )
        )
    # Real (d): the checkpoint's mid-trace summary is one call per unit (repeat), shared
    # by its probes, so its tokens count once, in the unit's compaction subtotal.
    for call in record.mid_trace_calls:
        compaction = compaction + call.usage
    reader_ref = catalog_ref(record, "reader")
    judge_ref = catalog_ref(record, "judge")
    calls: list[tuple[str, str, str, Usage]] = [
        (c.key, c.role, reader_ref, c.usage)
        for p in record.probes
        if p.evidence is not None
        for c in p.evidence.calls
    ]
    # An outside agent's probe calls, forwarded to the reader (continuity.agents.readers;
    # the switch arm's, after the switch, to the model it switched to: `billed_as`).
    calls += [
        (c.key, c.role, c.billed_as or reader_ref, c.usage)
        for p in record.probes
        if p.agent is not UNSET
        for c in p.agent.calls
    ]
    # Real (d): the checkpoint's mid-trace summary, once per unit (repeat).
    calls += [(c.key, c.role, reader_ref, c.usage) for c in record.mid_trace_calls]
    # The ledger arm: its preparation's extractions, once per unit, priced as the
    # extraction model.
    if record.upkeep is not UNSET:
        calls += [
            (c.key, "upkeep", record.upkeep.extractor, c.usage)
            for s in record.upkeep.stages
            for c in s.upkeep.calls
        ]
    calls += [(c.key, "judge", judge_ref, c.usage) for c in record.judge_calls]
    receipts = [
        *(c for p in record.probes if p.evidence is not None for c in p.evidence.calls),
        *record.mid_trace_calls,
        *record.judge_calls,
    ]
    return UnitSummary(
        record.key,
        record.repeat,
        record.family,
        record.trace_id,
        record.arm,
        rows,
        usage,
        compaction,
        _judge_rows(record),
        calls,
        len(record.probes),
        lookup_rows(record),
        record.probe_protocol,
        upkeep=upkeep_row(record),
        agent=_agent_tally(record),
        unreported=sorted({c.key for c in receipts if not c.usage_reported}),
    )
