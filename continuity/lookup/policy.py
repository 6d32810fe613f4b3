"""The lookup sizing policy: budget arithmetic, path feasibility, the frozen policy file.

The budget comes from a measured inventory of reference paths (see
`continuity.runner.inventory`), with the seed's formulas:

- calls = max(path calls) + 2, capped at min(96, 100 - 2);
- bytes = max(path bytes) + 2 x the largest serialized response, rounded up to KiB and
  capped at 8 MiB.

The seed's own frozen example (a maximum path of 6 calls / 61,718 bytes and a largest
response of 32,608 bytes) gives 8 calls and 126,976 bytes.

Feasibility reserves a 16,000-token margin inside the scripted reader's 272,000-token
window; each serialized response byte is charged as one token, plus 300 tokens per
round; the initial input is the larger of the first forwarded context's UTF-8 JSON
bytes / 3 and the trace estimate; a native arm's input is at least 150,000 tokens and a
pack arm's at least the cold estimate plus 12,000. The sum of a path's repeated
inputs (every round's whole request) must also fit the per-invocation observed-input
admission cap: 6 million tokens for the originals, 400 million for the long suites.

The checked-in policy of the current probe protocol (`fixtures/lookup/budget-v2.json`,
for probe-protocol-v2) is used unless another is given by path plus sha256; a mismatch
fails closed. A protocol change re-measures and freezes a new file; an old one is never
edited (`budget-v1.json` stays the policy probe-protocol-v1 runs were planned with).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import msgspec

from continuity.errors import LookupError_
from continuity.probes.protocol import PROBE_PROTOCOL

__all__ = [
    "ADMISSION_CAPS",
    "BYTE_CAP",
    "CALL_CAP",
    "DEFAULT_POLICY",
    "KIB",
    "LONG_SUITE_ADMISSION_CAP",
    "MARGIN_TOKENS",
    "NATIVE_FLOOR_TOKENS",
    "PACK_EXTRA_TOKENS",
    "POLICIES",
    "POLICY_SCHEMA",
    "TOKENS_PER_ROUND",
    "WINDOW_TOKENS",
    "Classification",
    "LookupPolicy",
    "PathCost",
    "SlotPolicy",
    "admission_cap",
    "budget_from_paths",
    "classify_path",
    "context_tokens",
    "default_policy_path",
    "load_policy",
    "policy_sha256",
    "round_inputs",
]

CALL_CAP = min(96, 100 - 2)
BYTE_CAP = 8 * 1024 * 1024
KIB = 1024
WINDOW_TOKENS = 272_000
MARGIN_TOKENS = 16_000
TOKENS_PER_ROUND = 300
NATIVE_FLOOR_TOKENS = 150_000
PACK_EXTRA_TOKENS = 12_000
# The per-invocation observed-input admission cap, by suite (the long suites: 400 M).
ADMISSION_CAPS = {"original": 6_000_000}
LONG_SUITE_ADMISSION_CAP = 400_000_000
POLICY_SCHEMA = "continuity-lookup-budget-v1"
# The frozen policy of each probe protocol; new lookup plans use the current one's.
POLICIES = {
    "probe-protocol-v1": "budget-v1.json",
    "probe-protocol-v2": "budget-v2.json",
}
DEFAULT_POLICY = POLICIES[PROBE_PROTOCOL]

Classification = Literal[
    "feasible",  # the reference path fits the budget and the context
    "budget_infeasible",  # the path needs more calls or bytes than the budget allows
    "context_bound",  # the conservative request estimate exceeds the reader's window
    "admission_bound",  # the repeated inputs exceed the per-invocation admission cap
    "undiscovered",  # the reference path did not find the source
    "unverified",  # found, but the concatenated pages did not match the source digest
]


class PathCost(msgspec.Struct, frozen=True, kw_only=True):
    """One measured reference path, content-free."""

    trace_id: str
    arm: str
    probe_id: str
    discovered: bool
    verified: bool
    calls: int
    bytes: int
    largest_response: int
    responses: list[int]  # the serialized size of every response, in order
    initial_tokens: int  # the conservative first-request estimate
    cold_tokens: int = 0  # the cold estimate a pack arm's floor builds on
    suite: str = "original"  # which admission cap applies


class SlotPolicy(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    arm: str
    probe_id: str
    classification: Classification
    calls: int
    bytes: int


class LookupPolicy(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema: str = POLICY_SCHEMA
    calls: int
    bytes: int
    max_path_calls: int
    max_path_bytes: int
    largest_response: int
    inventory_sha256: str
    soul_sha256: str
    soul_core_sha256: str
    paths: int
    slots: list[SlotPolicy]
    note: str = ""
    reader: str = ""  # the scripted reader binding's model the inventory was measured on

    def slot(self, trace_id: str, arm: str, probe_id: str) -> SlotPolicy | None:
        for slot in self.slots:
            if (slot.trace_id, slot.arm, slot.probe_id) == (trace_id, arm, probe_id):
                return slot
        return None

    def disposition(self, trace_id: str, arm: str, probe_id: str, annotated: bool) -> str:
        """A planned slot's disposition: ``unannotated`` (no source; it runs with unknown
        provenance), its class (``feasible`` runs; any other class is
        inventory-infeasible), or ``unknown`` (never measured; blocks execution)."""
        if not annotated:
            return "unannotated"
        slot = self.slot(trace_id, arm, probe_id)
        return slot.classification if slot is not None else "unknown"


def budget_from_paths(max_calls: int, max_bytes: int, largest_response: int) -> tuple[int, int]:
    """The seed's budget formulas: (calls, bytes)."""
    calls = min(max_calls + 2, CALL_CAP)
    raw = max_bytes + 2 * largest_response
    return calls, min(-(-raw // KIB) * KIB, BYTE_CAP)


def _initial(path: PathCost, arm: str) -> int:
    if arm == "native-lookup":
        return max(path.initial_tokens, NATIVE_FLOOR_TOKENS)
    if path.cold_tokens:
        return max(path.initial_tokens, path.cold_tokens + PACK_EXTRA_TOKENS)
    return path.initial_tokens


def round_inputs(path: PathCost, arm: str) -> list[int]:
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


def context_tokens(path: PathCost, arm: str) -> int:
    """The conservative peak request of a path (its last round's input)."""
    return round_inputs(path, arm)[-1]


def admission_cap(suite: str) -> int:
    return ADMISSION_CAPS.get(suite, LONG_SUITE_ADMISSION_CAP)


def classify_path(path: PathCost, calls: int, budget_bytes: int) -> Classification:
    if not path.discovered:
        return "undiscovered"
    if not path.verified:
        return "unverified"
    if path.calls > calls or path.bytes > budget_bytes:
        return "budget_infeasible"
    if context_tokens(path, path.arm) > WINDOW_TOKENS - MARGIN_TOKENS:
        return "context_bound"
    if sum(round_inputs(path, path.arm)) > admission_cap(path.suite):
        return "admission_bound"
    return "feasible"


def default_policy_path() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures" / "lookup" / DEFAULT_POLICY


def policy_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_policy(path: Path | None = None, sha256: str | None = None) -> LookupPolicy:
    """The frozen policy, or the one at `path`, whose bytes must hash to `sha256`.

    Raises:
        UsageError: ``lookup_policy_sha256_required`` (a path without its sha256, or an
            empty one), ``lookup_policy_sha256_mismatch``, ``lookup_policy_invalid``.
    """
    if path is not None and not (sha256 or "").strip():
        raise LookupError_(
            "a policy given by path needs --policy-sha256 (the sha256 of its bytes)",
            code="lookup_policy_sha256_required",
            location="--policy-sha256",
        )
    source = path or default_policy_path()
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise LookupError_(
            f"cannot read the policy: {exc.strerror}", location=str(source)
        ) from None
    if sha256 is not None and policy_sha256(data) != sha256.strip().lower():
        raise LookupError_(
            f"the policy's sha256 is {policy_sha256(data)}, not {sha256.strip()}",
            code="lookup_policy_sha256_mismatch",
            location=str(source),
        )
    try:
        policy = msgspec.json.decode(data, type=LookupPolicy)
    except msgspec.MsgspecError as exc:
        raise LookupError_(str(exc), location=str(source)) from None
    if policy.schema != POLICY_SCHEMA:
        raise LookupError_(f"schema {policy.schema!r}", location=f"{source}:$.schema")
    if not 1 <= policy.calls <= CALL_CAP or not 1 <= policy.bytes <= BYTE_CAP:
        raise LookupError_("budget out of range", location=f"{source}:$.calls")
    return policy
