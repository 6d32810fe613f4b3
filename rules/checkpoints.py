"""`doit checkpoints`: its options, and one call
(`continuity.commands.checkpoint_build.checkpoints`; the uptodate check and the location
line there too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from continuity.graph import task_action
from rules.params import MAX_JOBS, OUT, STORE, IntOption, TaskSpec, param
from rules.traces import SEEDS, SUITE, TRACE

if TYPE_CHECKING:
    from doit.task import Task


def _build(**options: Any) -> str:
    from continuity.commands.checkpoint_build import CheckpointsRequest, checkpoints

    return checkpoints(CheckpointsRequest.of(options))


def _current(task: Task, values: Mapping[str, object]) -> bool:
    from continuity.commands.checkpoint_build import CheckpointsRequest, checkpoints_current

    return checkpoints_current(CheckpointsRequest.of(task.options or {}))


def _where(options: Mapping[str, Any]) -> str:
    """An up-to-date run's location line (with --arms: the arm samples' manifest)."""
    from continuity.commands.checkpoint_build import CheckpointsRequest, checkpoints_where

    return checkpoints_where(CheckpointsRequest.of(options))


def task_checkpoints() -> TaskSpec:
    """Replay a suite into checkpoints; with --arms, cross each arm's boundary per trace."""
    return {
        "actions": [task_action(_build)],
        "params": [
            SUITE,
            SEEDS,
            param(
                "arms",
                str,
                "",
                "also fork each trace's checkpoint per arm and cross its boundary "
                "(comma-separated arm ids, or all)",
            ),
            param(
                "jobs",
                IntOption("--jobs", 1, MAX_JOBS),
                0,
                "traces to run in parallel with --arms (default: up to 2 cores)",
            ),
            TRACE,
            STORE,
            OUT,
        ],
        "uptodate": [_current],
        "meta": {"uptodate_line": _where},
        "verbosity": 2,
    }
