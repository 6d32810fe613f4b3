"""`doit traces`: build, validate, store and materialise a trace suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE, SeedsOption, Selection, selection_or_none

SUITE: dict[str, Any] = {
    "name": "suite",
    "long": "suite",
    "type": str,
    "default": "original",
    "help": "original | hard | hard-distractors",
}
SEEDS: dict[str, Any] = {
    "name": "seeds",
    "long": "seeds",
    "type": SeedsOption("--seeds"),
    "default": "",
    "help": "generated-suite seeds, e.g. 101-124 (default 101-108)",
}


def _build(**options: Any) -> str:
    from continuity.progress import progress
    from continuity.traces.suites import build_suite, store_trace_file

    chosen = Selection(options)
    if options.get("file"):
        item = store_trace_file(chosen.store, Path(options["file"]), out_dir=chosen.out)
        return f"traces: {options['file']} is valid; stored as {item.digest} ({item.trace_id})"
    with progress(f"traces {chosen.suite}") as tick:
        result = build_suite(
            chosen.store, chosen.suite, chosen.seeds, out_dir=chosen.out, progress=tick
        )
    return (
        f"traces: {len(result.items)} {chosen.suite} traces ({result.built} built, "
        f"{len(result.items) - result.built} from the store); manifest at "
        f"{result.manifest_path}"
    )


def _current(task: Any, values: Any) -> bool:
    from continuity.traces.keys import suite_is_current

    if (task.options or {}).get("file"):
        return False  # validating a user file is the point of the call
    chosen = selection_or_none(task)
    return chosen is not None and suite_is_current(
        chosen.store, chosen.suite, chosen.seeds, out_dir=chosen.out
    )


def task_traces() -> dict[str, Any]:
    """Build, validate and store a trace suite in out/traces/<suite>/ (--suite --seeds --file)."""
    return {
        "actions": [task_action(_build)],
        "params": [
            SUITE,
            SEEDS,
            {
                "name": "file",
                "long": "file",
                "type": str,
                "default": "",
                "help": "validate (and store) one user-supplied trace file instead",
            },
            STORE,
            OUT,
        ],
        "uptodate": [_current],
        "verbosity": 2,
    }
