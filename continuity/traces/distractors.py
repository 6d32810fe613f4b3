"""Checks that a hard-distractors trace differs from its hard twin only in filler.

The generator produces both from the same choices; the distractor stream swaps some
whole filler units for labelled hypothetical units of the same length. This module
states that contract as a check: everything but the trace id, family and title is
identical, tool results keep their byte sizes, and the only differing characters lie
inside labelled units that carry none of the trace's answer-bearing values.
"""

from __future__ import annotations

from continuity.traces.bounds import estimate_tokens
from continuity.traces.categories import by_category
from continuity.traces.filler import DISTRACTOR_LABELS
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    FreeRecallExpectation,
    NextActionExpectation,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
    ToolResult,
    Trace,
)

__all__ = ["answer_values", "distractor_differences", "distractor_spans"]


def answer_values(trace: Trace) -> set[str]:
    """Every literal answer-bearing value the probes name."""
    return set().union(*(_answer_values(probe.expectation) for probe in trace.probes))


@by_category
def _answer_values(exp: Expectation) -> set[str]:
    """The literal answer-bearing values one expectation names."""
    raise NotImplementedError  # by_category: one handler per category below


@_answer_values.register(ToolIdentifierExpectation)
def _identifier_values(exp: ToolIdentifierExpectation) -> set[str]:
    return {exp.answer.value, *(f.value for f in exp.superseded)}


@_answer_values.register(SupersededCurrentExpectation)
def _current_values(exp: SupersededCurrentExpectation) -> set[str]:
    return {exp.current.value, *(f.value for f in exp.superseded)}


@_answer_values.register(RedactionExpectation)
def _secret_values(exp: RedactionExpectation) -> set[str]:
    return {exp.secret.value}


@_answer_values.register(ActiveConstraintExpectation)
def _constraint_values(exp: ActiveConstraintExpectation) -> set[str]:
    return {f.value for f in (*exp.required, *exp.forbidden)}


@_answer_values.register(CommitmentStatusExpectation)
@_answer_values.register(ArtifactStatusExpectation)
def _subject_values(exp: CommitmentStatusExpectation | ArtifactStatusExpectation) -> set[str]:
    return {exp.subject.value}


@_answer_values.register(NextActionExpectation)
def _keyword_values(exp: NextActionExpectation) -> set[str]:
    return {f.value for f in exp.keywords}


@_answer_values.register(AbstentionExpectation)
def _never_mentioned_values(exp: AbstentionExpectation) -> set[str]:
    return set(exp.never_mentioned)


@_answer_values.register(FreeRecallExpectation)
def _free_recall_values(exp: FreeRecallExpectation) -> set[str]:
    return set()  # a human-written answer, not a literal of the trace


def distractor_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every labelled distractor unit in `text`."""
    spans = []
    for label in DISTRACTOR_LABELS:
        start = text.find(label)
        while start >= 0:
            if start == 0 or text[start - 1] == "\n":
                end = text.find("\n", start)
                spans.append((start, len(text) if end < 0 else end))
            start = text.find(label, start + 1)
    return sorted(spans)


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    parts = []
    last = 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append("\x00" * (end - start))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def distractor_differences(hard: Trace, distractors: Trace) -> list[str]:
    """Problems with `distractors` as the distractor twin of `hard` (empty when sound)."""
    problems: list[str] = []
    if hard.family != "hard" or distractors.family != "hard-distractors":
        problems.append("families must be hard and hard-distractors")
    if hard.seed != distractors.seed or hard.scenario != distractors.scenario:
        problems.append("seed or scenario differs")
    if hard.probes != distractors.probes:
        problems.append("probes or expectations differ")
    if estimate_tokens(hard) != estimate_tokens(distractors):
        problems.append("estimated tokens differ")
    if len(hard.sessions) != len(distractors.sessions):
        return [*problems, "session count differs"]
    values = answer_values(hard)
    changed_units = 0
    for s_hard, s_dx in zip(hard.sessions, distractors.sessions, strict=True):
        if (s_hard.session_id, s_hard.date, len(s_hard.turns)) != (
            s_dx.session_id,
            s_dx.date,
            len(s_dx.turns),
        ):
            problems.append(f"session {s_hard.session_id} differs in id, date or turn count")
            continue
        for t_hard, t_dx in zip(s_hard.turns, s_dx.turns, strict=True):
            if not isinstance(t_hard, ToolResult) or not isinstance(t_dx, ToolResult):
                if t_hard != t_dx:
                    problems.append(f"turn {t_hard.turn_id} is not a tool result and differs")
                continue
            if (t_hard.turn_id, t_hard.call_id, t_hard.tool, t_hard.tool_kind) != (
                t_dx.turn_id,
                t_dx.call_id,
                t_dx.tool,
                t_dx.tool_kind,
            ):
                problems.append(f"record {t_hard.turn_id} changed identity")
                continue
            a, b = t_hard.output, t_dx.output
            if len(a.encode("utf-8")) != len(b.encode("utf-8")):
                problems.append(f"record {t_hard.turn_id} changed byte size")
                continue
            spans = distractor_spans(b)
            if _mask(a, spans) != _mask(b, spans):
                problems.append(f"record {t_hard.turn_id} changed outside labelled units")
            for start, end in spans:
                changed_units += 1
                problems.extend(
                    f"record {t_hard.turn_id}: a rewritten unit touches an answer value"
                    for value in values
                    if value in a[start:end] or value in b[start:end]
                )
    if changed_units == 0:
        problems.append("no filler unit was rewritten")
    return problems
