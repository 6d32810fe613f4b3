"""`doit compare_preflight`: the offline preparation feasibility check of lookup slots.

For every scheduled slot (a role, or a bare lookup arm, x suite x trace) the preflight
runs only the offline preparation child, once, in a private temporary root of its own
that is removed after the child's process group is gone
(`continuity.runner.preflight.slot`): the replay of the slot's trace into the lookup
checkpoint a probe of the slot would fork from, with its arm, reader binding and frozen
soul (`continuity.runner.preflight.child`). It then checks the prepared workspace against
the tree limits and dry-restores the verified snapshot over it
(`continuity.runner.preflight.tree`). Slots whose roles share a checkpoint (the same
arm and code) are still prepared once each, each in its own root: the report counts
slots, and the distinct checkpoints beside them.

The report (`PreflightReport`, schema `REPORT_SCHEMA`) gives, per slot, eligibility
(prepared, within the limits, restored and within the run deadline), file count, total
and largest bytes, the rejected-entry classes, and the elapsed time of the preparation
and of the dry restore against their watchdogs. The run deadline is the parent-enforced
watchdog of one lookup slot (`RUN_DEADLINE_NAME`, `LookupRun.watchdog_seconds`, 720 s):
the preparation may use all of it, the dry restore what the preparation left. Probe
time is not included (the probe deadline, cleanup allowance and turn safety timeout are
listed for reference only): passing is a free lower-bound check, never a proof that a
whole run with its probes fits. Preparation feasibility is independent of admission
eligibility (the sizing policy's slot classes).

Preflight authorizes nothing and is safe in CI: it never refuses because ``CI`` is set,
runs no probe and no model, takes no writer lease, reads no credential and consults no
consumption registry. Its records and snapshots (`REPORT_SCHEMA`,
`continuity.runner.preflight.tree.SNAPSHOT_SCHEMA`) have schemas of their own and can
never stand in for a probe's one-use prepared-boundary proof.

Slots are an input (`run_preflight` takes a list of `PreflightSlot`): `registered_slots`
makes them from a registration (the registered workload's suites and traces, the six
roles, each role's registered build); a frozen holdout source passes its own (each slot
carrying its `TraceInput`, prepared by `checkout_code`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec

from continuity.errors import CheckpointError
from continuity.interrupts import raise_if_interrupted
from continuity.lookup.receipts import LookupBinding
from continuity.outputs import write_output
from continuity.progress import Tick
from continuity.runner.lookup_run import LookupRun
from continuity.runner.preflight.launch import private_root
from continuity.runner.preflight.records import PreflightSlot, SlotCode, SlotReport, checkout_code
from continuity.runner.preflight.slot import run_slot
from continuity.runner.preflight.tree import TreeLimits, clear_tree
from continuity.store import resolve_store_path

__all__ = [
    "CHILD_PATH",
    "COUNTING",
    "PROBES_NOTE",
    "REPORT_FILE",
    "REPORT_SCHEMA",
    "RUN_DEADLINE_NAME",
    "TREE_LIMITS",
    "Deadlines",
    "PreflightReport",
    "PreflightSlot",
    "PreflightSource",
    "PreflightTotals",
    "checkout_code",
    "configured_deadlines",
    "preflight_failure",
    "registered_slots",
    "run_preflight",
    "suite_trace_ids",
    "summary_lines",
]

REPORT_SCHEMA = "continuity-lookup-preflight-v1"
REPORT_FILE = "preflight.json"
PROBES_NOTE = "a free lower-bound check: probes not included"
RUN_DEADLINE_NAME = "LookupRun.watchdog_seconds"
COUNTING = (
    "one preparation per scheduled slot (role or arm x suite x trace), each in its own "
    "private root; slots that share a checkpoint key are each prepared again"
)
# The preparation child a registered build must hold (relative to its export), and the
# module that runs it; a build exported before the preflight moved into its package
# holds the second pair.
CHILD_PATH = "continuity/runner/preflight/child.py"
_CHILD_PATHS = {
    CHILD_PATH: "continuity.runner.preflight.child",
    "continuity/runner/preflight_child.py": "continuity.runner.preflight_child",
}
# The tree limits every slot is checked against (the seed's; tests may patch them).
TREE_LIMITS = TreeLimits()


def _default(kind: type[msgspec.Struct], name: str) -> float:
    """The configured default of field `name` of `kind` (a deadline, in seconds)."""
    for field in msgspec.structs.fields(kind):
        if field.name == name:
            return float(field.default)
    raise KeyError(name)


class Deadlines(msgspec.Struct, frozen=True, kw_only=True):
    """The configured lookup deadlines, in seconds. Preparation and dry restore are
    timed against `run_deadline_seconds` (named by `run_deadline`); the probe's own
    deadlines are listed and not used: probe time is excluded."""

    run_deadline: str = RUN_DEADLINE_NAME
    run_deadline_seconds: float
    probe_deadline_seconds: float
    cleanup_seconds: float
    turn_safety_seconds: float


def configured_deadlines(run_deadline: float | None = None) -> Deadlines:
    """The configured deadlines; `run_deadline` replaces the run deadline (tests)."""
    return Deadlines(
        run_deadline_seconds=run_deadline or _default(LookupRun, "watchdog_seconds"),
        probe_deadline_seconds=_default(LookupBinding, "probe_deadline"),
        cleanup_seconds=_default(LookupBinding, "cleanup_seconds"),
        turn_safety_seconds=_default(LookupBinding, "turn_safety_seconds"),
    )


class PreflightSource(msgspec.Struct, frozen=True, kw_only=True):
    """What the slots were scheduled from: ``registration`` (its path, raw sha256 and
    canonical digest), or another kind with its own bindings (a holdout source)."""

    kind: str
    path: str
    sha256: str
    digest: str
    bindings: dict[str, str] = msgspec.field(default_factory=dict)


class PreflightTotals(msgspec.Struct, frozen=True, kw_only=True):
    """Slot counts, and the distinct checkpoint keys the prepared slots made (each slot
    prepares its own, in its own root: the trees differ by the root path they pin)."""

    slots: int
    eligible: int
    not_eligible: int
    distinct_checkpoints: int


class PreflightReport(msgspec.Struct, frozen=True, kw_only=True):
    """The preflight report (``preflight.json``)."""

    schema: str = REPORT_SCHEMA
    source: PreflightSource
    authorizes: bool = False
    probes_included: bool = False
    note: str = PROBES_NOTE
    counting: str = COUNTING
    deadlines: Deadlines
    limits: TreeLimits
    slots: list[SlotReport]
    totals: PreflightTotals


class _Role(msgspec.Struct, frozen=True):
    name: str
    arm: str
    code: str
    soul: str


class _Workload(msgspec.Struct, frozen=True):
    suites: list[str]
    traces: list[str]
    reader_binding: str


class _Build(msgspec.Struct, frozen=True):
    python: str
    files: dict[str, str]


class _Registration(msgspec.Struct, frozen=True):
    """What preflight reads of a `continuity.roles.register.Registration` (decoded by
    name from its content: the runner sits below the roles)."""

    workload: _Workload
    roles: list[_Role]
    builds: dict[str, _Build]


def _build_code(label: str, build: _Build) -> SlotCode:
    """A registered build's code: its venv's interpreter, isolated (``-I``: nothing of a
    work tree or ``PYTHON*`` variable), writing no bytecode into the hashed export."""
    held = [module for path, module in _CHILD_PATHS.items() if path in build.files]
    if not held:
        missing = (
            f"the registered {label} build has no {CHILD_PATH} (registered before "
            "compare_preflight existed); register again"
        )
        return SlotCode(label=label, command=[build.python, "-I", "-B"], missing=missing)
    return SlotCode(label=label, command=[build.python, "-I", "-B"], module=held[0])


def suite_trace_ids(suite: str, forbidden: Sequence[Path] = ()) -> list[str]:
    """The trace ids of `suite`, built in a private root of their own (removed).

    Raises:
        UsageError: ``suite_unknown``, ``lookup_preflight_root_invalid``.
    """
    from continuity.store import Store
    from continuity.traces.suites import build_suite

    root = private_root([*_own_roots(), *forbidden])
    try:
        built = build_suite(Store(root / "store"), suite, out_dir=root / "out")
        return [item.trace_id for item in built.items]
    finally:
        clear_tree(root)


def registered_slots(
    registration: msgspec.Struct,
    soul_files: Mapping[str, str],
    list_traces: Callable[[str], list[str]] = suite_trace_ids,
) -> list[PreflightSlot]:
    """The registration's scheduled slots: its roles (in order) x suites x traces (the
    registered trace filter, else every trace `list_traces` finds in the suite), each
    prepared by its role's registered build. `soul_files` maps a role's soul label to
    its frozen file (`continuity.roles.table.SOULS`)."""
    view = msgspec.convert(msgspec.to_builtins(registration), type=_Registration)
    work = view.workload
    codes = {label.lower(): _build_code(label, build) for label, build in view.builds.items()}
    traces = {suite: list(work.traces) or list_traces(suite) for suite in work.suites}
    return [
        PreflightSlot(
            role=role.name,
            arm=role.arm,
            soul=soul_files[role.soul],
            reader_binding=work.reader_binding,
            suite=suite,
            trace_id=trace_id,
            code=codes[role.code.lower()],
        )
        for role in view.roles
        for suite in work.suites
        for trace_id in traces[suite]
    ]


def _own_roots() -> list[Path]:
    """The checkout this package runs from and the user's store."""
    from continuity.plan.guards import default_checkout

    return [default_checkout(), resolve_store_path()]


def _totals(slots: list[SlotReport]) -> PreflightTotals:
    eligible = sum(slot.eligible for slot in slots)
    return PreflightTotals(
        slots=len(slots),
        eligible=eligible,
        not_eligible=len(slots) - eligible,
        distinct_checkpoints=len({slot.checkpoint for slot in slots if slot.checkpoint}),
    )


def run_preflight(
    slots: Sequence[PreflightSlot],
    source: PreflightSource,
    output: Path,
    *,
    forbidden: Sequence[Path] = (),
    check_code: Callable[[str], None] | None = None,
    run_deadline: float | None = None,
    limits: TreeLimits | None = None,
    progress: Tick | None = None,
) -> tuple[Path, PreflightReport]:
    """Attempt every slot (a failed one never stops the next), then write the report to
    ``<output>/preflight.json``; return its path and content.

    `forbidden` adds roots the private roots must stay out of (the registered
    checkouts); `check_code` re-verifies a slot's code by label before its preparation
    (a registered build: ``build_changed`` when it raises); `run_deadline` and
    `limits` replace the configured deadline and `TREE_LIMITS`.

    Raises:
        UsageError: ``lookup_preflight_root_invalid`` before any slot runs.
    """
    roots = [*_own_roots(), *forbidden]
    clear_tree(private_root(roots))  # refuse a bad temporary directory before any slot
    deadlines = configured_deadlines(run_deadline)
    chosen = limits or TREE_LIMITS
    reports: list[SlotReport] = []
    for position, slot in enumerate(slots, start=1):
        raise_if_interrupted()  # a signal something swallowed still stops the next slot
        done = run_slot(
            slot,
            limits=chosen,
            deadline=deadlines.run_deadline_seconds,
            forbidden=roots,
            check_code=check_code,
        )
        reports.append(done)
        if progress is not None:
            progress(
                position, len(slots), slot.name, "eligible" if done.eligible else "not eligible"
            )
    report = PreflightReport(
        source=source, deadlines=deadlines, limits=chosen, slots=reports, totals=_totals(reports)
    )
    path = output / REPORT_FILE
    write_output(path, msgspec.json.format(msgspec.json.encode(report)) + b"\n")
    return path, report


def _slot_name(slot: SlotReport) -> str:
    return f"{slot.role or slot.arm} {slot.suite} {slot.trace_id}"


def _why(slot: SlotReport) -> str:
    """The slot's first failure class, or rejected classes, with what it names."""
    if slot.failure is not None:
        return f"{slot.failure.kind} ({slot.failure.message})"
    if slot.rejected:
        return ", ".join(
            f"{kind} x{count} (first {slot.rejected_first.get(kind, '.')})"
            for kind, count in slot.rejected.items()
        )
    return "over the run deadline"


def summary_lines(report: PreflightReport, path: Path) -> list[str]:
    """One line per slot, the totals, the lower-bound note, and the location line."""
    deadline = report.deadlines.run_deadline_seconds
    lines = []
    for slot in report.slots:
        times = ""
        if slot.preparation is not None:
            times = f"; preparation {slot.preparation.seconds:.1f} s"
            if slot.dry_restore is not None:
                times += f" + dry restore {slot.dry_restore.seconds:.1f} s"
            times += f" of {deadline:.0f} s"
        state = "eligible" if slot.eligible else f"NOT eligible: {_why(slot)}"
        lines.append(
            f"{_slot_name(slot)} ({slot.code}): {state}; {slot.files} files, "
            f"{slot.total_bytes:,} bytes (largest {slot.largest_file_bytes:,}){times}"
        )
    totals = report.totals
    lines += [
        f"{totals.eligible} of {totals.slots} slots eligible ({totals.distinct_checkpoints} "
        f"distinct checkpoints; {report.counting})",
        f"timed against {report.deadlines.run_deadline} ({deadline:.0f} s); {PROBES_NOTE}; "
        "authorizes nothing",
        f"preflight in {path}",
    ]
    return lines


def preflight_failure(report: PreflightReport, path: Path) -> CheckpointError | None:
    """The error a report with an ineligible slot ends the command with, else None:
    ``lookup_preparation_invalid`` at the first such slot, naming its class."""
    failed = [slot for slot in report.slots if not slot.eligible]
    if not failed:
        return None
    first = failed[0]
    return CheckpointError(
        f"{len(failed)} of {len(report.slots)} slots are not eligible; first: {_why(first)}; "
        f"every slot is in {path}",
        code="lookup_preparation_invalid",
        location=f"slot {_slot_name(first)}",
    )
