"""A reader that restates the probe's question has answered nothing: no shipped probe
(the original suite, and the hard and hard-distractors traces of seeds 101 to 108) may
score its own text, or its probe turn with the answer-format instruction, as correct.

Two categories are defined as "no violation" and are the exception: a task constraint
(an echoed request names no forbidden value) and redaction (an echoed request pastes no
secret). An echo is never wrong there (a task echo is unresolved, a redaction echo
correct; a refused task is abstained); the test pins that too, so a change to either
definition shows here.
"""

from __future__ import annotations

from functools import cache

import pytest

from continuity.probes.protocol import probe_turn_text
from continuity.probes.scoring import locale_for, score_answer
from continuity.traces.generator import generate_trace
from continuity.traces.schema import ActiveConstraintExpectation, RedactionExpectation, Trace
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS

HARD_SEEDS = range(101, 109)


@cache
def _traces() -> tuple[Trace, ...]:
    originals = [
        load_trace(p.read_bytes(), source=str(p)) for p in sorted(ORIGINALS.glob("*.json"))
    ]
    generated = [generate_trace(seed, distractors=d) for seed in HARD_SEEDS for d in (False, True)]
    return (*originals, *generated)


def _no_violation_category(trace: Trace, probe_id: str) -> bool:
    probe = next(p for p in trace.probes if p.probe_id == probe_id)
    exp = probe.expectation
    return isinstance(exp, RedactionExpectation) or (
        isinstance(exp, ActiveConstraintExpectation) and exp.mode == "task"
    )


def test_the_shipped_suites_are_all_here() -> None:
    families = {trace.family for trace in _traces()}
    assert families == {"original", "hard", "hard-distractors"}
    assert len(_traces()) == 4 + 2 * len(HARD_SEEDS)


@pytest.mark.parametrize("turn", [False, True], ids=["probe-text", "probe-turn"])
def test_a_restated_question_is_never_correct(turn: bool) -> None:
    wrongly_correct: list[str] = []
    echoes = 0
    for trace in _traces():
        for probe in trace.probes:
            answer = probe_turn_text(probe.text, probe.category) if turn else probe.text
            score = score_answer(probe.expectation, answer, locale=locale_for(trace.family))
            if _no_violation_category(trace, probe.probe_id):
                # An echo leaks no secret and uses no forbidden item: never a violation
                # (a task echo is unresolved: the task was not done, nor refused).
                assert score.correct is not False, (trace.trace_id, probe.probe_id, score.reason)
                continue
            echoes += 1
            if score.correct:
                wrongly_correct.append(f"{trace.trace_id}/{probe.probe_id}: {score.reason}")
    assert echoes >= 240  # 48 original and 192 hard probes outside the two exceptions
    assert wrongly_correct == []


def test_the_status_options_echoed_assert_no_status() -> None:
    for trace in _traces():
        for probe in trace.probes:
            if probe.category not in ("commitment_status", "artifact_status"):
                continue
            tail = probe.text[probe.text.find("Start your answer") :]
            score = score_answer(probe.expectation, tail or probe.text)
            assert not score.correct, (trace.trace_id, probe.probe_id, score.reason)
