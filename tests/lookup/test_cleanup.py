"""The 60 s cleanup allowance of a lookup probe (`bounded_cleanup`)."""

from __future__ import annotations

import time

import anyio
import pytest

from continuity.errors import HarnessError
from continuity.lookup.probe import bounded_cleanup


def _run(
    seconds: float | None,
    clock_ticks: list[float],
    body_fails: bool,
    events: list[str] | None = None,
) -> list[str]:
    """Run a body inside `bounded_cleanup`; return what happened, in order."""
    events = [] if events is None else events
    ticks = iter(clock_ticks)

    async def closer() -> None:
        events.append("closed")

    async def main() -> None:
        async with bounded_cleanup(
            seconds,
            lambda: next(ticks, clock_ticks[-1]),
            lambda: events.append("witness"),
            location="native-lookup",
        ) as stack:
            stack.push_async_callback(closer)
            events.append("body")
            if body_fails:
                raise ValueError("the probe's own failure")

    anyio.run(main)
    return events


def test_a_cleanup_inside_the_allowance_closes_everything() -> None:
    assert _run(60.0, [0.0, 59.0], False) == ["body", "closed"]


def test_a_cleanup_past_the_allowance_on_the_fake_clock_fails_with_its_code() -> None:
    started = time.monotonic()
    events: list[str] = []
    with pytest.raises(HarnessError) as caught:
        _run(60.0, [0.0, 61.0], False, events)
    assert caught.value.code == "lookup_cleanup_timeout"
    assert caught.value.location == "native-lookup"
    assert time.monotonic() - started < 5  # the fake clock: no waiting
    # Everything was closed, then the witness written, then the probe failed.
    assert events == ["body", "closed", "witness"]


def test_a_hung_cleanup_is_cut_off_by_the_event_loop_timer() -> None:
    # A close that never returns: the shielded timer ends it (a tiny allowance, so the
    # test does not wait) and the witness is written before the error.
    events: list[str] = []
    ticks = iter([0.0, 0.0])

    async def main() -> None:
        async with bounded_cleanup(
            0.05, lambda: next(ticks, 0.0), lambda: events.append("witness")
        ) as stack:
            stack.push_async_callback(anyio.sleep_forever)

    started = time.monotonic()
    with pytest.raises(HarnessError) as caught:
        anyio.run(main)
    assert caught.value.code == "lookup_cleanup_timeout"
    assert events == ["witness"]
    assert time.monotonic() - started < 5


def test_the_bodys_own_failure_wins_over_a_slow_cleanup() -> None:
    events: list[str] = []
    with pytest.raises(ValueError, match="own failure"):
        _run(60.0, [0.0, 61.0], True, events)
    assert events == ["body", "closed"]  # closed, no cleanup error over the real one


def test_recall_only_cleanup_is_unbounded() -> None:
    assert _run(None, [0.0, 10_000.0], False) == ["body", "closed"]
