"""A value in a form the scorer cannot read is no sure invention when it carries every
number of the expected one (``Fr. 3400.-`` for CHF 3,400, ``4 Mär 2028`` for 4 March
2028): `unresolved`, never `fabricated`. A status word that denies or defers another
status says nothing sure of the expected one. Fresh strings: none is in a calibration
suite."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.probes.score_values import carries_numbers
from continuity.probes.scoring import score_answer
from continuity.traces.schema import (
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
)
from tests.probes.facts import current, fact

DEPOSIT = current("NOK 12,750", "NOK 11,900")
HEARING = current("17 October 2029", "3 October 2029")
INVOICE = CommitmentStatusExpectation(subject=fact("invoice to Pell & Rook"), status="DRAFTED")
INVOICE_SENT = CommitmentStatusExpectation(subject=fact("invoice to Pell & Rook"), status="SENT")
MENU = ArtifactStatusExpectation(subject=fact("tasting menu"), status="FINAL")


@pytest.mark.parametrize(
    ("expectation", "answer", "outcome"),
    [
        # the expected numbers in an unread rendering: no sure call
        (DEPOSIT, "Kr 12750,-", "unresolved"),
        (HEARING, "Am 17. Okt. 2029.", "unresolved"),
        (HEARING, "The hearing is 17 Okt 2029 now.", "unresolved"),
        # a number of the expected value missing: an invented value of another form
        (DEPOSIT, "Kr 12950,-", "fabricated"),
        (HEARING, "The hearing is 18 Okt 2029 now.", "fabricated"),
        # the numbers only inside values the scorer does read (a price, a time)
        (current("20:15", "19:00"), "Seats cost $20.15 each.", "fabricated"),
        # a status word denying or deferring another status
        (INVOICE, "Parked in my outbox folder until you approve it, not sent.", "unresolved"),
        (INVOICE_SENT, "It will be sent once you approve it.", "fabricated"),
        (INVOICE_SENT, "It hasn't been sent.", "fabricated"),
        # other statuses denied, or the expected one only asked: nothing sure of it
        (INVOICE, "Not sent and not cancelled, just sitting there.", "unresolved"),
        (MENU, "It is no longer a draft, and it's not archived.", "unresolved"),
        (INVOICE_SENT, "Has it been sent? Yes, it has.", "unresolved"),
        (INVOICE, "It could be drafted or sent by now, I can't say.", "abstained"),
        (MENU, "Could be final, could be shared.", "fabricated"),
    ],
)
def test_unread_forms_and_unasserted_statuses(
    expectation: Expectation, answer: str, outcome: str
) -> None:
    assert score_answer(expectation, answer).outcome == outcome


@given(
    amount=st.integers(min_value=100, max_value=9_999_999),
    other=st.integers(min_value=100, max_value=9_999_999),
    marker=st.sampled_from(["Kr", "Fr.", "Zł", "Rs.", "Sk"]),
    suffix=st.sampled_from(["", ",-", ".-", ".\u2013", " only"]),
)
def test_an_amount_in_an_unread_unit_is_never_read_as_another_value(
    amount: int, other: int, marker: str, suffix: str
) -> None:
    """Written with a marker the scorer may not read, the expected number is never a
    wrong answer, and another number is never a right one."""
    expectation = current(f"NOK {amount:,}", "NOK 1")
    same = score_answer(expectation, f"{marker} {amount}{suffix}").outcome
    assert same in ("correct", "unresolved")
    if other != amount:
        assert score_answer(expectation, f"{marker} {other}{suffix}").outcome != "correct"


def test_identifiers_are_never_matched_by_their_numbers() -> None:
    assert not carries_numbers("4471 and 2028", "PP-4471-2028")
    assert not carries_numbers("the 17th, 2030", "17 October 2029")
    assert carries_numbers("17 ... 2029", "17 October 2029")
