"""The slots of a lookup workload, sized conservatively, and the sensitivity rows.

**Slots.** One per role x trace x probe x repeat of the workload (the roles of a compare
registration, or of a workload-only estimate). Each is dispositioned by the sizing
policy as a run would (`LookupPolicy.disposition`, by the role's arm): feasible and
unannotated slots run and are priced; a slot of unknown feasibility blocks a run but is
priced as if it ran (conservative); an inventory-infeasible slot is skipped (counted by
its class, never priced).

**Conservative sizing**:

- the initial bound is the larger of the policy's recorded initial tokens (a measured
  slot's observed first-request bytes / 3, or its trace estimate) and the source-shape
  estimate (the inventory's: the trace's full context and system prompt for the native
  arm, its cold reseed and the 8,000-token pack for the pack arm), plus the probe
  turn's bytes / 3;
- the floors of `continuity.lookup.policy.round_inputs`: the native arm at least
  150,000 tokens, the pack arm at least cold + 12,000;
- allowances on every round, after the floors (`Allowances`): the role's soul's extra
  bytes over the policy's soul / 3 (S1), and the pack's retrieval guidance bytes / 3
  for a pack arm in Rpack;
- round k's input is the bound, every byte returned by an earlier round charged again
  as one token, and 300 tokens a round (the assistant-history replay bound); each round
  writes 300 output tokens.

**Sensitivity rows** (assumptions, never predictions): 0, 2 or 8 lookup calls a slot
(each a round before the answer round) and ``none``, ``half`` or ``full`` of the
policy's byte budget returned, split evenly over the calls, the remainder to the first
(nothing without a call). The cache levels are applied when pricing
(`continuity.plan.lookup_estimate`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from continuity.arms import ARMS
from continuity.lookup.policy import TOKENS_PER_ROUND, LookupPolicy, PathCost, round_inputs
from continuity.lookup.sources import sources_for
from continuity.plan.workload import ASSUMPTIONS, trace_shape
from continuity.probes.protocol import probe_turn_text
from continuity.traces.schema import Trace

__all__ = [
    "LOOKUP_CALL_LEVELS",
    "OUTPUT_TOKENS_PER_ROUND",
    "RETURNED_LEVELS",
    "Allowances",
    "EstimateRole",
    "EstimateSource",
    "LookupWorkload",
    "Returned",
    "SlotSize",
    "call_levels",
    "level_inputs",
    "plan_slots",
    "returned_sizes",
    "slot_rounds",
]

LOOKUP_CALL_LEVELS = (0, 2, 8)
Returned = Literal["none", "half", "full"]
RETURNED_LEVELS: tuple[Returned, ...] = ("none", "half", "full")
OUTPUT_TOKENS_PER_ROUND = TOKENS_PER_ROUND
# The dispositions that are priced: they run, or (unknown) block a run and are priced as
# if they ran.
_PRICED = frozenset({"feasible", "unannotated", "unknown"})


class EstimateRole(msgspec.Struct, frozen=True, kw_only=True):
    """A role as the estimate sizes it: its arm, checkout (``R0``/``Rpack``) and soul."""

    name: str
    arm: str
    code: str
    soul_file: str


class EstimateSource(msgspec.Struct, frozen=True, kw_only=True):
    """Where the workload came from: the options, or a verified compare registration
    (its raw sha256 and canonical digest)."""

    kind: Literal["workload-only", "registration"]
    sha256: str | None = None
    registration_digest: str | None = None


class LookupWorkload(msgspec.Struct, frozen=True, kw_only=True):
    suites: list[str]
    traces: list[str]  # empty: every trace of the suites
    probe_limit: int | None
    repeats: int
    reader_binding: str
    roles: list[EstimateRole]
    source: EstimateSource


class Allowances(msgspec.Struct, frozen=True, kw_only=True):
    """Bytes a role's first request carries beyond what the policy was measured with:
    per soul file, its normalised core's extra bytes over the policy's soul; the pack's
    retrieval guidance (a pack arm in Rpack)."""

    soul_bytes: dict[str, int]
    guidance_bytes: int

    def tokens(self, role: EstimateRole) -> tuple[int, int]:
        """(soul, guidance) allowance tokens of `role`: bytes / 3, rounded up."""
        soul = self.soul_bytes.get(role.soul_file, 0)
        guidance = self.guidance_bytes if role.code == "Rpack" and ARMS[role.arm].pack else 0
        return -(-soul // 3), -(-guidance // 3)


class SlotSize(msgspec.Struct, frozen=True, kw_only=True):
    role: str
    arm: str
    suite: str
    trace: str
    probe: str
    disposition: str
    bound: int  # the initial bound before floors
    cold: int  # the pack arm's cold estimate (its floor builds on it); 0 for native
    allowance: int  # tokens added to every round after the floors

    @property
    def priced(self) -> bool:
        return self.disposition in _PRICED


def _estimates(trace: Trace) -> tuple[int, int]:
    """(native, cold) source-shape estimates: the inventory's, from the trace alone."""
    shape = trace_shape(trace)
    return shape["full"] + ASSUMPTIONS["system_tokens"], shape["reseed"]


def _observed(policy: LookupPolicy, trace: str, arm: str, probe: str) -> tuple[int, int]:
    """(initial, cold) tokens the policy recorded for a measured slot, else (0, 0)."""
    slot = policy.slot(trace, arm, probe)
    return (slot.initial_tokens, slot.cold_tokens) if slot is not None else (0, 0)


def plan_slots(
    work: LookupWorkload,
    traces: Mapping[str, Sequence[Trace]],
    policy: LookupPolicy,
    allowances: Allowances,
) -> list[SlotSize]:
    """Every slot of `work` over `traces` (by suite, already filtered), sized: the bound
    is the larger of the policy's recorded initial tokens (a measured slot's observed
    first-request bytes / 3, or its trace estimate) and the source-shape estimate."""
    slots: list[SlotSize] = []
    for suite in work.suites:
        for trace in traces[suite]:
            native, cold = _estimates(trace)
            probes = [
                (
                    probe.probe_id,
                    -(-len(probe_turn_text(probe.text, probe.category).encode("utf-8")) // 3),
                    bool(sources_for(trace, probe)),
                )
                for probe in (
                    trace.probes[: work.probe_limit] if work.probe_limit else trace.probes
                )
            ]
            for role in work.roles:
                pack = ARMS[role.arm].pack
                soul, guidance = allowances.tokens(role)
                for probe_id, turn, annotated in probes:
                    shape = (cold + ASSUMPTIONS["pack_tokens"] if pack else native) + turn
                    key = (trace.trace_id, role.arm, probe_id)
                    observed, observed_cold = _observed(policy, *key)
                    slot = SlotSize(
                        role=role.name,
                        arm=role.arm,
                        suite=suite,
                        trace=trace.trace_id,
                        probe=probe_id,
                        disposition=policy.disposition(*key, annotated),
                        bound=max(observed, shape),
                        cold=max(cold, observed_cold) if pack else 0,
                        allowance=soul + guidance,
                    )
                    slots += [slot] * work.repeats
    return slots


def returned_sizes(total: int, calls: int) -> list[int]:
    """`total` returned bytes split over `calls` responses: evenly, the remainder one
    byte each to the first; nothing without a call."""
    if calls <= 0:
        return []
    share, rest = divmod(total, calls)
    return [share + (1 if index < rest else 0) for index in range(calls)]


def slot_rounds(
    bound: int, responses: Sequence[int], *, arm: str, cold: int = 0, allowance: int = 0
) -> list[int]:
    """Every round's input of one slot: `round_inputs` (the arm's floor over `bound`,
    each returned byte again in every later round, 300 tokens a round) plus the
    `allowance` on every round. An arm with no floor (``""``) keeps `bound`."""
    path = PathCost(
        trace_id="",
        arm=arm,
        probe_id="",
        discovered=True,
        verified=True,
        calls=len(responses),
        bytes=sum(responses),
        largest_response=max(responses, default=0),
        responses=list(responses),
        initial_tokens=bound,
        cold_tokens=cold,
    )
    return [tokens + allowance for tokens in round_inputs(path, arm)]


def call_levels(byte_budget: int) -> list[tuple[int, Returned, int]]:
    """(lookup calls, returned level, returned bytes) of every sensitivity row; with no
    call only ``none`` (nothing can be returned)."""
    sizes: dict[Returned, int] = {"none": 0, "half": -(-byte_budget // 2), "full": byte_budget}
    return [
        (calls, level, sizes[level])
        for calls in LOOKUP_CALL_LEVELS
        for level in RETURNED_LEVELS
        if calls or level == "none"
    ]


def level_inputs(slots: Sequence[SlotSize], calls: int, returned: int) -> Counter[int]:
    """How many calls of each input size the priced slots make at one level."""
    responses = returned_sizes(returned, calls)
    counts: Counter[int] = Counter()
    for slot in slots:
        if slot.priced:
            counts.update(
                slot_rounds(
                    slot.bound, responses, arm=slot.arm, cold=slot.cold, allowance=slot.allowance
                )
            )
    return counts
