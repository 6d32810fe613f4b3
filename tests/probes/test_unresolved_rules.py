"""Right when sure, silent when not: which answers the scorer leaves `unresolved`, and
which stay sure calls (issue 35, item 2). Every answer here is written fresh for this
file; none is in a calibration suite."""

from __future__ import annotations

import pytest

from continuity.probes.scoring import score_answer
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    Expectation,
    Fact,
    NextActionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)

BOOKING = ToolIdentifierExpectation(
    answer=Fact(value="MVR-2290-PLT", evidence=("t3",)),
    superseded=(Fact(value="MVR-2290-PLS", evidence=("t2",)),),
)
DEPOSIT = SupersededCurrentExpectation(
    current=Fact(value="€1,150", evidence=("t7",)),
    superseded=(Fact(value="€990", evidence=("t4",)),),
)
BROCHURE = ArtifactStatusExpectation(
    subject=Fact(value="the spring brochure", evidence=("t5",)), status="SHARED"
)
RULES = ActiveConstraintExpectation(
    mode="recall",
    required=(Fact(value="Odderby", evidence=("t1",)), Fact(value="£300", evidence=("t1",))),
)
VISIT = NextActionExpectation(
    keywords=(
        Fact(value="surveyor", evidence=("t9",)),
        Fact(value="Thursday 11 March", evidence=("t9",)),
    )
)
PET = AbstentionExpectation(never_mentioned=("pet",), decoys=("a grey lurcher",))

UNRESOLVED = [
    (BOOKING, "The one the agency emailed over last week."),  # no value, no decline
    (BOOKING, "C'est celle de l'agence, je crois."),  # another language
    (DEPOSIT, "Was it €1,150?"),  # the value only asked
    (DEPOSIT, "Mille cent cinquante."),  # a number the readers do not read
    (DEPOSIT, "Z$1,150."),  # an amount in a currency nobody issues
    (DEPOSIT, "It was €990 at first, now Z$1,150."),  # beside one that may be current
    (BROCHURE, "It went out to the whole mailing list on Friday."),  # a status in words
    (RULES, "Steer clear of the Odderby people and keep it under three hundred quid."),
    (VISIT, "Get the building inspector round later this week."),  # maybe a paraphrase
    (PET, "Tamsin never talked about a pet. The grey lurcher is her neighbour's."),
    (PET, "That never came up, though perhaps a cat."),  # a decline, then a hedge
    (PET, "That is outside what you told me."),  # a decline in unknown words
]

SURE = [
    (BOOKING, "It is MVR-2290-PLT.", "correct"),
    (BOOKING, "It is MVR-7781-QQA.", "fabricated"),  # another identifier
    (DEPOSIT, "The deposit is €1,250.", "fabricated"),  # another amount
    (DEPOSIT, "It's not €1,150.", "fabricated"),  # the value denied
    (DEPOSIT, "Which deposit do you mean?", "fabricated"),  # only asks back
    (BROCHURE, "It is still a DRAFT.", "fabricated"),
    (RULES, "Avoid Odderby and spend at most £350.", "fabricated"),  # another amount
    (VISIT, "Book the surveyor for Friday 12 March.", "fabricated"),  # another date
    (PET, "Tamsin has a grey lurcher.", "fabricated"),  # the decoy, no decline
    (PET, "I don't know; it never came up.", "correct"),
]


@pytest.mark.parametrize(("expectation", "answer"), UNRESOLVED)
def test_an_answer_the_rules_cannot_call_is_unresolved(
    expectation: Expectation, answer: str
) -> None:
    score = score_answer(expectation, answer)
    assert (score.outcome, score.correct) == ("unresolved", None), score


@pytest.mark.parametrize(("expectation", "answer", "outcome"), SURE)
def test_a_sure_call_stays_a_call(expectation: Expectation, answer: str, outcome: str) -> None:
    score = score_answer(expectation, answer)
    assert score.outcome == outcome, score
    assert score.correct == (outcome == "correct")
