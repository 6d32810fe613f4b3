"""`doit compare`: its options, and one call (`continuity.commands.comparison.compare`)."""

from __future__ import annotations

from typing import Any

from continuity.commands.comparison import NO_MAX_DROP
from continuity.graph import task_action
from rules.params import OUT, STORE, DirOption, FloatOption, TaskSpec, param

__all__ = ["task_compare"]


def _compare(**options: Any) -> str:
    from continuity.commands.comparison import CompareRequest, compare

    return compare(CompareRequest.of(options))


def task_compare() -> TaskSpec:
    """Compare two runs sample by sample: paired deltas, McNemar p, bootstrap intervals."""
    return {
        "actions": [task_action(_compare)],
        "params": [
            param("base", str, "", "the run before the change: a run name or a run directory"),
            param("head", str, "", "the run after the change: a run name or a run directory"),
            param(
                "scorer",
                str,
                "current",
                "current (both runs graded by this checkout's scorer; default) | original "
                "(each unit file's own grades)",
            ),
            param(
                "out_dir",
                DirOption("--out-dir", "out_path_invalid"),
                "",
                "where to write compare.json, .md and .html "
                "(default: <out>/compare/<base>-vs-<head>)",
            ),
            param(
                "fail_on_regression",
                bool,
                False,
                "exit 3 when any suite/arm accuracy drops significantly",
            ),
            param(
                "max_drop",
                FloatOption("--max-drop", 0.0, inclusive=True),
                NO_MAX_DROP,
                "exit 3 when any suite/arm accuracy drops significantly by more than this "
                "many percentage points (default: off)",
            ),
            STORE,
            OUT,
        ],
        "verbosity": 2,
    }
