"""The lookup slot classifier: a reference path's class from its recorded metrics.

Every policy binds the code digest of exactly this module and every read of a policy
recomputes each slot's class here (`continuity.lookup.policy.load_policy`), so the
digest moves only when classification does: change this file and each frozen policy
must be frozen again; change anything else and none need be.

Feasibility reserves a 16,000-token margin inside the scripted reader's 272,000-token
window. Each serialized response byte is charged as one token, plus 300 tokens per
round. The initial input is the larger of the first forwarded context's UTF-8 JSON
bytes / 3 and the trace estimate (recorded as ``initial_tokens``); a native arm's input
is at least 150,000 tokens and a pack arm's at least its cold estimate plus 12,000. The
sum of a path's repeated inputs (every round's whole request) must also fit the
per-invocation observed-input admission cap: 6 million tokens for the originals, 400
million for the long suites.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

__all__ = [
    "ADMISSION_CAPS",
    "LONG_SUITE_ADMISSION_CAP",
    "MARGIN_TOKENS",
    "NATIVE_ARM",
    "NATIVE_FLOOR_TOKENS",
    "PACK_EXTRA_TOKENS",
    "TOKENS_PER_ROUND",
    "WINDOW_TOKENS",
    "Classification",
    "PathMetrics",
    "admission_cap",
    "admission_total",
    "classify_path",
    "context_tokens",
    "round_inputs",
]

WINDOW_TOKENS = 272_000
MARGIN_TOKENS = 16_000
TOKENS_PER_ROUND = 300
NATIVE_FLOOR_TOKENS = 150_000
PACK_EXTRA_TOKENS = 12_000
NATIVE_ARM = "native-lookup"
# The per-invocation observed-input admission cap, by suite (the long suites: 400 M).
ADMISSION_CAPS = {"original": 6_000_000}
LONG_SUITE_ADMISSION_CAP = 400_000_000

Classification = Literal[
    "feasible",  # the reference path fits the budget and the context
    "budget_infeasible",  # the path needs more calls or bytes than the budget allows
    "context_bound",  # the conservative request estimate exceeds the reader's window
    "admission_bound",  # the repeated inputs exceed the per-invocation admission cap
    "undiscovered",  # the reference path did not find the source
    "unverified",  # found, but the concatenated pages did not match the source digest
]


class PathMetrics(Protocol):
    """What classification reads of a measured path (a path cost or a policy slot)."""

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
    @property
    def initial_tokens(self) -> int: ...
    @property
    def cold_tokens(self) -> int: ...
    @property
    def suite(self) -> str: ...
    @property
    def arm(self) -> str: ...


def _initial(path: PathMetrics, arm: str) -> int:
    if arm == NATIVE_ARM:
        return max(path.initial_tokens, NATIVE_FLOOR_TOKENS)
    if path.cold_tokens:
        return max(path.initial_tokens, path.cold_tokens + PACK_EXTRA_TOKENS)
    return path.initial_tokens


def round_inputs(path: PathMetrics, arm: str) -> list[int]:
    """The conservative input of every round of a path: the floor-adjusted initial input,
    every response byte returned so far as a token, 300 tokens per round."""
    initial = _initial(path, arm)
    inputs = []
    returned = 0
    for index in range(len(path.responses) + 1):
        inputs.append(initial + returned + TOKENS_PER_ROUND * (index + 1))
        if index < len(path.responses):
            returned += path.responses[index]
    return inputs


def context_tokens(path: PathMetrics, arm: str) -> int:
    """The conservative peak request of a path (its last round's input)."""
    return round_inputs(path, arm)[-1]


def admission_total(path: PathMetrics, arm: str) -> int:
    """The repeated-input admission total of a path (every round's whole input)."""
    return sum(round_inputs(path, arm))


def admission_cap(suite: str) -> int:
    return ADMISSION_CAPS.get(suite, LONG_SUITE_ADMISSION_CAP)


def classify_path(path: PathMetrics, calls: int, budget_bytes: int) -> Classification:
    """The class of a path against a budget of `calls` and `budget_bytes`."""
    if not path.discovered:
        return "undiscovered"
    if not path.verified:
        return "unverified"
    if path.calls > calls or path.bytes > budget_bytes:
        return "budget_infeasible"
    if context_tokens(path, path.arm) > WINDOW_TOKENS - MARGIN_TOKENS:
        return "context_bound"
    if admission_total(path, path.arm) > admission_cap(path.suite):
        return "admission_bound"
    return "feasible"
