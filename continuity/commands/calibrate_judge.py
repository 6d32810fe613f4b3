"""``doit calibrate``: the judge over the labelled calibration suites, its agreement per
category printed suite by suite and written under ``<out>/calibration/``
(`continuity.runner.judge_calibration`)."""

from __future__ import annotations

from continuity.commands.selection import Selection
from continuity.requests import Request

__all__ = ["CalibrateRequest", "calibrate"]


class CalibrateRequest(Request, frozen=True, kw_only=True):
    """`doit calibrate`: the judge (provider kind, ``provider:model``, effort, endpoint,
    credentials file, output cap per call) and the labelled cases ("" and 0 are each
    option's default: the current profile's judge, the provider's public API, 4,096
    tokens, every held-out suite then the tuning suite); ``unresolved_only`` judges only
    the cases the deterministic scorer leaves unresolved."""

    judge_model: str = ""
    judge_effort: str = ""
    provider: str = "scripted"
    base_url: str = ""
    credentials: str = ""
    max_output_tokens: int = 0
    cases: str = ""
    unresolved_only: bool = False


def calibrate(request: CalibrateRequest) -> str:
    """Judge every suite the request selects, print each one's agreement table and the
    scorer's unresolved cases, and write the result; the summary line names the file.

    Raises:
        UsageError: ``store_path_invalid`` or ``out_path_invalid`` (`Selection`), or a
            refused judge (`continuity.runner.judge_calibration.judge_for`).
        CalibrationInvalid: a suite file that cannot be read.
    """
    from continuity.probes.calibration import render_table
    from continuity.runner.judge_calibration import (
        JudgeChoice,
        run_calibration,
        suite_heading,
        unresolved_line,
    )

    chosen = Selection(request)
    choice = JudgeChoice(
        provider=request.provider,
        judge_model=request.judge_model,
        judge_effort=request.judge_effort,
        base_url=request.base_url,
        credentials=request.credentials,
        max_output_tokens=request.max_output_tokens,
    )
    result, md, js = run_calibration(
        choice,
        request.cases,
        str(chosen.store.root),
        chosen.out,
        unresolved_only=request.unresolved_only,
    )
    for entry in result.suites:
        print(f"judge {result.judge} on {suite_heading(entry)}:")
        print(render_table(entry.agreement), end="")
        print(unresolved_line(entry))
    return f"calibrate: judge agreement written to {md} (and {js.name})"
