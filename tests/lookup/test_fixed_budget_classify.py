"""The fixed-budget classifier's rules, one recorded-metrics set each: only call or byte
exhaustion is budget-infeasible; a failed child, a passed deadline, an undiscovered or
unverified path is unknown; the arithmetic classes and the initial admission."""

from __future__ import annotations

from typing import Any

import pytest

from continuity.lookup.fixed_budget import FixedSlot, slot_with_derived
from continuity.lookup.fixed_budget_classify import derive, envelope_metrics

CALLS, BYTES = 8, 126_976


def _slot(**recorded: Any) -> FixedSlot:
    base: dict[str, Any] = {
        "role": "pack",
        "trace_id": "t",
        "probe_id": "p",
        "arm": "continuity-pack-cold",
        "suite": "holdout",
        "kind": "reference",
        "status": "measured",
        "failure": None,
        "deadline_exceeded": False,
        "exhausted": None,
        "first_request_bytes": 30_000,
        "cold_tokens": 5_000,
        "discovered": True,
        "verified": True,
        "calls": 3,
        "bytes": 20_000,
        "responses": [4_000, 8_000, 8_000],
        # derived: recomputed below
        "initial_context_tokens": 0,
        "initial_admission": None,
        "largest_response": 0,
        "peak_request_tokens": 0,
        "admission_tokens": 0,
        "classification": "unknown",
        "cause": None,
    }
    base.update(recorded)
    return FixedSlot(**base)


@pytest.mark.parametrize(
    ("recorded", "classification", "cause"),
    [
        ({}, "feasible", None),
        ({"calls": CALLS + 1, "responses": [100] * (CALLS + 1)}, "budget_infeasible", "calls"),
        ({"bytes": BYTES + 1}, "budget_infeasible", "bytes"),
        ({"exhausted": "calls"}, "budget_infeasible", "calls"),
        ({"exhausted": "bytes"}, "budget_infeasible", "bytes"),
        ({"status": "failed", "failure": "child_watchdog"}, "unknown", "child_watchdog"),
        ({"status": "failed", "failure": None}, "unknown", "child_failed"),
        ({"deadline_exceeded": True}, "unknown", "deadline"),
        ({"discovered": False}, "unknown", "undiscovered"),
        ({"verified": False}, "unknown", "unverified"),
        # latency and exhaustion by another cause never count as budget-infeasible
        ({"deadline_exceeded": True, "calls": CALLS + 1}, "unknown", "deadline"),
        ({"arm": "native-lookup", "first_request_bytes": 3 * 240_000}, "context_bound", None),
    ],
)
def test_each_rule(recorded: dict[str, Any], classification: str, cause: str | None) -> None:
    derived = derive(_slot(**recorded), CALLS, BYTES)
    assert (derived.classification, derived.cause) == (classification, cause)


def test_the_native_floor_makes_a_full_envelope_context_bound() -> None:
    calls, sent, responses = envelope_metrics(CALLS, BYTES, 10)
    slot = _slot(arm="native-lookup", kind="envelope", calls=calls, bytes=sent, responses=responses)
    derived = derive(slot, CALLS, BYTES)
    # 150,000 (the floor) + 126,976 (every byte a token) + 300 a round > 256,000
    assert derived.classification == "context_bound"
    assert derived.peak_request_tokens > 256_000


def test_initial_admission_is_the_observed_first_request() -> None:
    derived = derive(_slot(first_request_bytes=30_001), CALLS, BYTES)
    assert derived.initial_context_tokens == 10_001  # bytes / 3, rounded up
    admission = derived.initial_admission
    assert admission is not None and admission.admitted and admission.tokens == 10_001
    big = derive(_slot(first_request_bytes=3 * 300_000), CALLS, BYTES).initial_admission
    assert big is not None and not big.admitted and big.window_limit_tokens == 256_000
    failed = derive(_slot(status="failed", first_request_bytes=0), CALLS, BYTES)
    assert failed.initial_admission is None  # the child never built a first request


def test_a_stored_slot_reclassifies_from_its_metrics() -> None:
    slot = slot_with_derived(_slot(), CALLS, BYTES)
    assert slot.classification == "feasible"
    tighter = slot_with_derived(slot, 2, BYTES)  # a smaller budget: the same metrics
    assert (tighter.classification, tighter.cause) == ("budget_infeasible", "calls")
