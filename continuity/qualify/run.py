"""Running a selection: one evidence package per case attempt, then the summary.

For each selected case: a new attempt package (`continuity.qualify.package`), the fault
(`continuity.qualify.faults`) in the attempt's ``work/``, the assertion inputs cloned,
the verdict graded from the clone, the outcome and timings written. A fault that could
not be set up at all is ``infrastructure_failed`` with its code (its verdict is
whatever its receipts show, usually ``unexercised``). Nothing is retried. The summary
names the plan's scope (``full`` only for every registered case, else ``partial
n/N``); any failed verdict makes `run_selection` raise ``qualify_failed`` (exit 3)
after every package is written.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from continuity.errors import ContinuityError, GateFailed
from continuity.qualify.faults import FAULTS, FaultRun
from continuity.qualify.graders import Verdict
from continuity.qualify.package import new_attempt
from continuity.qualify.select import Selection
from continuity.runner.manifest import revision_label

__all__ = ["run_selection"]


def run_selection(
    selection: Selection, out: Path, say: Callable[[str], None] = print
) -> list[tuple[str, Verdict, Path]]:
    """Run every selected case once (module doc); the (case id, verdict, package) list.

    Raises:
        GateFailed: ``qualify_failed`` when a verdict is ``fail`` (packages written).
    """
    revision = revision_label()
    results = []
    for case in selection.cases:
        attempt = new_attempt(out, case, revision)
        say(f"qualify: {case.id} ({case.knobs.signal}, hold {case.knobs.interval_s:g} s) ...")
        try:
            fault = FAULTS[case.name](attempt.work, case.knobs, case.id)
            outcome, code = "completed", None
        except ContinuityError as error:
            fault, outcome, code = FaultRun(), "infrastructure_failed", error.code
        except (OSError, subprocess.SubprocessError):  # the workload could not be run
            fault, outcome, code = FaultRun(), "infrastructure_failed", "qualify_workload_failed"
        attempt.clone_inputs(fault.affected)
        verdict = attempt.grade(fault.expected_code)
        attempt.finish(outcome, code, fault.timings)
        causes = f" ({', '.join(verdict.causes)})" if verdict.causes else ""
        say(f"qualify: {case.id}: {verdict.status}{causes}; package {attempt.root}")
        results.append((case.id, verdict, attempt.root))
    passed = sum(1 for _, v, _ in results if v.status == "pass")
    say(f"qualify: plan {selection.plan}, {selection.scope}: {passed} of {len(results)} passed")
    failed = [case_id for case_id, v, _ in results if v.status == "fail"]
    if failed:
        raise GateFailed(
            f"{len(failed)} case(s) failed: {', '.join(failed)}",
            code="qualify_failed",
            location=selection.plan,
        )
    return results
