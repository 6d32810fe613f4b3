"""A scored answer's outcome: the seven classes of the seed's category table, and
``unresolved`` for an answer the scorer cannot call right or wrong with confidence."""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

__all__ = ["OUTCOMES", "Outcome", "Score", "unresolved"]

Outcome = Literal[
    "correct",
    "stale",
    "conflicted",
    "abstained",
    "violation",
    "fabricated",
    "leaked",
    "unresolved",
]
OUTCOMES: tuple[str, ...] = get_args(Outcome)


class Score(msgspec.Struct, frozen=True):
    """One answer's outcome; `correct` is None exactly when the outcome is
    ``unresolved`` (neither right nor wrong: the judge decides, or nobody does)."""

    outcome: Outcome
    correct: bool | None
    reason: str


def unresolved(reason: str) -> Score:
    """No right/wrong call: the judge decides, or nobody does."""
    return Score("unresolved", None, reason)
