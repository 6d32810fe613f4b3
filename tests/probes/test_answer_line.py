"""The answer line (`continuity.probes.answer_line`) and how the scorer reads it first,
with the free text as the fallback when a reply has none (issue 35)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.probes.answer_line import AnswerLine, read
from continuity.probes.scoring import score_answer
from continuity.traces.schema import (
    AbstentionExpectation,
    CommitmentStatusExpectation,
    Fact,
    NextActionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)

PARCEL = ToolIdentifierExpectation(
    answer=Fact(value="QTR-5521-KXW", evidence=("t4",)),
    superseded=(Fact(value="QTR-5521-KXV", evidence=("t2",)),),
)
FEE = SupersededCurrentExpectation(
    current=Fact(value="£640", evidence=("t6",)),
    superseded=(Fact(value="£580", evidence=("t3",)),),
)
LETTER = CommitmentStatusExpectation(
    subject=Fact(value="the complaint letter", evidence=("t5",)), status="SENT"
)
NEVER = AbstentionExpectation(never_mentioned=("locker code",))


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("It is the new one.\nANSWER: QTR-5521-KXW", AnswerLine("value", "QTR-5521-KXW")),
        ("**Answer:** QTR-5521-KXW", AnswerLine("value", "QTR-5521-KXW")),
        ("> answer : `£640`.", AnswerLine("value", "£640")),
        ("- ANSWER: SENT", AnswerLine("value", "SENT")),
        ("Answer: unknown", AnswerLine("unknown")),
        ("ANSWER: N/A", AnswerLine("unknown")),
        ("ANSWER: £580\n...no, wait.\nANSWER: £640", AnswerLine("conflict", "£580; £640")),
        ("ANSWER: £640\nAnswer: £640", AnswerLine("value", "£640")),
        ("The answer is £640.", AnswerLine("missing")),
        ("ANSWER:", AnswerLine("missing")),  # an empty line answers nothing
        ("My answer: it was sent.", AnswerLine("missing")),  # not a line of its own
    ],
)
def test_the_line_is_read_in_its_common_forms(reply: str, expected: AnswerLine) -> None:
    assert read(reply) == expected


@pytest.mark.parametrize(
    ("expectation", "reply", "outcome"),
    [
        # A wrong line decides, whatever the reasoning above it names; a right line
        # whose prose asserts another value is unsure (the old value here reads as
        # asserted: "replaced" is no supersession the polarity reader knows).
        (PARCEL, "The old one was QTR-5521-KXV, replaced.\nANSWER: QTR-5521-KXW", "unresolved"),
        (PARCEL, "It went from QTR-5521-KXV to QTR-5521-KXW.\nANSWER: QTR-5521-KXW", "correct"),
        (PARCEL, "It changed to QTR-5521-KXW.\nANSWER: QTR-5521-KXV", "stale"),
        (PARCEL, "ANSWER: UNKNOWN", "abstained"),
        (FEE, "ANSWER: £580\nANSWER: £640", "conflicted"),
        (LETTER, "I posted it on Monday.\nANSWER: SENT", "correct"),
        (LETTER, "ANSWER: DRAFTED", "fabricated"),
        (NEVER, "That never came up.\nANSWER: UNKNOWN", "correct"),
        (NEVER, "ANSWER: 4471", "fabricated"),
        (NEVER, "ANSWER: we never set one", "correct"),  # a decline in its own words
        (NEVER, "ANSWER: not the blue one", "unresolved"),  # denies, neither value nor UNKNOWN
    ],
)
def test_the_scorer_reads_the_line_first(expectation: object, reply: str, outcome: str) -> None:
    score = score_answer(expectation, reply)  # type: ignore[arg-type]
    assert score.outcome == outcome, score
    assert score.reason.startswith(("answer line", "answer lines disagree"))


@pytest.mark.parametrize(
    ("expectation", "reply", "outcome"),
    [
        (PARCEL, "Your parcel reference is QTR-5521-KXW.", "correct"),
        (FEE, "It went up from £580 to £640.", "correct"),
        (LETTER, "The complaint letter has been sent.", "correct"),
        (NEVER, "We never discussed a locker code.", "correct"),
        (PARCEL, "The courier has it.", "unresolved"),
    ],
)
def test_a_reply_without_the_line_scores_through_the_free_text(
    expectation: object, reply: str, outcome: str
) -> None:
    score = score_answer(expectation, reply)  # type: ignore[arg-type]
    assert score.outcome == outcome, score
    assert not score.reason.startswith("answer line")


def test_free_text_categories_ignore_the_line() -> None:
    """A next action is graded on the whole reply: its line adds nothing and hides
    nothing."""
    task = NextActionExpectation(
        keywords=(
            Fact(value="refund", evidence=("t2",)),
            Fact(value="Brightline", evidence=("t2",)),
        )
    )
    whole = "Chase the refund with Brightline.\nANSWER: UNKNOWN"
    assert score_answer(task, whole).outcome == "correct"


_PAD = st.text(alphabet="abcdefghij klmnop,.", max_size=60).map(lambda s: s.strip(" ,."))


@settings(derandomize=True, max_examples=60, deadline=None)
@given(body=_PAD, spelling=st.sampled_from(["ANSWER", "Answer", "answer", "**ANSWER**"]))
def test_the_expected_value_on_the_line_is_correct_whatever_precedes_it(
    body: str, spelling: str
) -> None:
    reply = f"{body}\n{spelling}: QTR-5521-KXW"
    assert score_answer(PARCEL, reply).outcome == "correct"
