"""The fixed-budget slot classifier: a holdout slot's class from its recorded metrics.

A fixed-budget sizing (``doit lookup_budget --fixed-budget-sha256``) never derives a
budget: it takes the calls and bytes of a frozen policy, ten rounds and the unchanged
deadlines, and asks of every role x selected conversation x probe whether that budget is
enough. A slot records what was observed (`RecordedMetrics`); everything else is derived
here (`derive`), when ``budget.json`` is written and again whenever it is read, so a
stored class is never taken on trust. A ``budget.json`` binds the code digest of exactly
this module and `continuity.lookup.classify` (`CLASSIFIER_MODULES`).

Two kinds of slot:

- **reference** (an identifier probe with an annotated source): the role's store and
  the digest-verified reference path; its calls, bytes and every response as measured;
- **envelope** (every other question): an explicit conservative full-budget envelope,
  independent of identifier provenance: the budget's calls and bytes, the whole byte
  budget returned by the first call so that every byte is charged again in every later
  round, and `FIXED_ROUNDS` rounds (`envelope_metrics`).

The classes (the seed's "only call/byte exhaustion is budget infeasibility"):

- ``budget_infeasible``: the path needs more calls or bytes than the budget (or the
  measuring meter was exhausted by calls or bytes). Cause ``calls`` or ``bytes``.
- ``unknown``: every other failure or exhaustion cause: a failed probe child (cause: its
  error code, e.g. ``child_watchdog`` for latency), a passed deadline (``deadline``), a
  path that did not find its source (``undiscovered``) or whose pages did not verify
  (``unverified``). Unknown feasibility blocks pricing.
- ``context_bound`` and ``admission_bound``: `continuity.lookup.classify`'s rules over
  the recorded metrics (the conservative peak request crosses 272,000 - 16,000 tokens;
  the repeated inputs cross the admission cap). They are deterministic arithmetic on
  what was recorded, not an observed failure, so they stay classes of their own (both
  are inventory-infeasible: excluded from pricing, kept in the planned counts).
- ``feasible``: everything else.

**Initial admission** is the observed first request alone (bytes / 3, rounded up, no
floor): whether it fits the reader window minus the margin and the admission cap, with
the numbers. None when the child never built a first request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import msgspec

from continuity.lookup.classify import (
    MARGIN_TOKENS,
    WINDOW_TOKENS,
    admission_cap,
    admission_total,
    classify_path,
    context_tokens,
)
from continuity.lookup.state import Cause

__all__ = [
    "CLASSIFIER_MODULES",
    "FIXED_ROUNDS",
    "Derived",
    "FixedClass",
    "InitialAdmission",
    "RecordedMetrics",
    "SlotKind",
    "SlotStatus",
    "derive",
    "envelope_metrics",
    "initial_context_tokens",
]

FIXED_ROUNDS = 10  # the probe turn's ceiling at the seed's 8 calls: budget + 2
# Exactly the modules that classify a fixed-budget slot: budget.json binds their digest.
CLASSIFIER_MODULES = ("continuity.lookup.classify", "continuity.lookup.fixed_budget_classify")

FixedClass = Literal["feasible", "budget_infeasible", "context_bound", "admission_bound", "unknown"]
SlotKind = Literal["reference", "envelope"]
SlotStatus = Literal["measured", "failed"]


class RecordedMetrics(Protocol):
    """What a fixed-budget slot recorded (a `continuity.lookup.fixed_budget.FixedSlot`)."""

    @property
    def arm(self) -> str: ...
    @property
    def suite(self) -> str: ...
    @property
    def kind(self) -> SlotKind: ...
    @property
    def status(self) -> SlotStatus: ...
    @property
    def failure(self) -> str | None: ...
    @property
    def deadline_exceeded(self) -> bool: ...
    @property
    def exhausted(self) -> Cause | None: ...
    @property
    def first_request_bytes(self) -> int: ...
    @property
    def cold_tokens(self) -> int: ...
    @property
    def discovered(self) -> bool: ...
    @property
    def verified(self) -> bool: ...
    @property
    def calls(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    @property
    def responses(self) -> Sequence[int]: ...


class InitialAdmission(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The observed first request against the reader window less the margin and the
    admission cap."""

    tokens: int
    window_limit_tokens: int
    admission_cap_tokens: int
    admitted: bool


class Derived(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a slot's recorded metrics give against a budget."""

    initial_context_tokens: int
    initial_admission: InitialAdmission | None
    largest_response: int
    peak_request_tokens: int
    admission_tokens: int
    classification: FixedClass
    cause: str | None


def initial_context_tokens(first_request_bytes: int) -> int:
    """The observed first request in tokens: its UTF-8 JSON bytes / 3, rounded up."""
    return -(-first_request_bytes // 3)


def envelope_metrics(calls: int, budget_bytes: int, rounds: int) -> tuple[int, int, list[int]]:
    """(calls, bytes, responses) of the full-budget envelope: the budget's calls and
    bytes, the whole byte budget returned first (charged again in every later round),
    `rounds` rounds (one response fewer: the last round answers)."""
    return calls, budget_bytes, [budget_bytes] + [0] * max(rounds - 2, 0)


@dataclass(frozen=True)
class _Path:
    """A slot as `continuity.lookup.classify` reads a path (initial = observed)."""

    arm: str
    suite: str
    discovered: bool
    verified: bool
    calls: int
    bytes: int
    responses: Sequence[int]
    initial_tokens: int
    cold_tokens: int


def _admission(tokens: int, suite: str, observed: bool) -> InitialAdmission | None:
    if not observed:
        return None
    limit, cap = WINDOW_TOKENS - MARGIN_TOKENS, admission_cap(suite)
    return InitialAdmission(
        tokens=tokens,
        window_limit_tokens=limit,
        admission_cap_tokens=cap,
        admitted=tokens <= limit and tokens <= cap,
    )


def _classify(
    slot: RecordedMetrics, path: _Path, calls: int, budget_bytes: int
) -> tuple[FixedClass, str | None]:
    if slot.status == "failed":
        return "unknown", slot.failure or "child_failed"
    if slot.deadline_exceeded:
        return "unknown", "deadline"
    if slot.exhausted is not None:
        return "budget_infeasible", slot.exhausted
    base = classify_path(path, calls, budget_bytes)
    if base == "undiscovered" or base == "unverified":
        return "unknown", base
    if base == "budget_infeasible":
        return base, "calls" if path.calls > calls else "bytes"
    return base, None


def derive(slot: RecordedMetrics, calls: int, budget_bytes: int) -> Derived:
    """The derived metrics and the class of `slot` against `calls` and `budget_bytes`
    (pure; see the module doc)."""
    tokens = initial_context_tokens(slot.first_request_bytes)
    path = _Path(
        arm=slot.arm,
        suite=slot.suite,
        discovered=slot.discovered,
        verified=slot.verified,
        calls=slot.calls,
        bytes=slot.bytes,
        responses=list(slot.responses),
        initial_tokens=tokens,
        cold_tokens=slot.cold_tokens,
    )
    classification, cause = _classify(slot, path, calls, budget_bytes)
    return Derived(
        initial_context_tokens=tokens,
        initial_admission=_admission(tokens, slot.suite, slot.first_request_bytes > 0),
        largest_response=max(path.responses, default=0),
        peak_request_tokens=context_tokens(path, path.arm),
        admission_tokens=admission_total(path, path.arm),
        classification=classification,
        cause=cause,
    )
