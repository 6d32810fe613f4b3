"""Availability: where the answer-bearing values were after the boundary."""

from __future__ import annotations

from continuity.probes.availability import (
    LOOKUP_BYTES,
    LOOKUP_CALLS,
    Needles,
    NeedleState,
    availability,
)

TWO = Needles(["Harbor Vale", "pier 7"], [])


def test_in_context_needs_every_value() -> None:
    states = [NeedleState(True, None, 0, 0), NeedleState(True, None, 0, 0)]
    assert availability(TWO, states, []).fact == "in_context"
    states = [NeedleState(True, None, 0, 0), NeedleState(False, None, 0, 0)]
    assert availability(TWO, states, []).fact == "absent"  # no store offered


def test_the_values_not_in_context_share_one_lookup_budget() -> None:
    # Each value alone fits the 8-call budget, together they do not.
    five = NeedleState(False, True, 5, 10_000)
    assert 5 <= LOOKUP_CALLS < 10
    result = availability(TWO, [five, five], [])
    assert result.fact == "absent" and result.reference_calls == 10
    three = NeedleState(False, True, 3, 10_000)
    assert availability(TWO, [three, five], []).fact == "retrievable"
    # Bytes are shared the same way.
    big = NeedleState(False, True, 1, LOOKUP_BYTES // 2 + 1)
    assert availability(TWO, [big, big], []).fact == "absent"
    # A value already in context costs nothing from the budget.
    seen = NeedleState(True, True, 5, 10_000)
    result = availability(TWO, [seen, five], [])
    assert result.fact == "retrievable" and result.reference_calls == 5


def test_no_fact_values_is_not_applicable_but_stale_values_still_count() -> None:
    result = availability(Needles([], ["old"]), [], [NeedleState(True, None, 0, 0)])
    assert result.fact == "not_applicable" and result.superseded_present
