"""Free recall's outcomes through `score_answer`: matched items are correct, matched or
doubtful ones unresolved (neither right nor wrong), and the rest abstained or
fabricated. Answers are written for these tests."""

from __future__ import annotations

import pytest

from continuity.probes.scoring import score_answer
from continuity.traces.schema import FreeRecallExpectation


def _score(gold: str, answer: str) -> tuple[str, bool | None]:
    expectation = FreeRecallExpectation(answer=gold, evidence=("t2-04",), source_category=4)
    score = score_answer(expectation, answer)
    return score.outcome, score.correct


@pytest.mark.parametrize(
    ("gold", "answer", "outcome"),
    [
        ("darts", "Darts, every Thursday.", "correct"),
        ("every two weeks", "Fortnightly, I believe.", "correct"),
        # declines that offer no guess
        ("darts", "I don't think that ever came up.", "abstained"),
        ("darts", "Which league do you mean? Let me know.", "abstained"),
        ("Likely yes", "Hard to say from what was shared.", "abstained"),
        # guesses, denials and partial lists are answers
        ("darts", "It could be darts, snooker or bowling - I'm not certain.", "fabricated"),
        ("darts", "He never took up darts, he said it bored him.", "fabricated"),
        ("oboe, harp", "The oboe, and another one I can't remember.", "fabricated"),
        ("2028", "Either 2027 or 2028, I'm not sure which.", "fabricated"),
        # sure contradictions
        ("pottery class on Saturday", "A pottery class on Sunday.", "fabricated"),
        ("fortnightly", "Every week.", "fabricated"),
        # neither sure nor wrong
        ("pottery class on Saturday", "A painting class on Saturday.", "unresolved"),
        ("figs, walnuts", "Figs, walnuts and some quince paste.", "unresolved"),
        ("No; she is allergic to feathers", "No, because she hates mornings.", "unresolved"),
    ],
)
def test_free_recall_outcomes(gold: str, answer: str, outcome: str) -> None:
    got, correct = _score(gold, answer)
    assert got == outcome
    assert correct is (None if outcome == "unresolved" else outcome == "correct")
