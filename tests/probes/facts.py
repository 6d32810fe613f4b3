"""Test-side builders for probe expectations (one place, shared by the scorer tests)."""

from __future__ import annotations

from continuity.traces.schema import Fact, SupersededCurrentExpectation

__all__ = ["current", "fact"]


def fact(value: str) -> Fact:
    """A literal expected value with a placeholder evidence turn."""
    return Fact(value=value, evidence=("t1",))


def current(value: str, *superseded: str) -> SupersededCurrentExpectation:
    """A superseded_current expectation: `value` now, each of `superseded` before."""
    return SupersededCurrentExpectation(
        current=fact(value), superseded=tuple(fact(old) for old in superseded)
    )
