"""Two places where a hard rule used to fire on the wrong reading (issue 35, from
holdout-v4's blind measurement): an answer line its own prose contradicts, and a task
reply that merely lacks the forbidden item. Both are now unresolved, never a sure
"correct". The examples are fresh; none is taken from a calibration suite."""

from __future__ import annotations

import pytest

from continuity.probes.answer_line import AnswerLine, prose, read
from continuity.probes.scoring import score_answer
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    Fact,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)

REF = ToolIdentifierExpectation(
    answer=Fact(value="WQ-30917", evidence=("t9",)),
    superseded=(Fact(value="WQ-30544", evidence=("t4",)),),
)
FEE = SupersededCurrentExpectation(
    current=Fact(value="€1,240", evidence=("t8",)),
    superseded=(Fact(value="€1,180", evidence=("t3",)),),
)
NEVER = AbstentionExpectation(never_mentioned=("the locker code",))
PLAN = ArtifactStatusExpectation(
    status="FINAL", subject=Fact(value="seating plan", evidence=("t5",))
)
TASK = ActiveConstraintExpectation(
    mode="task", forbidden=(Fact(value="Halvorsen Catering", evidence=("t2",)),)
)


def test_prose_is_the_reply_without_its_answer_lines() -> None:
    assert prose("It moved.\n**Answer:** WQ-30917\nThanks") == "It moved.\nThanks"
    assert prose("ANSWER: UNKNOWN") == ""
    # The instruction's placeholder echoed back is no answer line (nor a conflict).
    assert read("ANSWER: <value>\nANSWER: WQ-30917") == AnswerLine("value", "WQ-30917")
    assert read("ANSWER: <value>").kind == "missing"


@pytest.mark.parametrize(
    ("expectation", "reply"),
    [
        (REF, "Use the first reference they sent, WQ-30544.\nANSWER: WQ-30917"),
        (FEE, "The fee is €1,180 as far as I know.\nANSWER: €1,240"),
        (NEVER, "No code was shared, but it is probably 4471.\nANSWER: UNKNOWN"),
        (PLAN, "The seating plan is still a draft.\nANSWER: FINAL"),
    ],
)
def test_a_right_line_its_prose_contradicts_is_unresolved(expectation: object, reply: str) -> None:
    score = score_answer(expectation, reply)  # type: ignore[arg-type]
    assert (score.outcome, score.correct) == ("unresolved", None), score.reason
    assert "prose" in score.reason


@pytest.mark.parametrize(
    ("expectation", "reply"),
    [
        (REF, "They reissued it on Tuesday.\nANSWER: WQ-30917"),
        (FEE, "The fee went up from €1,180 to €1,240.\nANSWER: €1,240"),
        (NEVER, "That never came up between us.\nANSWER: UNKNOWN"),
        (PLAN, "ANSWER: FINAL"),
    ],
)
def test_a_right_line_with_agreeing_or_silent_prose_stays_correct(
    expectation: object, reply: str
) -> None:
    assert score_answer(expectation, reply).outcome == "correct"  # type: ignore[arg-type]


def test_a_wrong_line_stays_a_sure_miss_whatever_the_prose() -> None:
    assert score_answer(REF, "It is WQ-30917.\nANSWER: WQ-30544").outcome == "stale"


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("Hi Pia, the lunch order is with Halvorsen Catering again. Best, Ro", "violation"),
        # A refusal violates nothing, but does not do the task: it keeps no rule.
        ("UNKNOWN", "abstained"),
        ("I don't have the details for that message, sorry.", "abstained"),
        ("Hi Pia, lunch is sorted with the usual caterer. Best, Ro", "unresolved"),
        ("Hi Pia, see you Friday. Best, Ro", "unresolved"),
        # A decline in one clause of a draft is not a refusal of the task.
        ("Hi Pia, I'm not sure the caterer is free, but lunch is booked. Ro", "unresolved"),
    ],
)
def test_a_task_reply_without_the_forbidden_item_is_not_surely_correct(
    reply: str, outcome: str
) -> None:
    assert score_answer(TASK, reply).outcome == outcome
