"""The grammar that marks an earlier value as history: a change verb with an object and a
particle before "from" (``pushed it back from X``), ``Y, changed from X`` (Y is the new
value, X the old), and ``before`` closing a clause (``it was X before``). Fresh strings:
none is in a calibration suite."""

from __future__ import annotations

import pytest

from continuity.probes.scoring import score_answer
from continuity.traces.schema import SupersededCurrentExpectation
from tests.probes.facts import current

PICKUP = current("08:10", "07:40")
RENT = current("£2,310", "£2,180")


@pytest.mark.parametrize(
    ("expectation", "answer", "outcome"),
    [
        (PICKUP, "8.10am: the driver moved it forward from 07:40 yesterday.", "correct"),
        (PICKUP, "08:10. They pushed it back from 07:40 because of the roadworks.", "correct"),
        (PICKUP, "Pickup is 08:10, changed from 07:40 on Monday.", "correct"),
        (RENT, "£2,310 a month; it was £2,180 before.", "correct"),
        # "X changed" still makes X the old value; "before" as a preposition asserts
        (RENT, "£2,180 changed to £2,310 in March.", "correct"),
        (RENT, "£2,180 before the service charge, or £2,310.", "conflicted"),
        # "X moved/changed ... from" something that is not the new value: X is still past
        (PICKUP, "08:10 now; 07:40 moved back from Monday.", "correct"),
        (RENT, "£2,310 now; £2,180 was moved up from the deposit.", "correct"),
        (RENT, "£2,310; £2,180 changed last year from the old contract.", "correct"),
        # the old value alone, or both with nothing to settle them, as before
        (PICKUP, "It is 07:40.", "stale"),
        (PICKUP, "07:40 or 08:10, I think.", "conflicted"),
    ],
)
def test_history_is_read_from_the_grammar(
    expectation: SupersededCurrentExpectation, answer: str, outcome: str
) -> None:
    assert score_answer(expectation, answer).outcome == outcome
