"""Availability analysis: was the answer still there, and where was it lost?

For every probe and arm, the evaluator decides from the reader's actual post-boundary
context and the retained store whether the answer-bearing fact is

- ``in_context``: every answer-bearing value is in the reader's first probe request;
- ``retrievable``: not all in context, but each missing value is found through
  ConversationHistory within the lookup budget (8 calls, 126,976 bytes) by the
  evaluator's reference path: one search for the value at limit 10, then every 8 KiB
  get page of each hit until the value is seen (store and pack arms only);
- ``absent``: neither.

It also records whether a superseded value is in context. With the score, a miss is
labelled ``lost_at_boundary`` (absent), ``lost_at_retrieval`` (retrievable but not in
context) or ``present_but_missed`` (in context). Categories whose correct answer does not
need the fact (abstention, redaction, task constraints) are ``not_applicable``. This
needs no model, so it is meaningful offline.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.memory.retained import HistoryError, RetainedStore
from continuity.probes.scoring import Score
from continuity.traces.schema import (
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    NextActionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
)

__all__ = [
    "AVAILABILITY_COLUMNS",
    "LOOKUP_BYTES",
    "LOOKUP_CALLS",
    "Availability",
    "NeedleState",
    "Needles",
    "availability",
    "loss",
    "needles_for",
    "reference_lookup",
]

LOOKUP_CALLS = 8
LOOKUP_BYTES = 126_976
# The availability table's columns: fact states, then superseded presence, then losses.
AVAILABILITY_COLUMNS: tuple[str, ...] = (
    "in_context",
    "retrievable",
    "absent",
    "not_applicable",
    "superseded_present",
    "lost_at_boundary",
    "lost_at_retrieval",
    "present_but_missed",
)
Fact = Literal["in_context", "retrievable", "absent", "not_applicable"]
Loss = Literal["lost_at_boundary", "lost_at_retrieval", "present_but_missed"]


class Needles(msgspec.Struct, frozen=True):
    """The values whose presence decides availability (evaluator-side only)."""

    fact: list[str]
    superseded: list[str]


class NeedleState(msgspec.Struct, frozen=True):
    """What the probe child found for one needle, content-free."""

    in_context: bool
    retrievable: bool | None  # None: no retained store offered in this arm
    calls: int = 0
    bytes: int = 0


class Availability(msgspec.Struct, frozen=True):
    fact: Fact
    superseded_present: bool
    reference_calls: int
    reference_bytes: int


def needles_for(expectation: Expectation) -> Needles:
    exp = expectation
    if isinstance(exp, ToolIdentifierExpectation):
        return Needles([exp.answer.value], [f.value for f in exp.superseded])
    if isinstance(exp, SupersededCurrentExpectation):
        return Needles([exp.current.value], [f.value for f in exp.superseded])
    if isinstance(exp, ActiveConstraintExpectation) and exp.mode == "recall":
        return Needles([f.value for f in exp.required], [])
    if isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
        return Needles([exp.subject.value], [])
    if isinstance(exp, NextActionExpectation):
        return Needles([f.value for f in exp.keywords], [])
    return Needles([], [])  # abstention, redaction and task constraints


def reference_lookup(
    store: RetainedStore, value: str, *, calls: int = LOOKUP_CALLS, budget_bytes: int = LOOKUP_BYTES
) -> NeedleState:
    """The evaluator's reference path for one value, charged like a reader's calls."""
    used_calls = used_bytes = 0

    def charge(payload: msgspec.Struct) -> bool:
        nonlocal used_calls, used_bytes
        used_calls += 1
        used_bytes += len(msgspec.json.encode(payload))
        return used_calls <= calls and used_bytes <= budget_bytes

    try:
        page = store.search(value, limit=10)
    except HistoryError:
        return NeedleState(False, False, 1, 0)
    if not charge(page):
        return NeedleState(False, False, used_calls, used_bytes)
    for hit in page.hits:
        seen = ""
        cursor: str | None = None
        while True:
            if used_calls >= calls:
                return NeedleState(False, False, used_calls, used_bytes)
            record = store.get(hit.packed_id, cursor=cursor)
            if not charge(record):
                return NeedleState(False, False, used_calls, used_bytes)
            seen += record.text
            if value in seen:
                return NeedleState(False, True, used_calls, used_bytes)
            seen = seen[-len(value) :]  # a value may straddle two pages
            cursor = record.next_cursor
            if cursor is None:
                break
    return NeedleState(False, False, used_calls, used_bytes)


def availability(
    needles: Needles, fact_states: list[NeedleState], superseded_states: list[NeedleState]
) -> Availability:
    if not needles.fact:
        return Availability("not_applicable", any(s.in_context for s in superseded_states), 0, 0)
    in_context = all(s.in_context for s in fact_states)
    # The values not in context must all be found within ONE lookup budget: a
    # multi-value probe does not get a fresh budget per value.
    missing = [s for s in fact_states if not s.in_context]
    used_calls = sum(s.calls for s in missing)
    used_bytes = sum(s.bytes for s in missing)
    reachable = (
        all(s.retrievable for s in missing)
        and used_calls <= LOOKUP_CALLS
        and used_bytes <= LOOKUP_BYTES
    )
    fact: Fact = "in_context" if in_context else "retrievable" if reachable else "absent"
    return Availability(
        fact=fact,
        superseded_present=any(s.in_context for s in superseded_states),
        reference_calls=used_calls,
        reference_bytes=used_bytes,
    )


def loss(available: Availability, score: Score) -> Loss | None:
    """Where a miss was lost; None for a correct answer or a fact that does not apply."""
    if score.correct or available.fact == "not_applicable":
        return None
    if available.fact == "absent":
        return "lost_at_boundary"
    if available.fact == "retrievable":
        return "lost_at_retrieval"
    return "present_but_missed"
