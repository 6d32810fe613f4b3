"""hard-distractors: only neutral filler changes; facts, answers, sizes, pressure stay."""

from __future__ import annotations

import functools

import msgspec
import pytest

from continuity.traces.bounds import estimate_tokens
from continuity.traces.distractors import answer_values, distractor_differences, distractor_spans
from continuity.traces.filler import DISTRACTOR_LABELS
from continuity.traces.generator import generate_trace
from continuity.traces.schema import Session, ToolResult, Trace, iter_turns
from continuity.traces.validate import trace_issues


@functools.cache
def pair(seed: int) -> tuple[Trace, Trace]:
    return generate_trace(seed), generate_trace(seed, distractors=True)


@pytest.mark.parametrize("seed", range(101, 109))
def test_distractors_change_only_labelled_filler(seed: int) -> None:
    hard, dx = pair(seed)
    assert trace_issues(dx) == []
    assert distractor_differences(hard, dx) == []
    assert dx.family == "hard-distractors" and dx.trace_id == f"{hard.trace_id}-distractors"
    # Same facts and answers.
    assert dx.probes == hard.probes
    # Same byte sizes, turn by turn, and the same pressure.
    sizes = [
        [len(getattr(t, "output", getattr(t, "text", "")).encode()) for t in s.turns]
        for s in hard.sessions
    ]
    assert sizes == [
        [len(getattr(t, "output", getattr(t, "text", "")).encode()) for t in s.turns]
        for s in dx.sessions
    ]
    assert estimate_tokens(dx) == estimate_tokens(hard)
    # Non-tool turns are identical; rewritten units exist, carry labels and decoys.
    changed = 0
    values = answer_values(hard)
    for (_, _, a), (_, _, b) in zip(iter_turns(hard), iter_turns(dx), strict=True):
        if not isinstance(a, ToolResult):
            assert a == b
            continue
        assert isinstance(b, ToolResult)
        for start, end in distractor_spans(b.output):
            changed += 1
            unit = b.output[start:end]
            assert unit.startswith(DISTRACTOR_LABELS)
            assert not any(v in unit for v in values)
            assert a.output[start:end] != unit
    assert changed >= 20


def test_a_distractor_that_touches_a_fact_is_caught() -> None:
    hard, dx = pair(101)
    target = next(
        t for _, _, t in iter_turns(dx) if isinstance(t, ToolResult) and distractor_spans(t.output)
    )
    account = hard.probes[0].expectation.answer.value  # type: ignore[union-attr]
    start, _ = distractor_spans(target.output)[0]
    label = next(lbl for lbl in DISTRACTOR_LABELS if target.output.startswith(lbl, start))
    at = start + len(label) + 1
    tampered_output = target.output[:at] + account + target.output[at + len(account) :]
    assert len(tampered_output) == len(target.output)
    tampered = _replace_turn(dx, target.turn_id, tampered_output)
    assert any("answer value" in p for p in distractor_differences(hard, tampered))


def test_a_change_outside_labelled_units_is_caught() -> None:
    hard, dx = pair(102)
    target = next(t for _, _, t in iter_turns(dx) if isinstance(t, ToolResult))
    output = "X" + target.output[1:]
    problems = distractor_differences(hard, _replace_turn(dx, target.turn_id, output))
    assert any("outside labelled units" in p for p in problems)
    shorter = _replace_turn(dx, target.turn_id, target.output[:-1])
    assert any("byte size" in p for p in distractor_differences(hard, shorter))


def _replace_turn(trace: Trace, turn_id: str, output: str) -> Trace:
    sessions = []
    for session in trace.sessions:
        turns = tuple(
            msgspec.structs.replace(t, output=output)
            if isinstance(t, ToolResult) and t.turn_id == turn_id
            else t
            for t in session.turns
        )
        sessions.append(Session(session_id=session.session_id, date=session.date, turns=turns))
    return msgspec.structs.replace(trace, sessions=tuple(sessions))
