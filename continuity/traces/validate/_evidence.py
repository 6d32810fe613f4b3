"""Probes and evidence: every expected value against the turns it names.

`check_probes` checks each probe's expectation by kind: facts name existing turns that
contain them verbatim, tool identifiers and secrets occur only in tool output, a
superseded value comes before the value replacing it, statuses are known, abstention
terms never occur, and no probe text gives an expected value away.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from continuity.traces.schema import (
    ARTIFACT_STATUSES,
    COMMITMENT_STATUSES,
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Fact,
    FreeRecallExpectation,
    NextActionExpectation,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
    ToolResult,
)
from continuity.traces.validate._context import Context
from continuity.traces.validate.codes import TraceCode

__all__ = ["check_probes"]


def _fact(ctx: Context, fact: Fact, path: str, *, tool_only: TraceCode | None = None) -> int | None:
    """Check one fact; return the conversation order of its first evidence."""
    if not fact.value.strip():
        ctx.add("trace_malformed", f"{path}.value", "empty value")
        return None
    if not fact.evidence:
        ctx.add("evidence_unknown", f"{path}.evidence", "a fact needs evidence ids")
        return None
    first: int | None = None
    for e_index, turn_id in enumerate(fact.evidence):
        located = ctx.turns.get(turn_id)
        e_path = f"{path}.evidence[{e_index}]"
        if located is None:
            ctx.add("evidence_unknown", e_path, f"no turn {turn_id!r}")
            continue
        if fact.value not in located.text:
            ctx.add(
                "evidence_mismatch",
                e_path,
                f"{fact.value[:60]!r} does not occur in turn {turn_id!r}",
            )
        if tool_only and not isinstance(located.turn, ToolResult):
            ctx.add(tool_only, e_path, f"evidence {turn_id!r} is not a tool result")
        first = located.order if first is None else min(first, located.order)
    return first


def check_probes(ctx: Context) -> None:
    non_tool = _non_tool_text(ctx)
    everything_lower = "\n".join(loc.text for loc in ctx.turns.values()).lower()
    probe_texts = [p.text.lower() for p in ctx.trace.probes]
    for p_index, probe in enumerate(ctx.trace.probes):
        path = f"$.probes[{p_index}].expectation"
        exp = probe.expectation
        leak_values: list[str] = []
        if isinstance(exp, ToolIdentifierExpectation):
            for sub, fact in [("answer", exp.answer)] + [
                (f"superseded[{i}]", f) for i, f in enumerate(exp.superseded)
            ]:
                _tool_only_fact(ctx, fact, f"{path}.{sub}", non_tool, "identifier")
                leak_values.append(fact.value)
            _superseded_order(ctx, exp.answer, exp.superseded, path)
        elif isinstance(exp, RedactionExpectation):
            _tool_only_fact(ctx, exp.secret, f"{path}.secret", non_tool, "secret")
            leak_values.append(exp.secret.value)
        elif isinstance(exp, SupersededCurrentExpectation):
            _fact(ctx, exp.current, f"{path}.current")
            for i, fact in enumerate(exp.superseded):
                _fact(ctx, fact, f"{path}.superseded[{i}]")
            if not exp.superseded:
                ctx.add("correction_missing", f"{path}.superseded", "nothing superseded")
            _superseded_order(ctx, exp.current, exp.superseded, path)
            leak_values += [exp.current.value, *(f.value for f in exp.superseded)]
        elif isinstance(exp, ActiveConstraintExpectation):
            facts = exp.required if exp.mode == "recall" else exp.forbidden
            if not facts:
                wanted = "required" if exp.mode == "recall" else "forbidden"
                ctx.add("trace_malformed", f"{path}.{wanted}", f"{exp.mode} needs {wanted}")
            for i, fact in enumerate(exp.required):
                _fact(ctx, fact, f"{path}.required[{i}]")
            for i, fact in enumerate(exp.forbidden):
                _fact(ctx, fact, f"{path}.forbidden[{i}]")
        elif isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
            allowed = (
                COMMITMENT_STATUSES
                if isinstance(exp, CommitmentStatusExpectation)
                else ARTIFACT_STATUSES
            )
            if exp.status not in allowed:
                ctx.add("trace_malformed", f"{path}.status", f"{exp.status!r} not in {allowed}")
            _fact(ctx, exp.subject, f"{path}.subject")
        elif isinstance(exp, NextActionExpectation):
            if not exp.keywords:
                ctx.add("trace_malformed", f"{path}.keywords", "no keywords")
            for i, fact in enumerate(exp.keywords):
                _fact(ctx, fact, f"{path}.keywords[{i}]")
        elif isinstance(exp, FreeRecallExpectation):
            _free_recall(ctx, exp, path, probe_texts[p_index], p_index)
        elif isinstance(exp, AbstentionExpectation):
            _abstention(ctx, exp, path, everything_lower)
        for value in leak_values:
            for q_index, text in enumerate(probe_texts):
                if value.lower() in text:
                    ctx.add(
                        "probe_leaks_answer",
                        f"$.probes[{q_index}].text",
                        f"probe text contains the expected value {value[:40]!r}",
                    )


def _abstention(ctx: Context, exp: AbstentionExpectation, path: str, everything: str) -> None:
    """Terms (or decoys) to decline on; a never-mentioned term must not occur anywhere."""
    if not exp.never_mentioned and not exp.decoys:
        ctx.add("trace_malformed", f"{path}.never_mentioned", "no terms or decoys")
    for i, decoy in enumerate(exp.decoys):
        if not decoy.strip():
            ctx.add("trace_malformed", f"{path}.decoys[{i}]", "empty decoy")
    for i, term in enumerate(exp.never_mentioned):
        if term.strip() and term.lower() in everything:
            ctx.add(
                "abstention_term_present",
                f"{path}.never_mentioned[{i}]",
                f"{term!r} does occur in the conversation",
            )


def _free_recall(
    ctx: Context, exp: FreeRecallExpectation, path: str, text: str, p_index: int
) -> None:
    """A human-written answer: not empty, with evidence naming existing turns (it need
    not occur verbatim there; LoCoMo's temporal answers resolve "yesterday"), and not
    stated by its own probe's text (each probe is asked alone in a fresh process, so
    only its own text can give a human-written answer away)."""
    if _answer_in(exp.answer, text):
        ctx.add(
            "probe_leaks_answer",
            f"$.probes[{p_index}].text",
            f"probe text contains its answer {exp.answer[:40]!r}",
        )
    if not exp.answer.strip():
        ctx.add("trace_malformed", f"{path}.answer", "empty answer")
    if not exp.evidence:
        ctx.add("evidence_unknown", f"{path}.evidence", "a free-recall answer needs evidence ids")
    for e_index, turn_id in enumerate(exp.evidence):
        if turn_id not in ctx.turns:
            ctx.add("evidence_unknown", f"{path}.evidence[{e_index}]", f"no turn {turn_id!r}")


_WORD = re.compile(r"\w+")


def _answer_in(answer: str, text: str) -> bool:
    """Whether a (lowercased) probe text states a human-written answer: its words in
    order as whole words (``yes`` is not given away by ``eyes``)."""
    words = _WORD.findall(answer.lower())
    if not words:
        return False
    pattern = r"\b" + r"\W+".join(re.escape(w) for w in words) + r"\b"
    return re.search(pattern, text) is not None


def _non_tool_text(ctx: Context) -> str:
    parts = [ctx.trace.title]
    parts += [loc.text for loc in ctx.turns.values() if not isinstance(loc.turn, ToolResult)]
    return "\n\x00".join(parts).lower()


_OUTSIDE: dict[str, TraceCode] = {
    "identifier": "identifier_outside_tool_output",
    "secret": "secret_outside_tool_output",
}


def _tool_only_fact(ctx: Context, fact: Fact, path: str, non_tool: str, what: str) -> None:
    code = _OUTSIDE[what]
    _fact(ctx, fact, path, tool_only=code)
    if fact.value.strip() and fact.value.lower() in non_tool:
        ctx.add(
            code,
            f"{path}.value",
            f"the {what} {fact.value[:40]!r} appears outside tool output",
        )


def _superseded_order(ctx: Context, current: Fact, superseded: Sequence[Fact], path: str) -> None:
    now = _first_order(ctx, current)
    for i, fact in enumerate(superseded):
        then = _first_order(ctx, fact)
        if now is not None and then is not None and then >= now:
            ctx.add(
                "placement_invalid",
                f"{path}.superseded[{i}]",
                "a superseded value must first occur before the value replacing it",
            )


def _first_order(ctx: Context, fact: Fact) -> int | None:
    orders = [ctx.turns[t].order for t in fact.evidence if t in ctx.turns]
    return min(orders) if orders else None
