"""The qualification catalogue: cases, groups and plans.

A case's id is ``<suite>.<group>.<case>``. Groups marked explicit-only (`EXPLICIT_ONLY`:
``reliability``, ``slow``) are never selected by ``--all``, a suite selector or a
profile: only by their group name, ``--case`` or ``--id`` (explicit
groups). Each case belongs to one plan; a plan's registration (case ids and
plan id, as data in ``fixtures/qualify/<plan>.json``) must be complete before any of its
cases runs (`continuity.qualify.select`).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

__all__ = [
    "CATALOGUE",
    "EXPLICIT_ONLY",
    "REGISTRATIONS",
    "SUITE",
    "Case",
    "Knobs",
    "case_by_id",
]

SUITE = "continuity"
EXPLICIT_ONLY = frozenset({"reliability", "slow"})
REGISTRATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "qualify"


class Knobs(msgspec.Struct, frozen=True, kw_only=True):
    """What a fault is configured with; results compare only between equal knobs."""

    signal: str = "SIGKILL"
    interval_s: float = 1.0  # a minimum hold after the loss is confirmed
    seed: int = 17
    at_unit: int = 4  # kill-runner: the fault is aimed once this many units are built


class Case(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    group: str
    plan: str
    description: str
    fault: str
    assertions: tuple[str, ...]
    knobs: Knobs = Knobs()
    # The fault must land while a call is in flight: the fault-after receipt must show a
    # call the killed server received and had not answered (`receipts.InFlight`).
    in_flight: bool = False

    @property
    def id(self) -> str:
        return f"{SUITE}.{self.group}.{self.name}"


_RELIABILITY = "qualify-reliability-v2"  # v2: six cases (v1 had four)
_SLOW = "qualify-slow-v1"

CATALOGUE: tuple[Case, ...] = (
    Case(
        name="kill-runner",
        group="reliability",
        plan=_RELIABILITY,
        description="SIGKILL the doit units process group mid-unit, hold it offline for the "
        "interval, restart the same command",
        fault="the runner's process group is killed while a unit is being built",
        assertions=(
            "the killed runner and the restarted one are distinct processes",
            "the loss is confirmed (the group is gone) before the hold starts",
            "the hold lasts at least the configured interval",
            "the restarted command finishes every unit",
            "no unit is delivered twice with different bytes",
        ),
    ),
    Case(
        name="kill-tool-server",
        group="reliability",
        plan=_RELIABILITY,
        description="kill the MCP fixture tool server mid-replay; the replay fails typed and "
        "a rerun finishes",
        fault="the fixture tool server is killed while the replay calls it",
        assertions=(
            "the replay fails with a typed, resumable code",
            "the killed server and the restarted one are distinct processes",
            "a connection to the killed server is refused before the hold starts",
            "the hold lasts at least the configured interval",
            "the rerun builds the checkpoint",
        ),
    ),
    Case(
        name="kill-history-server",
        group="reliability",
        plan=_RELIABILITY,
        description="kill a store arm probe's ConversationHistory mid-probe; its sample is "
        "excluded (store_degraded), never scored, and the unit finishes",
        fault="a probe's ConversationHistory process is killed on the first history call it "
        "receives, before it answers",
        assertions=(
            "the killed server had received a history call and had not answered it",
            "a connection to the killed server is refused",
            "the next probe's own server is a distinct process",
            "exactly one sample is store_degraded and the others are scored",
            "the unit finishes",
        ),
        knobs=Knobs(interval_s=0.0),  # the recovery is the next probe's own server
        in_flight=True,
    ),
    Case(
        name="drop-endpoint",
        group="reliability",
        plan=_RELIABILITY,
        description="the loopback model endpoint of a real-mode run stops mid-stream for the "
        "interval; the run stops with a resumable code and a rerun re-sends only the lost call",
        fault="the endpoint's process is killed while it streams an answer",
        assertions=(
            "the run observes the reset and stops with run_incomplete (resumable)",
            "a connection to the endpoint's port is refused before the hold starts",
            "the killed endpoint and the restarted one are distinct processes",
            "the hold lasts at least the configured interval",
            "the rerun finishes the unit, sending the lost call once and no completed call",
        ),
    ),
    Case(
        name="steer-across-restart",
        group="reliability",
        plan=_RELIABILITY,
        description="a live steer queued while the harness process is restarted is "
        "delivered exactly once after the restart",
        fault="the harness's process group is killed while a steer waits for its request",
        assertions=(
            "the loss is confirmed (the group is gone) before the hold starts",
            "the killed harness and the restarted one are distinct processes",
            "the hold lasts at least the configured interval",
            "the steer queued before the kill and the one queued while it was down are "
            "each consumed by exactly one request, after the restart",
            "the restarted harness finishes the conversation",
        ),
    ),
    Case(
        name="upgrade-aba",
        group="reliability",
        plan=_RELIABILITY,
        description="two frozen builds fill one run alternately (chunks A, B, A); the report "
        "refuses to pool units of the two unit codes",
        fault="the run's code changes between chunks (build B changes the unit code)",
        assertions=(
            "each chunk exits 0 and writes its one unit",
            "no chunk's unit is lost or rewritten by a later chunk",
            "the aggregate refuses with run_builds_mixed, naming build B's unit",
            "build A's and build B's runners are distinct processes",
        ),
        knobs=Knobs(signal="none", interval_s=0.0),
    ),
    Case(
        name="kill-runner-long-hold",
        group="slow",
        plan=_SLOW,
        description="kill-runner with a 125 s hold (seed 004's default outage)",
        fault="the runner's process group is killed while a unit is being built",
        assertions=("as kill-runner, with the 125 s hold",),
        knobs=Knobs(interval_s=125.0),
    ),
)


def case_by_id(case_id: str) -> Case | None:
    return next((c for c in CATALOGUE if c.id == case_id), None)
