"""The sizing inventory's path costs and the policy file's schema.

A policy (schema ``continuity-lookup-budget-v2``) binds the lookup protocol, the probe
protocol and the code digest of the classifier (`continuity.lookup.classify`), and each
slot keeps the metrics its class is computed from, so a reader recomputes every class
(`continuity.lookup.policy`).
"""

from __future__ import annotations

import msgspec

from continuity.lookup.classify import Classification

__all__ = ["POLICY_SCHEMA", "LookupPolicy", "PathCost", "SlotPolicy"]

POLICY_SCHEMA = "continuity-lookup-budget-v2"


class PathCost(msgspec.Struct, frozen=True, kw_only=True):
    """One measured reference path of the inventory, content-free."""

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


class SlotPolicy(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One slot (trace x arm x probe): its recorded metrics and the class they give.

    ``peak_request_tokens`` (the conservative peak request), ``admission_tokens`` (the
    repeated-input admission total) and ``largest_response`` follow from the other
    metrics; a reader recomputes them and the class.
    """

    trace_id: str
    arm: str
    probe_id: str
    suite: str
    classification: Classification
    discovered: bool
    verified: bool
    calls: int
    bytes: int
    responses: list[int]
    largest_response: int
    initial_tokens: int
    cold_tokens: int  # 0 where no cold floor applies (the native arm)
    peak_request_tokens: int
    admission_tokens: int


class LookupPolicy(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A sizing policy: the budget, what it binds, and every measured slot."""

    schema: str = POLICY_SCHEMA
    lookup_protocol: str  # the probe mode it sizes (lookup-allowed-v1)
    probe_protocol: str  # the probe protocol its first requests carried
    classifier_code: str  # code_digest of the classifier module(s)
    calls: int
    bytes: int
    max_path_calls: int
    max_path_bytes: int
    largest_response: int
    inventory_sha256: str
    inventory_key: str  # the inventory's action key in the store it was measured in
    soul_sha256: str
    soul_core_sha256: str
    reader: str  # the scripted reader binding's model the inventory was measured on
    paths: int
    slots: list[SlotPolicy]
    note: str = ""

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
