"""The records of ledger upkeep: its outcome classes and its content-free receipts.

Outcomes fall into classes (`reason_class`), the seed's lists:

- ``ok``: ``published`` (a new generation) or ``analysis_only`` (a valid empty delta:
  the generation stays, the operation still consumed its admission);
- ``provider`` (a degradation after dispatch): output_aborted, aborted,
  provider_output, empty_output, validation_or_publication, input_overrun,
  output_overrun, unavailable;
- ``capacity`` (a degradation, nothing dispatched or nothing published): input_budget,
  model_headroom, ledger_scan_capacity, ledger_render_budget, ledger_payload_budget,
  ledger_lineage_budget, ledger_aggregate_capacity, ledger_quota_budget,
  source_oversized, upkeep_dispatch_rejected, upkeep_repeat_suppressed,
  already_covered, unchanged, no_source;
- ``config`` (an eligibility skip: an integrity failure, never a degradation):
  read_only, disabled, detached_attempt, continuation_boundary, per_message, isolated,
  unowned_store, history_unavailable, model_unavailable, model_identity,
  request_cap_unsupported;
- ``uncertain``: dispatched with no known outcome (the call may have been billed);
- anything else is ``unknown``, an integrity failure.

An `UpkeepReceipt` is what one stage's upkeep did, with no content: its journal row's
state and reservation, its offer (counts, ordinals, a digest), the coverage so far, the
reported usage and overruns, the generations before and after, and its call receipts.
A `Capture` is the one record that holds content (``--capture-upkeep-output``).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.memory.ledger import Generation, Ledger
from continuity.memory.ledger_journal import OpKind
from continuity.memory.upkeep_selection import Offer
from continuity.messages import Usage
from continuity.providers.endpoint import CallReceipt

__all__ = [
    "CAPACITY_REASONS",
    "CONFIG_REASONS",
    "OK_OUTCOMES",
    "PROVIDER_REASONS",
    "Capture",
    "CoverageReceipt",
    "GenerationRef",
    "OfferReceipt",
    "ReasonClass",
    "UpkeepReceipt",
    "generation_ref",
    "offer_receipt",
    "reason_class",
]

OK_OUTCOMES = ("published", "analysis_only")
PROVIDER_REASONS = (
    "output_aborted",
    "aborted",
    "provider_output",
    "empty_output",
    "validation_or_publication",
    "input_overrun",
    "output_overrun",
    "unavailable",
)
CAPACITY_REASONS = (
    "input_budget",
    "model_headroom",
    "ledger_scan_capacity",
    "ledger_render_budget",
    "ledger_payload_budget",
    "ledger_lineage_budget",
    "ledger_aggregate_capacity",
    "ledger_quota_budget",
    "source_oversized",
    "upkeep_dispatch_rejected",
    "upkeep_repeat_suppressed",
    "already_covered",
    "unchanged",
    "no_source",
)
CONFIG_REASONS = (
    "read_only",
    "disabled",
    "detached_attempt",
    "continuation_boundary",
    "per_message",
    "isolated",
    "unowned_store",
    "history_unavailable",
    "model_unavailable",
    "model_identity",
    "request_cap_unsupported",
)
ReasonClass = Literal["ok", "provider", "capacity", "config", "uncertain", "unknown"]


def reason_class(outcome: str) -> ReasonClass:
    if outcome in OK_OUTCOMES:
        return "ok"
    if outcome in PROVIDER_REASONS:
        return "provider"
    if outcome in CAPACITY_REASONS:
        return "capacity"
    if outcome in CONFIG_REASONS:
        return "config"
    if outcome == "uncertain":
        return "uncertain"
    return "unknown"


class GenerationRef(msgspec.Struct, frozen=True):
    number: int
    id: str
    entries: int


def generation_ref(generation: Generation) -> GenerationRef:
    return GenerationRef(generation.number, generation.id, len(generation.ledger.entries))


class OfferReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """What one pass offered, content-free: counts, ordinals, a digest, the budget."""

    spans: int
    owner_spans: int
    tool_spans: int
    owner_ordinals: list[int]
    tool_ordinals: list[int]
    bytes: int
    projected_tokens: int
    limit: int
    bonus: int
    digest: str


class CoverageReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """How much of the retained history the ledger's offers have reached: every span,
    those offered for good, those never offered (coverage omissions) and those offered
    to a pass that published nothing (the gap a failed extraction leaves)."""

    spans: int
    offered: int
    never_offered: int
    gap: int
    oversized_sources: int


class UpkeepReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """One stage's upkeep, content-free. `usage` is what the provider reported (None:
    not reported, or no call); the reservations are what the journal reserved."""

    schema: str = "continuity-upkeep-receipt-v1"
    stage: int
    tag: str
    op_id: str | None = None
    kind: OpKind | None = None
    state: Literal["none", "reserved", "dispatched", "settled", "released"] = "none"
    outcome: str
    outcome_class: ReasonClass
    enforcement: str
    input_reservation: int = 0
    output_reservation: int = 0
    offer: OfferReceipt | None = None
    coverage: CoverageReceipt | None = None
    usage: Usage | None = None
    input_overrun: bool = False
    output_overrun: bool = False
    validation: str | None = None  # the ledger_delta_invalid reason, when refused
    generation_before: GenerationRef | None = None
    generation_after: GenerationRef | None = None
    released: list[str] = msgspec.field(default_factory=list)
    calls: list[CallReceipt] = msgspec.field(default_factory=list)
    # --capture-upkeep-output: the code of a capture that could not be written (the
    # outcome is the extraction's, whatever happened to its diagnostic copy).
    capture_error: str | None = None

    @property
    def dispatched(self) -> bool:
        """The call may have been made (its row reached ``dispatched``)."""
        return self.state in ("dispatched", "settled")


class Capture(msgspec.Struct, frozen=True, kw_only=True):
    """What ``--capture-upkeep-output`` keeps of one stage (fictional traces only): the
    raw completion, the stable validation code and the merged validated ledger. Never
    the prompt, never a credential."""

    schema: str = "continuity-upkeep-capture-v1"
    stage: int
    outcome: str
    completion: str | None
    validation: str | None
    ledger: Ledger | None


def offer_receipt(offer: Offer) -> OfferReceipt:
    owner = [s for s in offer.spans if s.kind == "owner"]
    return OfferReceipt(
        spans=len(offer.spans),
        owner_spans=len(owner),
        tool_spans=len(offer.spans) - len(owner),
        owner_ordinals=offer.owner_ordinals,
        tool_ordinals=offer.tool_ordinals,
        bytes=sum(s.bytes for s in offer.spans),
        projected_tokens=offer.projected_tokens,
        limit=offer.limit,
        bonus=offer.bonus,
        digest=offer.digest,
    )
