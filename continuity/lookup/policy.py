"""The lookup sizing policy: what it binds, its slots, and reading one.

The budget comes from a measured inventory of reference paths
(`continuity.runner.inventory`) by the seed's formulas (`continuity.lookup.budget`);
each slot's class comes from its recorded metrics (`continuity.lookup.classify`).

A policy (schema ``continuity-lookup-budget-v2``) binds the lookup protocol
(``lookup-allowed-v1``), the probe protocol its first requests carried
(`continuity.probes.protocol.PROBE_PROTOCOL`) and the code digest of the classifier,
and stores every slot's metrics with its class. `load_policy` refuses a policy bound to
another protocol or classifier and recomputes every slot's derived metrics and class
from the recorded ones: a stored class is never taken on trust.

The checked-in policy of the current probe protocol (`fixtures/lookup/budget-v4.json`)
is used unless another is given by path plus sha256; a mismatch fails closed. A
protocol or classifier change re-measures and freezes a new file; an old one is never
edited: ``budget-v3.json`` is probe-protocol-v2's. ``budget-v1.json`` and
``budget-v2.json`` (schema
``continuity-lookup-budget-v1``: no protocol or code binding, a class and two numbers a
slot) stay in ``fixtures/`` as the policies earlier plans were made with; a new plan
refuses them (``lookup_policy_unbound``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from continuity.digest import code_digest
from continuity.errors import LookupError_
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.lookup.budget import BYTE_CAP, CALL_CAP, KIB, budget_from_paths
from continuity.lookup.classify import (
    ADMISSION_CAPS,
    LONG_SUITE_ADMISSION_CAP,
    MARGIN_TOKENS,
    NATIVE_FLOOR_TOKENS,
    PACK_EXTRA_TOKENS,
    TOKENS_PER_ROUND,
    WINDOW_TOKENS,
    Classification,
    PathMetrics,
    admission_cap,
    admission_total,
    classify_path,
    context_tokens,
    round_inputs,
)
from continuity.lookup.policy_schema import POLICY_SCHEMA, LookupPolicy, PathCost, SlotPolicy
from continuity.probes.protocol import PROBE_PROTOCOL

__all__ = [
    "ADMISSION_CAPS",
    "BYTE_CAP",
    "CALL_CAP",
    "CLASSIFIER_MODULES",
    "DEFAULT_POLICY",
    "KIB",
    "LEGACY_SCHEMAS",
    "LONG_SUITE_ADMISSION_CAP",
    "LOOKUP_PROTOCOL",
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
    "admission_total",
    "budget_from_paths",
    "classifier_code",
    "classify_path",
    "context_tokens",
    "default_policy_path",
    "load_policy",
    "policy_sha256",
    "round_inputs",
    "slot_policy",
]

LOOKUP_PROTOCOL = "lookup-allowed-v1"
# Exactly the modules that classify: a policy binds their code digest.
CLASSIFIER_MODULES = ("continuity.lookup.classify",)
# Schemas that bind no protocol or classifier code: kept in fixtures/, never loaded.
LEGACY_SCHEMAS = ("continuity-lookup-budget-v1",)
# The frozen policy of each bound probe protocol; new lookup plans use the current one's.
# (budget-v1.json, probe-protocol-v1, and budget-v2.json, the first probe-protocol-v2
# measurement, are legacy-schema files, kept unedited; budget-v3.json is v2's bound one.)
POLICIES = {"probe-protocol-v2": "budget-v3.json", "probe-protocol-v3": "budget-v4.json"}
DEFAULT_POLICY = POLICIES[PROBE_PROTOCOL]


def classifier_code() -> str:
    """The code digest of the classifier, as a policy binds it."""
    return code_digest(CLASSIFIER_MODULES)


def slot_policy(path: PathCost, calls: int, budget_bytes: int) -> SlotPolicy:
    """A measured path as a policy slot: its metrics and their class against a budget."""
    return SlotPolicy(
        trace_id=path.trace_id,
        arm=path.arm,
        probe_id=path.probe_id,
        suite=path.suite,
        classification=classify_path(path, calls, budget_bytes),
        discovered=path.discovered,
        verified=path.verified,
        calls=path.calls,
        bytes=path.bytes,
        responses=list(path.responses),
        largest_response=max(path.responses, default=0),
        initial_tokens=path.initial_tokens,
        cold_tokens=path.cold_tokens,
        peak_request_tokens=context_tokens(path, path.arm),
        admission_tokens=admission_total(path, path.arm),
    )


def default_policy_path() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures" / "lookup" / DEFAULT_POLICY


def policy_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Schema(msgspec.Struct):
    schema: str = ""


def load_policy(path: Path | None = None, sha256: str | None = None) -> LookupPolicy:
    """The frozen policy, or the one at `path`, whose bytes must hash to `sha256`, with
    every binding checked and every slot's class recomputed from its metrics.

    Raises:
        UsageError: ``lookup_policy_sha256_required`` (a path without its sha256, or an
            empty one), ``lookup_policy_sha256_mismatch``, ``lookup_policy_unbound`` (a
            v1-schema policy: it binds no protocol or code), ``lookup_policy_invalid``,
            ``lookup_policy_protocol_mismatch``, ``lookup_policy_code_mismatch``,
            ``lookup_policy_metrics_mismatch``, ``lookup_policy_class_mismatch``.
    """
    if path is not None and not (sha256 or "").strip():
        raise LookupError_(
            "a policy given by path needs --policy-sha256 (the sha256 of its bytes)",
            code="lookup_policy_sha256_required",
            location="--policy-sha256",
        )
    source = path or default_policy_path()
    try:
        data = read_user_bytes(source, limit=DOCUMENT_MAX_BYTES, what="the policy")
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
    policy = _decode(data, str(source))
    _check_bindings(policy, str(source))
    for index, slot in enumerate(policy.slots):
        _check_slot(slot, policy, f"{source}:$.slots[{index}]")
    return policy


def _decode(data: bytes, where: str) -> LookupPolicy:
    try:
        schema = msgspec.json.decode(data, type=_Schema).schema
    except msgspec.MsgspecError as exc:
        raise LookupError_(str(exc), location=where) from None
    if schema in LEGACY_SCHEMAS:
        raise LookupError_(
            f"a {schema} policy binds no protocol or classifier code and stores only a "
            "class per slot; measure a new one with doit lookup_budget",
            code="lookup_policy_unbound",
            location=where,
        )
    if schema != POLICY_SCHEMA:
        raise LookupError_(f"schema {schema[:60]!r}", location=f"{where}:$.schema")
    try:
        policy = msgspec.json.decode(data, type=LookupPolicy)
    except msgspec.MsgspecError as exc:
        raise LookupError_(str(exc), location=where) from None
    if not 1 <= policy.calls <= CALL_CAP or not 1 <= policy.bytes <= BYTE_CAP:
        raise LookupError_("budget out of range", location=f"{where}:$.calls")
    return policy


def _check_bindings(policy: LookupPolicy, where: str) -> None:
    bound = (policy.lookup_protocol, policy.probe_protocol)
    if bound != (LOOKUP_PROTOCOL, PROBE_PROTOCOL):
        raise LookupError_(
            f"the policy was measured under {bound[0][:40]} / {bound[1][:40]}, not "
            f"{LOOKUP_PROTOCOL} / {PROBE_PROTOCOL}: measure a new one",
            code="lookup_policy_protocol_mismatch",
            location=where,
        )
    if policy.classifier_code != classifier_code():
        raise LookupError_(
            f"the policy's classes came from classifier code {policy.classifier_code[:16]}, "
            f"this checkout's is {classifier_code()[:16]}: measure or freeze a new one",
            code="lookup_policy_code_mismatch",
            location=where,
        )


def _derived(slot: PathMetrics) -> dict[str, int]:
    return {
        "largest_response": max(slot.responses, default=0),
        "peak_request_tokens": context_tokens(slot, slot.arm),
        "admission_tokens": admission_total(slot, slot.arm),
    }


def _check_slot(slot: SlotPolicy, policy: LookupPolicy, where: str) -> None:
    """Recompute a slot's derived metrics and class from its recorded metrics."""
    if min(slot.calls, slot.bytes, slot.initial_tokens, slot.cold_tokens, *slot.responses) < 0:
        raise LookupError_("a negative metric", location=where)
    for name, value in _derived(slot).items():
        if getattr(slot, name) != value:
            raise LookupError_(
                f"{name} is {getattr(slot, name)}, its metrics give {value}",
                code="lookup_policy_metrics_mismatch",
                location=f"{where}.{name}",
            )
    recomputed = classify_path(slot, policy.calls, policy.bytes)
    if slot.classification != recomputed:
        raise LookupError_(
            f"the slot is stored as {slot.classification}, its metrics give {recomputed}",
            code="lookup_policy_class_mismatch",
            location=f"{where}.classification",
        )
