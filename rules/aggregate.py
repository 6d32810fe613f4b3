"""`doit aggregate` and `doit score`: their options, and one call each
(`continuity.commands.aggregation`: `aggregate`, `score`; aggregate's uptodate check,
`aggregate_current`, and its location line, `aggregate_where`).

``--fail-under PCT`` (`PercentOption`: a percentage from 0 to 100) gates the run on
accuracy: with it the task always runs, so the gate is always evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from continuity.errors import UsageError
from continuity.graph import task_action
from rules.params import OUT, STORE, FloatOption, TaskSpec, param
from rules.plan import PRICING

if TYPE_CHECKING:
    from doit.task import Task

__all__ = [
    "FAIL_UNDER",
    "READ_RUN",
    "RUN_DIR",
    "SCORER",
    "PercentOption",
    "task_aggregate",
    "task_score",
]

# aggregate and score: which run to read (none named: the most recent one).
READ_RUN = param("run", str, "", "run name under <out>/runs/ (default: the most recent run)")


class PercentOption:
    """A percentage from 0 to 100 (``60`` is 60 %, not 0.6), as a doit parameter type.

    Raises:
        ValueError: the coded line ``option_invalid: ... (at OPTION)`` (doit's parser).
    """

    def __init__(self, option: str) -> None:
        self.option = option
        self._number = FloatOption(option, 0.0, inclusive=True)

    def __repr__(self) -> str:
        return "<percent 0 to 100>"

    def __call__(self, text: str) -> float | None:
        value = self._number(text)
        if value > 100:
            refusal = UsageError(
                f"{value:g} is above 100: give a percentage (--fail-under 60 is 60 %)",
                code="option_invalid",
                location=self.option,
            )
            raise ValueError(str(refusal))
        return value


def _aggregate(**options: Any) -> str:
    from continuity.commands.aggregation import AggregateRequest, aggregate

    return aggregate(AggregateRequest.of(options))


def _current(task: Task, values: Mapping[str, object]) -> bool:
    """doit's uptodate: the run's stamp matches a fresh key (never with --fail-under)."""
    from continuity.commands.aggregation import AggregateRequest, aggregate_current

    return aggregate_current(AggregateRequest.of(task.options or {}))


def _where(options: Mapping[str, Any]) -> str:
    """An up-to-date run's location line."""
    from continuity.commands.aggregation import AggregateRequest, aggregate_where

    return aggregate_where(AggregateRequest.of(options))


def _score(**options: Any) -> str:
    from continuity.commands.aggregation import ScoreRequest, score

    return score(ScoreRequest.of(options))


RUN_DIR = param("run_dir", str, "", "a run directory (a real run's --out); overrides --run")
SCORER = param(
    "scorer",
    str,
    "current",
    "current (the current scorer's grades; default) | original (the unit files' grades)",
)

FAIL_UNDER = param(
    "fail_under",
    PercentOption("--fail-under"),
    None,
    "exit 3 (accuracy_below_threshold) when any arm's overall accuracy in any suite is "
    "below this percentage (0-100; 60 means 60 %); checked on every call",
)


def task_aggregate() -> TaskSpec:
    """Aggregate a run's units into results.json, summary.md and report.html (incremental)."""
    return {
        "actions": [task_action(_aggregate)],
        "params": [READ_RUN, RUN_DIR, PRICING, SCORER, FAIL_UNDER, STORE, OUT],
        "uptodate": [_current],
        "meta": {"uptodate_line": _where},
        "verbosity": 2,
    }


def task_score() -> TaskSpec:
    """Grade a run's recorded answers with the current scorer into new score artifacts."""
    return {
        "actions": [task_action(_score)],
        "params": [READ_RUN, RUN_DIR, STORE, OUT],
        "verbosity": 2,
    }
