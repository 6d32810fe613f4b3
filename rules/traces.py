"""`doit traces`: its options, and one call (`continuity.commands.trace_build.traces`;
the uptodate check and the location line there too). `SUITE`, `SEEDS` and `TRACE` are
the suite-selecting options other task families share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from continuity.graph import task_action
from rules.params import OUT, STORE, SeedsOption, TaskSpec, param

if TYPE_CHECKING:
    from doit.task import Task

SUITE = param(
    "suite", str, "original", "original | hard | hard-distractors | smoke (one short trace)"
)
SEEDS = param(
    "seeds", SeedsOption("--seeds"), "", "generated-suite seeds, e.g. 101-124 (default 101-108)"
)

TRACE = param("trace", str, "", "only these trace ids (comma-separated)")


def _build(**options: Any) -> str:
    from continuity.commands.trace_build import TracesRequest, traces

    return traces(TracesRequest.of(options))


def _current(task: Task, values: Mapping[str, object]) -> bool:
    from continuity.commands.trace_build import TracesRequest, traces_current

    return traces_current(TracesRequest.of(task.options or {}))


def _where(options: Mapping[str, Any]) -> str:
    """An up-to-date run's location line."""
    from continuity.commands.trace_build import TracesRequest, traces_where

    return traces_where(TracesRequest.of(options))


def task_traces() -> TaskSpec:
    """Build, validate and store a trace suite in out/traces/<suite>/ (--suite --seeds --file)."""
    return {
        "actions": [task_action(_build)],
        "params": [
            SUITE,
            SEEDS,
            param("file", str, "", "validate (and store) one user-supplied trace file instead"),
            STORE,
            OUT,
        ],
        "uptodate": [_current],
        "meta": {"uptodate_line": _where},
        "verbosity": 2,
    }
