"""`doit calibrate`: the judge over the labelled calibration suites, agreement per category."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, OUTPUT_CAP, STORE, TaskSpec, param


def _calibrate(**options: Any) -> str:
    from continuity.commands.calibrate_judge import CalibrateRequest, calibrate

    return calibrate(CalibrateRequest.of(options))


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
            param(
                "credentials",
                str,
                "",
                "credentials file (real providers only; a loopback endpoint needs none)",
            ),
            param(
                "max_output_tokens",
                OUTPUT_CAP,
                0,
                "the output cap of each judge call (real only; default 4096): a small "
                "local model that never stops needs a low one",
            ),
            param(
                "cases",
                str,
                "",
                "grade only this calibration suite, one JSONL file (default: every held-out "
                "suite, then the tuning suite fixtures/calibration/answers-v1.jsonl, "
                "marked an upper bound)",
            ),
            param(
                "unresolved_only",
                bool,
                False,
                "judge only the cases the deterministic scorer leaves unresolved, the ones a "
                "run hands the judge (fewer calls; each suite's figure is then theirs alone)",
            ),
            STORE,
            OUT,
        ],
        "verbosity": 2,
    }
