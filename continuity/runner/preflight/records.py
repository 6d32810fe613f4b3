"""The records of one preflight slot: what it prepares with, and what it found.

A `PreflightSlot` is the unit of scheduling (a role, or a bare lookup arm, x suite x
trace) with the code that prepares it (`SlotCode`); a `SlotReport` is that slot's line
of the preflight report: eligibility, the tree figures, the rejected classes, the phase
failure (`FAILURE_CLASSES`) and the phase times against their watchdogs (`PhaseTime`).
"""

from __future__ import annotations

import sys

import msgspec

from continuity.runner.preflight.child import TraceInput

__all__ = [
    "CHILD_MODULE",
    "FAILURE_CLASSES",
    "PhaseTime",
    "PreflightSlot",
    "SlotCode",
    "SlotFailure",
    "SlotReport",
    "checkout_code",
]

# Why a slot is not eligible, besides a rejected entry
# (`continuity.runner.preflight.tree.REJECTED_CLASSES`).
FAILURE_CLASSES = (
    "build_changed",
    "preparation_unavailable",
    "preparation_failed",
    "preparation_watchdog",
    "snapshot_unverified",
    "restore_failed",
    "restore_mismatch",
    "restore_watchdog",
)


# The preparation child, run with ``-m`` in a slot's interpreter.
CHILD_MODULE = "continuity.runner.preflight.child"


class SlotCode(msgspec.Struct, frozen=True, kw_only=True):
    """The code a slot's preparation runs: a label (``r0``, ``rpack``, ``checkout``),
    the interpreter command that runs `module` with ``-m``, extra environment,
    and, when it cannot run it, why (`missing`)."""

    label: str
    command: list[str]
    env: dict[str, str] = msgspec.field(default_factory=dict)
    missing: str | None = None
    # The child module the build holds: builds exported before the preflight moved into
    # its package hold it as ``continuity.runner.preflight_child``.
    module: str = CHILD_MODULE


def checkout_code() -> SlotCode:
    """This checkout's code: this interpreter, importing the package it runs from."""
    from continuity.plan.guards import default_checkout

    package_root = default_checkout()
    return SlotCode(
        label="checkout", command=[sys.executable, "-B"], env={"PYTHONPATH": str(package_root)}
    )


class PreflightSlot(msgspec.Struct, frozen=True, kw_only=True):
    """One scheduled slot: a role (or, without one, a bare lookup arm), its arm, soul
    and reader binding, a suite and one trace of it, and the code that prepares it.

    Attributes:
        trace: the trace itself (a frozen holdout trace), or None when the preparing
            code builds `trace_id` from `suite` itself (a registered workload).
    """

    role: str | None
    arm: str
    soul: str
    reader_binding: str
    suite: str
    trace_id: str
    trace: TraceInput | None = None
    code: SlotCode

    @property
    def name(self) -> str:
        return f"{self.role or self.arm} {self.suite} {self.trace_id}"


class PhaseTime(msgspec.Struct, frozen=True, kw_only=True):
    """One phase's wall time against its watchdog (what the run deadline left it)."""

    seconds: float
    watchdog_seconds: float
    within: bool


class SlotFailure(msgspec.Struct, frozen=True, kw_only=True):
    """Why a slot's preparation or dry restore failed: one of `FAILURE_CLASSES`."""

    kind: str
    message: str


class SlotReport(msgspec.Struct, frozen=True, kw_only=True):
    """One slot of the preflight report.

    ``eligible`` is prepared, within the tree limits, restored and within the run
    deadline. ``rejected`` counts entries per rejected class (``rejected_first`` names
    the first of each, a path below the workspace). ``trace_key`` (the key of the trace
    the preparing code built or was given), ``checkpoint``, ``tree`` and ``snapshot``
    (the `PreflightSnapshot` record's digest) are None when the preparation stopped
    before it made them.
    """

    role: str | None
    arm: str
    soul: str
    reader_binding: str
    code: str
    suite: str
    trace_id: str
    eligible: bool
    prepared: bool
    within_limits: bool
    restored: bool
    within_deadline: bool
    files: int = 0
    total_bytes: int = 0
    largest_file_bytes: int = 0
    rejected: dict[str, int] = msgspec.field(default_factory=dict)
    rejected_first: dict[str, str] = msgspec.field(default_factory=dict)
    failure: SlotFailure | None = None
    trace_key: str | None = None
    checkpoint: str | None = None
    tree: str | None = None
    snapshot: str | None = None
    read_only_dirs_removed: int = 0
    preparation: PhaseTime | None = None
    dry_restore: PhaseTime | None = None
