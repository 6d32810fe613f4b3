"""Graders: pure functions from observations to a verdict with named causes.

`grade_fault` reads the three fault receipts and the case's knobs:

- no ``fault-before.json``, or a workload that ended before the fault could be aimed:
  **unexercised** (neither a pass nor a failure);
- a workload that finished without ``fault-after.json``: **fail** ``no_fault_receipt``
  (a success without its fault proven never qualifies);
- otherwise each broken assertion is a cause: ``same_process`` (the killed and the
  restarted process are one: same PID and start identity), ``signal_mismatch``,
  ``hold_short`` (the measured hold is shorter than the configured interval),
  ``not_recovered`` (no final receipt, or the recovery did not finish),
  ``code_mismatch`` (the typed code the fault should produce is not the one seen),
  ``store_corrupt`` (``doit verify`` found a corrupt or half-written file in the
  workload's store after the recovery), ``no_call_in_flight`` (a case that must kill a
  call in flight, `Case.in_flight`, whose ``fault-after.json`` shows no call the killed
  server had received and not answered: a kill between calls proves nothing).

`grade_deliveries` attributes every delivery by id (exactly-once): a unit delivered
twice with different bytes is ``unit_changed``, a steer consumed by two requests is
``steer_consumed_twice`` (two copies in one request: ``steer_delivered_twice``), a
model call sent twice for one cache key is
``call_sent_twice``. A send whose answer was lost with its connection does not count
against the call: it must be sent again, once (``call_lost`` when it never is, and
``call_sent_twice`` when it is sent again after an answer arrived). An identical
redelivery (the same unit bytes again) is allowed and counted. The graders are
calibrated by tests that feed them passing and plausible failing observations
(``tests/qualify/test_graders.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

import msgspec

from continuity.qualify.cases import Knobs
from continuity.qualify.receipts import Delivery, FaultAfter, FaultBefore, FaultFinal

__all__ = ["GRADER_VERSION", "Verdict", "grade_deliveries", "grade_fault"]

# v2: a lost call may (and must) be sent again; a steer twice in one request fails
# v3: a case that kills a call in flight fails when its receipt shows none
GRADER_VERSION = "qualify-graders-v3"


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    status: Literal["pass", "fail", "unexercised"]
    causes: list[str]
    redeliveries: int = 0
    grader: str = GRADER_VERSION


def grade_deliveries(deliveries: Sequence[Delivery]) -> tuple[list[str], int]:
    """(causes, identical redeliveries) of the observations (module doc)."""
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    lost: dict[str, int] = defaultdict(int)
    for delivery in deliveries:
        if delivery.kind == "call" and delivery.lost:
            lost[delivery.id] += 1
        else:
            seen[(delivery.kind, delivery.id)].append(delivery.sha256)
    causes: set[str] = {"call_lost" for call in lost if ("call", call) not in seen}
    redeliveries = 0
    for (kind, _), digests in seen.items():
        if len(digests) < 2:
            continue
        if kind == "unit":
            if len(set(digests)) > 1:
                causes.add("unit_changed")
            else:
                redeliveries += len(digests) - 1
        elif kind == "steer" and len(set(digests)) > 1:
            causes.add("steer_consumed_twice")  # two distinct consuming requests
        elif kind == "steer":
            causes.add("steer_delivered_twice")  # two copies in one request
        elif kind == "call":
            causes.add("call_sent_twice")
    return sorted(causes), redeliveries


def grade_fault(
    knobs: Knobs,
    before: FaultBefore | None,
    after: FaultAfter | None,
    final: FaultFinal | None,
    *,
    expected_code: str | None = None,
    in_flight: bool = False,
) -> Verdict:
    """The verdict of one attempt's receipts (module doc); `in_flight`: the case must
    kill a call in flight (`Case.in_flight`)."""
    if before is None:
        return Verdict(status="unexercised", causes=["fault_not_aimed"])
    if after is None:
        if final is not None and final.completed:
            return Verdict(status="fail", causes=["no_fault_receipt"])
        return Verdict(status="unexercised", causes=["fault_not_injected"])
    causes: list[str] = []
    if (after.killed.pid, after.killed.start) == (after.restarted.pid, after.restarted.start):
        causes.append("same_process")
    if after.signal != knobs.signal or before.signal != knobs.signal:
        causes.append("signal_mismatch")
    if after.hold_s < knobs.interval_s:
        causes.append("hold_short")
    call = after.in_flight
    if in_flight and (call is None or not call.started or call.answered):
        causes.append("no_call_in_flight")
    if final is None or not final.completed:
        causes.append("not_recovered")
    elif final.store_verified is False:
        causes.append("store_corrupt")
    elif expected_code is not None and final.code != expected_code:
        causes.append("code_mismatch")
    redeliveries = 0
    if final is not None:
        delivered, redeliveries = grade_deliveries(final.deliveries)
        causes.extend(delivered)
    return Verdict(status="fail" if causes else "pass", causes=causes, redeliveries=redeliveries)
