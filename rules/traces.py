"""`doit traces`: build, validate, store and materialise a trace suite."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from continuity.graph import task_action
from rules.params import (
    OUT,
    STORE,
    SeedsOption,
    Selection,
    SelectionOptions,
    TaskSpec,
    param,
    selection_or_none,
)

if TYPE_CHECKING:
    from doit.task import Task

SUITE = param(
    "suite", str, "original", "original | hard | hard-distractors | smoke (one short trace)"
)
SEEDS = param(
    "seeds", SeedsOption("--seeds"), "", "generated-suite seeds, e.g. 101-124 (default 101-108)"
)

TRACE = param("trace", str, "", "only these trace ids (comma-separated)")


class TracesOptions(SelectionOptions, total=False):
    """`doit traces`: the selection, or one user file."""

    file: str


def _build(**options: Unpack[TracesOptions]) -> str:
    from continuity.progress import progress
    from continuity.traces.suites import build_suite, store_trace_file

    chosen = Selection(options)
    file = options.get("file")
    if file:
        item = store_trace_file(chosen.store, Path(file), out_dir=chosen.out)
        return f"traces: {file} is valid; stored as {item.digest} ({item.trace_id})"
    with progress(f"traces {chosen.suite}") as tick:
        result = build_suite(
            chosen.store, chosen.suite, chosen.seeds, out_dir=chosen.out, progress=tick
        )
    return (
        f"traces: {len(result.items)} {chosen.suite} traces ({result.built} built, "
        f"{len(result.items) - result.built} from the store); manifest at "
        f"{result.manifest_path}"
    )


def _current(task: Task, values: Mapping[str, object]) -> bool:
    from continuity.traces.keys import suite_is_current

    options: TracesOptions = task.options or TracesOptions()
    if options.get("file"):
        return False  # validating a user file is the point of the call
    chosen = selection_or_none(task)
    return chosen is not None and suite_is_current(
        chosen.store, chosen.suite, chosen.seeds, out_dir=chosen.out
    )


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


def _where(options: Mapping[str, Any]) -> str:
    """An up-to-date run's location line."""
    chosen = Selection(options)
    manifest = chosen.out / "traces" / chosen.suite / "manifest.json"
    return f"traces: {chosen.suite} up to date; manifest at {manifest}"
