"""`doit compare_aggregate`: join the six roles' verified units into planned slots,
per-role figures and the five contrasts (`continuity.roles.aggregate_render` writes them).

Everything is read and verified first (`continuity.roles.aggregate_read`). Then:

- **planned slots**: role x suite x trace x probe x repeat. The trace x probe x repeat
  slots of a suite are the union of what the roles' own runs planned (each run's
  ``lookup-slots.json``, written before any unit ran) and what they observed, so a role
  that is missing, or stopped early, is still planned for every slot another role
  planned. The registration's trace filter applies.
- **per role**: `continuity.report.lookup.lookup_table`'s figures over the role's slots
  (exact, exactWithFailures, failed feasible, missing, duplicate, infeasible ...), its
  launches' reasons kept beside them. A slot observed twice is a duplicate: counted with
  its occurrences, in neither exact accuracy nor calls and bytes.
- **contrasts** (`CONTRASTS`): per pair of roles, over the planned exact-value slots:
  planned, paired-completed (both completed and eligible), failure-inclusive (both
  completed or failed feasible; a failure counts as incorrect), the discordant correct
  counts (a only, b only) and the paired descriptive delta in percentage points.

These are descriptive counts of a scripted offline reader, not significance, power,
qualification, model-quality or treatment-benefit claims; the report says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from continuity.report.lookup import LookupRow, lookup_rows, lookup_table
from continuity.report.results import LookupArm
from continuity.roles.aggregate_read import RoleSuite, read_registration, read_role_suites
from continuity.roles.register import Workload
from continuity.roles.table import ROLES
from continuity.store import Store

__all__ = [
    "COMPARE_SCHEMA",
    "CONTRASTS",
    "DISCLAIMER",
    "PLANNED_SOURCE",
    "CompareReport",
    "Contrast",
    "RoleFigures",
    "SuiteLaunch",
    "aggregate",
    "build_report",
    "child_failed",
    "contrast",
]

COMPARE_SCHEMA = "continuity-lookup-compare-v1"
# (a, b, why): each row reports a - b.
CONTRASTS: tuple[tuple[str, str, str], ...] = (
    ("pack-only", "pack", "guidance (Rpack vs R0), soul S0"),
    ("soul-only", "pack", "soul (S1 vs S0), code R0"),
    ("shipping", "pack", "guidance and soul together"),
    ("native-soul", "native", "soul (S1 vs S0) on the native arm"),
    ("native", "pack", "context: native lookup vs the pack, R0 S0"),
)
DISCLAIMER = (
    "Descriptive paired counts of a scripted offline reader over the registered "
    "workload. They are not significance, power, qualification, model-quality or "
    "treatment-benefit claims. S1 roles reuse the frozen sizing budget and the registered "
    "reference classes: S1's feasibility is not re-measured."
)
PLANNED_SOURCE = (
    "Planned slots: the union of every role's lookup-slots.json (written by each run "
    "before its units) and its observed units, per suite, crossed with all six roles."
)

_SlotKey = tuple[str, int, str, str]  # (suite, repeat, trace id, probe id)


class SuiteLaunch(msgspec.Struct, frozen=True, kw_only=True):
    suite: str
    exit_code: int | None
    outcome: str | None
    missing_reason: str | None


class RoleFigures(msgspec.Struct, frozen=True, kw_only=True):
    """One role: its table row, its launches per suite and its lookup figures (None when
    no slot was planned for it at all)."""

    role: str
    arm: str
    code: str
    soul: str
    # present; failed (a child exited non-zero or its units did not complete, with a
    # verified receipt: its slots count, the failure is shown); partial (some suites
    # missing); missing
    status: str
    launches: list[SuiteLaunch]
    lookup: LookupArm | None


class Contrast(msgspec.Struct, frozen=True, kw_only=True):
    a: str
    b: str
    about: str
    planned: int  # planned exact-value (tool-identifier) slots
    paired_completed: int
    a_correct: int
    b_correct: int
    a_only: int  # discordant: a correct, b not (paired completed)
    b_only: int
    delta_pp: float | None  # (a_only - b_only) / paired_completed, in percentage points
    failure_inclusive: int
    a_only_with_failures: int
    b_only_with_failures: int
    delta_with_failures_pp: float | None


class CompareReport(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = COMPARE_SCHEMA
    registration_sha256: str
    registration_digest: str
    workload: Workload
    planned_source: str
    slots_planned: int  # per role (suite x trace x probe x repeat)
    roles: list[RoleFigures]
    contrasts: list[Contrast]
    disclaimer: str = DISCLAIMER


def _rows(suites: Sequence[RoleSuite]) -> dict[str, list[tuple[str, int, str, list[LookupRow]]]]:
    """Per role: (suite, repeat, trace id, rows) of every verified unit."""
    found: dict[str, list[tuple[str, int, str, list[LookupRow]]]] = defaultdict(list)
    for item in suites:
        for record in item.units:
            found[item.role.name].append(
                (item.suite, record.repeat, record.trace_id, lookup_rows(record))
            )
    return found


def _plan(
    suites: Sequence[RoleSuite],
    rows: dict[str, list[tuple[str, int, str, list[LookupRow]]]],
    work: Workload,
) -> tuple[dict[_SlotKey, str], dict[tuple[str, _SlotKey], str]]:
    """The planned slots with their category, and each role's own disposition of them."""
    planned: dict[_SlotKey, str] = {}
    disposition: dict[tuple[str, _SlotKey], str] = {}
    for item in suites:
        for slot in item.planned:
            key = (
                item.suite,
                int(str(slot.get("repeat"))),
                str(slot.get("trace_id")),
                str(slot.get("probe_id")),
            )
            planned.setdefault(key, str(slot.get("category", "")))
            disposition[(item.role.name, key)] = str(slot.get("disposition", ""))
    for units in rows.values():
        for suite, repeat, trace_id, unit_rows in units:
            for row in unit_rows:
                planned.setdefault((suite, repeat, trace_id, row.probe_id), row.category)
    if work.traces:
        planned = {k: v for k, v in planned.items() if k[2] in work.traces}
    return planned, disposition


def _role_figures(
    suites: Sequence[RoleSuite],
    rows: dict[str, list[tuple[str, int, str, list[LookupRow]]]],
    planned: dict[_SlotKey, str],
    disposition: dict[tuple[str, _SlotKey], str],
) -> list[RoleFigures]:
    figures = []
    for role in ROLES:
        mine = [s for s in suites if s.role.name == role.name]
        units = [(r, f"{s}/{t}", role.name, unit) for s, r, t, unit in rows.get(role.name, [])]
        slots: list[dict[str, Any]] = [
            {
                "repeat": key[1],
                "trace_id": f"{key[0]}/{key[2]}",
                "arm": role.name,
                "probe_id": key[3],
                "disposition": disposition.get((role.name, key), ""),
            }
            for key in sorted(planned)
        ]
        missing = sum(1 for s in mine if s.reason is not None)
        failed = sum(1 for s in mine if s.reason is None and child_failed(s.exit_code, s.outcome))
        figures.append(
            RoleFigures(
                role=role.name,
                arm=role.arm,
                code=role.code,
                soul=role.soul,
                status=(
                    "missing"
                    if missing == len(mine)
                    else "partial"
                    if missing
                    else "failed"
                    if failed
                    else "present"
                ),
                launches=[
                    SuiteLaunch(
                        suite=s.suite,
                        exit_code=s.exit_code,
                        outcome=s.outcome,
                        missing_reason=s.reason,
                    )
                    for s in mine
                ],
                lookup=lookup_table(units, slots).get(role.name),
            )
        )
    return figures


def child_failed(exit_code: int | None, outcome: str | None) -> bool:
    """A launch whose child exited non-zero or whose receipt records units that did not
    complete (its receipt verified, so its units are kept)."""
    return exit_code not in (0, None) or (outcome or "complete") != "complete"


def _outcomes(
    rows: list[tuple[str, int, str, list[LookupRow]]],
) -> dict[_SlotKey, str]:
    """Each slot observed exactly once, as ``correct``, ``incorrect`` (completed eligible
    exact-value slots), ``failed`` (failed feasible) or ``other`` (not scored)."""
    seen: dict[_SlotKey, list[LookupRow]] = defaultdict(list)
    for suite, repeat, trace_id, unit_rows in rows:
        for row in unit_rows:
            seen[(suite, repeat, trace_id, row.probe_id)].append(row)
    outcomes: dict[_SlotKey, str] = {}
    for key, found in seen.items():
        if len(found) != 1:
            continue  # a duplicate is ambiguous: never scored
        row = found[0]
        if row.category != "tool_identifier":
            outcomes[key] = "other"
        elif row.status == "valid" and row.correct is None:
            outcomes[key] = "unresolved"  # no right/wrong call: never paired
        elif row.status == "valid":
            outcomes[key] = "correct" if row.correct else "incorrect"
        elif row.status == "failed" and "admission_stopped" not in row.reason:
            outcomes[key] = "failed"
        else:
            outcomes[key] = "other"  # infeasible (a reference limitation) or unstarted
    return outcomes


def _pp(a_only: int, b_only: int, n: int) -> float | None:
    return round(100 * (a_only - b_only) / n, 4) if n else None


def contrast(
    pair: tuple[str, str, str], a: dict[_SlotKey, str], b: dict[_SlotKey, str], planned: int
) -> Contrast:
    """The paired figures of roles a and b from their slot outcomes (see `_outcomes`)."""
    scored = ("correct", "incorrect")
    inclusive = ("correct", "incorrect", "failed")
    both = [k for k in a.keys() & b.keys() if a[k] in scored and b[k] in scored]
    wide = [k for k in a.keys() & b.keys() if a[k] in inclusive and b[k] in inclusive]

    def only(keys: list[_SlotKey], x: dict[_SlotKey, str], y: dict[_SlotKey, str]) -> int:
        return sum(1 for k in keys if x[k] == "correct" and y[k] != "correct")

    return Contrast(
        a=pair[0],
        b=pair[1],
        about=pair[2],
        planned=planned,
        paired_completed=len(both),
        a_correct=sum(1 for k in both if a[k] == "correct"),
        b_correct=sum(1 for k in both if b[k] == "correct"),
        a_only=only(both, a, b),
        b_only=only(both, b, a),
        delta_pp=_pp(only(both, a, b), only(both, b, a), len(both)),
        failure_inclusive=len(wide),
        a_only_with_failures=only(wide, a, b),
        b_only_with_failures=only(wide, b, a),
        delta_with_failures_pp=_pp(only(wide, a, b), only(wide, b, a), len(wide)),
    )


def build_report(
    suites: Sequence[RoleSuite], work: Workload, raw: str, digest: str
) -> CompareReport:
    """The comparison of verified role suites (pure: no I/O)."""
    rows = _rows(suites)
    planned, disposition = _plan(suites, rows, work)
    outcomes = {role.name: _outcomes(rows.get(role.name, [])) for role in ROLES}
    exact_planned = sum(1 for category in planned.values() if category == "tool_identifier")
    return CompareReport(
        registration_sha256=raw,
        registration_digest=digest,
        workload=work,
        planned_source=PLANNED_SOURCE,
        slots_planned=len(planned),
        roles=_role_figures(suites, rows, planned, disposition),
        contrasts=[
            contrast(pair, outcomes[pair[0]], outcomes[pair[1]], exact_planned)
            for pair in CONTRASTS
        ],
    )


def aggregate(
    registration: Path, sha256: str, output: Path, store: Store | None = None
) -> CompareReport:
    """Verify every role suite of the run in `output` and join them (writes nothing:
    `continuity.roles.aggregate_render.write_compare` does). The registration must be
    the copy registered in `store` (the default store when None).

    Raises:
        RoleError: every refusal of `continuity.roles.aggregate_read`.
        InputError: ``input_not_a_directory`` (`output`), and the registration's.
    """
    reg, raw, digest = read_registration(registration, sha256, store or Store())
    return build_report(read_role_suites(output, reg, raw, digest), reg.workload, raw, digest)
