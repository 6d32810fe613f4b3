"""A scored answer's outcome: the seven classes of the seed's category table, and
``unresolved`` for an answer the scorer cannot call right or wrong with confidence."""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

__all__ = ["ASKED_BACK", "OUTCOMES", "Outcome", "Score", "unresolved"]

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


# An answer that only asks back (a question or a request, stating nothing) is a
# non-answer in every value and free-text category.
ASKED_BACK = Score("fabricated", False, "asked back instead of answering")


def unresolved(reason: str) -> Score:
    """No right/wrong call: the judge decides, or nobody does."""
    return Score("unresolved", None, reason)
