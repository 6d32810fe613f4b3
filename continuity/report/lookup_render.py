"""The lookup report's tables (lookup-allowed-v1) for summary.md and report.html."""

from __future__ import annotations

from continuity.report.results import LookupArm
from continuity.report.sections import Table, num, pct

__all__ = ["lookup_sections"]


def _coverage_row(arm: str, cell: LookupArm) -> list[str]:
    return [
        arm,
        str(cell.slots_planned),
        str(cell.slots_present),
        str(cell.missing),
        str(cell.inventory_infeasible),
        str(cell.blocked),
        str(cell.duplicate),
        str(cell.unstarted),
        str(cell.failed),
    ]


def _result_row(arm: str, cell: LookupArm) -> list[str]:
    exact, with_failures = cell.exact, cell.exact_with_failures
    return [
        arm,
        ", ".join(cell.readers) or "-",
        str(cell.unknown_provenance),
        f"{pct(exact.rate)} ({exact.correct}/{exact.n})",
        f"{pct(with_failures.rate)} ({with_failures.correct}/"
        f"{with_failures.n}; {cell.failed_feasible} failed)",
        str(cell.witnessed_recovery),
        num(cell.mean_calls),
        num(cell.mean_bytes, 0),
        num(cell.mean_latency_s, 2),
        ", ".join(f"{k} {v}" for k, v in cell.exhausted.items()) or "-",
        str(cell.reader_budget_stops),
    ]


def lookup_sections(lookup: dict[str, LookupArm]) -> list[Table]:
    """Coverage (every planned slot), results, and the duplicate slots one by one."""
    duplicates = [
        [arm, f"r{d.repeat}", d.trace_id, d.probe_id, str(d.occurrences)]
        for arm, cell in lookup.items()
        for d in cell.duplicate_occurrences
    ]
    return [
        (
            "Lookup coverage (lookup-allowed-v1)",
            [
                "arm",
                "planned",
                "observed once",
                "missing",
                "skipped (inventory-infeasible)",
                "blocked (unknown feasibility)",
                "duplicate",
                "unstarted",
                "failed",
            ],
            [_coverage_row(arm, cell) for arm, cell in lookup.items()],
            "Every planned slot is kept. Missing: never observed. Skipped: the frozen "
            "policy cannot run the slot (neither a failure nor missing). Blocked: the "
            "policy never measured the slot (lookup_unknown_feasibility), counted "
            "independently of observation, so it can overlap missing or duplicate. "
            "Duplicate: observed more than once (e.g. by unit files in two chunk folders); "
            "ambiguous, so no occurrence enters exact accuracy, the call, byte and latency "
            "figures, any accuracy, outcome or paired table, or the spend (never first- or "
            "last-wins).",
        ),
        (
            "Lookup (lookup-allowed-v1)",
            [
                "arm",
                "reader",
                "unknown provenance",
                "exact",
                "exact with failures",
                "witnessed recovery",
                "calls/slot",
                "bytes/slot",
                "latency s",
                "exhausted",
                "reader budget stops",
            ],
            [_result_row(arm, cell) for arm, cell in lookup.items()],
            "Over slots observed exactly once. Exact: correct over completed eligible "
            "tool-identifier slots (skipped slots are in neither part). Exact with "
            "failures also counts failed feasible slots as incorrect; missing and "
            "unstarted slots are coverage only. Witnessed recovery: initially absent, "
            "source returned whole with a verified digest, and correct; descriptive, not "
            "causal. Exhaustion is an explicit mechanics outcome of the metered budget; "
            "the scripted reader's answers are not a semantic evaluation.",
        ),
        (
            "Lookup duplicate slots",
            ["arm", "repeat", "trace", "probe", "occurrences"],
            duplicates,
            "Each slot observed more than once, with how many times; none of its "
            "occurrences is scored or costed anywhere in this report.",
        ),
    ]
