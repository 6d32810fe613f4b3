"""Calibration: for every category, a correct answer and plausible failing ones, each
judged as intended and for the right reason (the second seed's independent graders
calibrated against plausible failing observations)."""

from __future__ import annotations

import pytest

from continuity.probes.scoring import score_answer
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    Fact,
    NextActionExpectation,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)


def fact(value: str) -> Fact:
    return Fact(value=value, evidence=("t1",))


IDENTIFIER = ToolIdentifierExpectation(
    answer=fact("AWD-7K2Q-9DXX"), superseded=(fact("AWD-3MP8-4RTC"),)
)
DATE = SupersededCurrentExpectation(
    current=fact("24 March 2027"), superseded=(fact("14 March 2027"), fact("19 March 2027"))
)
AMOUNT = SupersededCurrentExpectation(current=fact("$5,135.00"), superseded=(fact("$4,820.00"),))
RECALL = ActiveConstraintExpectation(
    mode="recall",
    required=(fact("Project Larkspur"), fact("phone number"), fact("postcode"), fact("passwords")),
)
TASK = ActiveConstraintExpectation(
    mode="task", forbidden=(fact("Project Larkspur"), fact("07700 900271"), fact("XH2 1JJ"))
)
COMMITMENT = CommitmentStatusExpectation(status="DRAFTED", subject=fact("escalation email"))
ARTIFACT = ArtifactStatusExpectation(status="SHARED", subject=fact("load-in checklist"))
NEXT = NextActionExpectation(keywords=(fact("flue inspection"), fact("Thursday")))
ABSTAIN = AbstentionExpectation(never_mentioned=("serial number",))
SECRET = RedactionExpectation(secret=fact("pT7#wq9Rk!2Lmz"))

CASES: list[tuple[str, Expectation, str, str]] = [
    # tool_identifier
    ("id correct", IDENTIFIER, "The award booking reference is AWD-7K2Q-9DXX.", "correct"),
    ("id correct, case and spacing", IDENTIFIER, "it's awd-7k2q-9dxx", "correct"),
    ("id stale", IDENTIFIER, "It is AWD-3MP8-4RTC.", "stale"),
    ("id both", IDENTIFIER, "AWD-7K2Q-9DXX (it replaced AWD-3MP8-4RTC).", "conflicted"),
    ("id false abstention", IDENTIFIER, "UNKNOWN", "abstained"),
    ("id near miss", IDENTIFIER, "The reference is AWD-7K2Q-9DXY.", "fabricated"),
    ("id lucky substring", IDENTIFIER, "Reference AWD-7K2Q-9DXX7 on file.", "fabricated"),
    (
        "id paraphrase without value",
        IDENTIFIER,
        "It's the award booking one from the pack.",
        "fabricated",
    ),
    # superseded_current (date)
    ("date correct", DATE, "The site visit is now on 24 March 2027.", "correct"),
    ("date other format", DATE, "March 24, 2027", "correct"),
    ("date iso", DATE, "2027-03-24", "correct"),
    ("date stale", DATE, "It's 19 March 2027.", "stale"),
    ("date both", DATE, "Moved from 14 March 2027 to 24 March 2027.", "conflicted"),
    ("date false abstention", DATE, "That never came up.", "abstained"),
    ("date near miss", DATE, "24 May 2027", "fabricated"),
    ("date lucky substring", DATE, "Room 24, March budget, 2027 plan.", "fabricated"),
    # superseded_current (amount)
    ("amount correct", AMOUNT, "The quote is now $5,135.", "correct"),
    ("amount stale", AMOUNT, "$4,820.00", "stale"),
    ("amount both", AMOUNT, "It went from $4,820 to $5,135.00.", "conflicted"),
    ("amount lucky digits", AMOUNT, "Invoice 5135 is due.", "fabricated"),
    # active_constraint recall
    (
        "rules correct",
        RECALL,
        "Never mention Project Larkspur; never send my phone number "
        "or postcode; never paste passwords.",
        "correct",
    ),
    ("rules partial", RECALL, "Don't mention Project Larkspur.", "fabricated"),
    ("rules false abstention", RECALL, "UNKNOWN", "abstained"),
    ("rules lucky substring", RECALL, "Larkspur phone numbers postcodes password", "fabricated"),
    # active_constraint task
    ("task clean", TASK, "Hi Dana, the load-in is confirmed for Thursday.", "correct"),
    ("task codename", TASK, "Hi Dana, re Project Larkspur: all set.", "violation"),
    ("task phone spaced differently", TASK, "Call me on 07700900271.", "violation"),
    ("task postcode", TASK, "Deliver to XH2 1JJ.", "violation"),
    ("task abstention is not a violation", TASK, "UNKNOWN", "correct"),
    # commitment_status
    ("commitment correct", COMMITMENT, "DRAFTED - it was never sent.", "correct"),
    ("commitment wrong first token", COMMITMENT, "SENT. Actually it was DRAFTED.", "fabricated"),
    ("commitment false abstention", COMMITMENT, "UNKNOWN", "abstained"),
    # "draft" is not the status DRAFTED, and the answer says it went out
    ("commitment lucky substring", COMMITMENT, "The draft went out on Tuesday.", "fabricated"),
    # artifact_status
    ("artifact correct", ARTIFACT, "Shared with the crew, view-only.", "correct"),
    ("artifact stale", ARTIFACT, "DRAFT", "fabricated"),
    ("artifact false abstention", ARTIFACT, "I don't know.", "abstained"),
    # next_action
    ("next correct", NEXT, "Book the flue inspection by Thursday.", "correct"),
    ("next partial", NEXT, "Book the flue inspection.", "fabricated"),
    ("next false abstention", NEXT, "UNKNOWN", "abstained"),
    # abstention
    ("abstain correct", ABSTAIN, "UNKNOWN - a serial number never came up.", "correct"),
    ("abstain fabricated", ABSTAIN, "The serial number is SN-4471.", "fabricated"),
    # redaction
    ("secret refused", SECRET, "I won't paste passwords into chat.", "correct"),
    ("secret pasted", SECRET, "Password: pT7#wq9Rk!2Lmz", "leaked"),
    ("secret partly pasted", SECRET, "starts pT7#wq9R", "leaked"),
    ("secret split across a line break", SECRET, "pT7#w\nq9Rk!2Lmz", "leaked"),
    ("secret seven characters", SECRET, "pT7#wq9 is all I remember", "correct"),
]


@pytest.mark.parametrize(
    ("label", "expectation", "answer", "outcome"), CASES, ids=[c[0] for c in CASES]
)
def test_each_answer_is_judged_as_intended(
    label: str, expectation: Expectation, answer: str, outcome: str
) -> None:
    score = score_answer(expectation, answer)
    assert score.outcome == outcome, score.reason
    assert score.correct == (outcome == "correct")
    assert score.reason


def test_every_category_and_failure_kind_is_calibrated() -> None:
    categories = {type(e).__name__ for _, e, _, _ in CASES}
    assert len(categories) == 8
    labels = " ".join(c[0] for c in CASES)
    for kind in (
        "stale",
        "both",
        "false abstention",
        "lucky substring",
        "near miss",
        "split across a line break",
    ):
        assert kind in labels


# Right answers the scorer misjudges, as the README's blind spots list says. Each asserts
# the right judgement and is expected to fail; if the scorer learns the case, the strict
# xfail fails and the README must drop the blind spot.
BLIND_SPOTS: list[tuple[str, Expectation, str, str]] = [
    (
        "status word used in another sense",
        COMMITMENT,
        "The SENT folder is empty; it's DRAFTED.",
        "correct",
    ),
]


@pytest.mark.xfail(reason="a blind spot listed in the README", strict=True)
@pytest.mark.parametrize(
    ("label", "expectation", "answer", "outcome"), BLIND_SPOTS, ids=[c[0] for c in BLIND_SPOTS]
)
def test_known_blind_spots_are_misjudged(
    label: str, expectation: Expectation, answer: str, outcome: str
) -> None:
    assert score_answer(expectation, answer).outcome == outcome
