"""Test-side builders for probe expectations (one place, shared by the scorer tests)."""

from __future__ import annotations

from continuity.traces.schema import Fact

__all__ = ["fact"]


def fact(value: str) -> Fact:
    """A literal expected value with a placeholder evidence turn."""
    return Fact(value=value, evidence=("t1",))
