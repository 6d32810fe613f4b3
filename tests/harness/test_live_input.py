"""Live input attribution."""

from __future__ import annotations

from continuity.harness.live_input import LiveInput


def test_only_an_exact_owner_binding_is_owner_input() -> None:
    live = LiveInput()
    live.in_flight_call = "c7"
    owner = live.offer("Hold off, just draft it.", owner_text="Hold off, just draft it.")
    anonymous = live.offer("Hold off, just draft it.")
    mismatched = live.offer("Hold off, just draft it!", owner_text="Hold off, just draft it.")
    assert [o.attribution for o in (owner, anonymous, mismatched)] == [
        "owner",
        "unknown",
        "unknown",
    ]
    assert owner.in_flight_call == "c7"
    assert live.drain() == [owner, anonymous, mismatched]
    assert live.drain() == [] and len(live.log) == 3
