"""Grader calibration: each grader is fed passing observations and plausible failing
ones (a missing receipt, the same process before and after, a hold shorter than asked,
a duplicate unit with changed bytes, a double-consumed steer, a call sent twice) and
must give each its verdict and named cause."""

from __future__ import annotations

import msgspec
import pytest

from continuity.qualify.cases import Knobs
from continuity.qualify.graders import grade_deliveries, grade_fault
from continuity.qualify.receipts import (
    Delivery,
    FaultAfter,
    FaultBefore,
    FaultFinal,
    Loss,
    ProcessId,
)

KNOBS = Knobs(signal="SIGKILL", interval_s=1.0, seed=17)
RUNNER = ProcessId(pid=4100, start="boot:1000")
RESTARTED = ProcessId(pid=4200, start="boot:1300")
BEFORE = FaultBefore(case="c", signal="SIGKILL", interval_s=1.0, seed=17, target=RUNNER)
AFTER = FaultAfter(
    killed=RUNNER,
    signal="SIGKILL",
    loss=Loss(kind="group_gone", observed="runner group"),
    hold_s=1.02,
    recovery="rerun the same command",
    restarted=RESTARTED,
)
UNITS = [Delivery(kind="unit", id=f"u{n}", sha256=f"{n}" * 64) for n in range(3)]
FINAL = FaultFinal(completed=True, code=None, affected={"u0": "0" * 64}, deliveries=UNITS)


def test_a_proven_recovered_fault_passes_and_counts_identical_redeliveries() -> None:
    again = [*FINAL.deliveries, UNITS[0]]  # the same unit's bytes, delivered again
    verdict = grade_fault(KNOBS, BEFORE, AFTER, msgspec.structs.replace(FINAL, deliveries=again))
    assert (verdict.status, verdict.causes, verdict.redeliveries) == ("pass", [], 1)


@pytest.mark.parametrize(
    ("change", "cause"),
    [
        ({"after": msgspec.structs.replace(AFTER, restarted=RUNNER)}, "same_process"),
        ({"after": msgspec.structs.replace(AFTER, hold_s=0.4)}, "hold_short"),
        ({"after": msgspec.structs.replace(AFTER, signal="SIGTERM")}, "signal_mismatch"),
        ({"final": None}, "not_recovered"),
        ({"final": msgspec.structs.replace(FINAL, completed=False)}, "not_recovered"),
        ({"final": msgspec.structs.replace(FINAL, store_verified=False)}, "store_corrupt"),
        (
            {
                "final": msgspec.structs.replace(
                    FINAL, deliveries=[*UNITS, Delivery(kind="unit", id="u1", sha256="f" * 64)]
                )
            },
            "unit_changed",
        ),
    ],
)
def test_each_plausible_failure_fails_with_its_cause(change: dict[str, object], cause: str) -> None:
    given = {"before": BEFORE, "after": AFTER, "final": FINAL, **change}
    verdict = grade_fault(KNOBS, given["before"], given["after"], given["final"])  # type: ignore[arg-type]
    assert verdict.status == "fail" and cause in verdict.causes


def test_a_success_without_its_fault_receipt_never_qualifies() -> None:
    verdict = grade_fault(KNOBS, BEFORE, None, FINAL)
    assert (verdict.status, verdict.causes) == ("fail", ["no_fault_receipt"])


def test_a_run_that_ended_before_the_fault_is_unexercised() -> None:
    assert grade_fault(KNOBS, None, None, FINAL).status == "unexercised"
    assert grade_fault(KNOBS, BEFORE, None, None).status == "unexercised"
    partial = msgspec.structs.replace(FINAL, completed=False)
    assert grade_fault(KNOBS, BEFORE, None, partial).status == "unexercised"


def test_an_expected_typed_code_must_be_the_one_seen() -> None:
    final = msgspec.structs.replace(FINAL, code="tool_server_unavailable")
    assert (
        grade_fault(KNOBS, BEFORE, AFTER, final, expected_code="tool_server_unavailable").status
        == "pass"
    )
    other = msgspec.structs.replace(FINAL, code="replay_failed")
    verdict = grade_fault(KNOBS, BEFORE, AFTER, other, expected_code="tool_server_unavailable")
    assert verdict.causes == ["code_mismatch"]


def test_exactly_once_attributes_steers_and_calls_by_id() -> None:
    steers = [
        Delivery(kind="steer", id="steer-1", sha256="request-3"),
        Delivery(kind="steer", id="steer-1", sha256="request-4"),  # a second consumer
    ]
    assert grade_deliveries(steers) == (["steer_consumed_twice"], 0)
    same = [steers[0], steers[0]]  # two copies of the steer in one request
    assert grade_deliveries(same) == (["steer_delivered_twice"], 0)
    calls = [Delivery(kind="call", id="key-9", sha256="a" * 64)] * 2
    assert grade_deliveries(calls) == (["call_sent_twice"], 0)
    assert grade_deliveries(UNITS) == ([], 0)


def _call(key: str, *, lost: bool = False) -> Delivery:
    return Delivery(kind="call", id=key, sha256=key, lost=lost)


def test_a_call_lost_with_its_connection_must_be_sent_again_once() -> None:
    """drop-endpoint's observations: call a completed, call b lost mid-stream."""
    resent = [_call("a"), _call("b", lost=True), _call("b")]  # the rerun sends only b
    assert grade_deliveries(resent) == ([], 0)
    never = [_call("a"), _call("b", lost=True)]  # the rerun never sent the lost call
    assert grade_deliveries(never) == (["call_lost"], 0)
    completed_again = [*resent, _call("a")]  # a completed call sent again
    assert grade_deliveries(completed_again) == (["call_sent_twice"], 0)
    lost_twice = [*resent, _call("b")]  # the lost call sent again, twice
    assert grade_deliveries(lost_twice) == (["call_sent_twice"], 0)
    # a lost send never excuses a second completed one, whatever the order
    assert grade_deliveries([_call("c"), _call("c", lost=True), _call("c")])[0] == [
        "call_sent_twice"
    ]


def test_a_lost_call_in_the_final_receipt_fails_the_case() -> None:
    final = msgspec.structs.replace(FINAL, deliveries=[*UNITS, _call("k", lost=True)])
    verdict = grade_fault(KNOBS, BEFORE, AFTER, final)
    assert (verdict.status, verdict.causes) == ("fail", ["call_lost"])
