"""`doit calibrate`: the judge over the labelled calibration suites, agreement per category."""

from __future__ import annotations

from typing import Unpack

from continuity.graph import task_action
from rules.params import OUT, STORE, Selection, SelectionOptions, TaskSpec, param


class CalibrateOptions(SelectionOptions, total=False):
    """`doit calibrate`: the judge and the labelled cases (no suite or seeds: `Selection`
    reads only the store and output directory)."""

    judge_model: str
    judge_effort: str
    provider: str
    base_url: str
    credentials: str
    cases: str


def _calibrate(**options: Unpack[CalibrateOptions]) -> str:
    from continuity.probes.calibration import render_table
    from continuity.runner.judge_calibration import (
        run_calibration,
        suite_heading,
        unresolved_line,
    )

    chosen = Selection(options)
    result, md, js = run_calibration(options, str(chosen.store.root), chosen.out)
    for entry in result.suites:
        print(f"judge {result.judge} on {suite_heading(entry)}:")
        print(render_table(entry.agreement), end="")
        print(unresolved_line(entry))
    return f"calibrate: judge agreement written to {md} (and {js.name})"


def task_calibrate() -> TaskSpec:
    """Run the judge over every labelled calibration suite and print its agreement.

    Held-out suites come first; the tuning suite's figure is marked an upper bound. Each
    suite also says how many cases the deterministic scorer leaves unresolved and how
    often the judge agrees on those."""
    return {
        "actions": [task_action(_calibrate)],
        "params": [
            param(
                "judge_model",
                str,
                "",
                "judge provider:model (default: the current profile's judge, "
                "openai:gpt-6.1-sol; anthropic:claude-sonnet-5-5 on --provider anthropic)",
            ),
            param("judge_effort", str, "", "judge reasoning effort (real only)"),
            param(
                "provider",
                str,
                "scripted",
                "scripted (offline, the scripted judge) | openai-chat | openai-responses | "
                "anthropic",
            ),
            param("base_url", str, "", "endpoint base URL (default: the provider's public API)"),
            param("credentials", str, "", "credentials file (real providers only)"),
            param(
                "cases",
                str,
                "",
                "grade only this calibration suite, one JSONL file (default: every held-out "
                "suite, then the tuning suite fixtures/calibration/answers-v1.jsonl, "
                "marked an upper bound)",
            ),
            STORE,
            OUT,
        ],
        "verbosity": 2,
    }
