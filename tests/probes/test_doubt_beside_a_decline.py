"""Right when sure, silent when not, beside a decline (issue 35): a decline that still
offers a candidate, a status asserted beside "the status is not known", and an action
offered as one of two. Every reply here is written fresh for these rules,
in wordings no calibration suite holds."""

from __future__ import annotations

import pytest

from continuity.probes.scoring import score_answer
from continuity.traces.schema import (
    AbstentionExpectation,
    CommitmentStatusExpectation,
    Fact,
    NextActionExpectation,
)

LOCKER = AbstentionExpectation(never_mentioned=("locker combination",))
INVOICE = CommitmentStatusExpectation(
    status="SENT", subject=Fact(value="invoice to Rowan Glass", evidence=("t4",))
)
NEXT = NextActionExpectation(
    keywords=(
        Fact(value="kiln survey", evidence=("t9",)),
        Fact(value="Monday", evidence=("t9",)),
    )
)


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        # a guess beside UNKNOWN: the line declines, the prose offers a value
        ("Nothing about a locker came up. Perhaps 0-4-7-2?\nANSWER: UNKNOWN", "unresolved"),
        ("I can't see one. Could it be 3318?\nANSWER: UNKNOWN", "unresolved"),
        ("We never discussed a locker.\nANSWER: UNKNOWN", "correct"),
        # a guess framed as a question after a decline, with no line
        ("I don't see it anywhere. Was it the Tuesday code, 5520?", "unresolved"),
        ("No sign of it, sorry. Was it Kestrel Storage that set it?", "unresolved"),
        # asking for help or naming another referent proposes no answer
        ("I don't have that. Want me to check with Imogen?", "correct"),
        # a code named with the thing asked, beside a decline: a decline with a value
        ("The locker combination (QX7R2205) was not shared with me, so I can't say.", "fabricated"),
        ("I can't find a locker combination anywhere in our chat.", "correct"),
    ],
)
def test_a_decline_that_offers_a_candidate_is_not_a_sure_abstention(
    reply: str, outcome: str
) -> None:
    assert score_answer(LOCKER, reply).outcome == outcome


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (
            "I can't tell what happened to it; the invoice was sent, I think, last week.",
            "unresolved",
        ),
        ("Its status isn't recorded anywhere. It went out as sent on the 3rd.", "unresolved"),
        # a negated status is a status statement, not a decline
        ("Sent on Friday; it's not sitting in drafts any more.", "correct"),
        ("It was sent to Rowan Glass on the 3rd.", "correct"),
    ],
)
def test_a_status_beside_a_decline_is_unresolved(reply: str, outcome: str) -> None:
    assert score_answer(INVOICE, reply).outcome == outcome


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("Either the kiln survey or the glaze order, both before Monday.", "unresolved"),
        (
            "Either way, the kiln survey or else the glaze order, by Monday: either will do.",
            "unresolved",
        ),
        ("Book the kiln survey, by Monday.", "correct"),
    ],
)
def test_an_action_among_alternatives_is_unresolved(reply: str, outcome: str) -> None:
    assert score_answer(NEXT, reply).outcome == outcome
