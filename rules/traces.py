"""`doit traces`: build, validate, store and materialise a trace suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE

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
    "type": str,
    "default": "",
    "help": "generated-suite seeds, e.g. 101-124 (default 101-108)",
}


def _build(suite: str, seeds: str, file: str, store: str, out: str) -> str:
    from continuity.progress import progress
    from continuity.store import Store
    from continuity.traces.keys import parse_seeds, resolve_out_path
    from continuity.traces.suites import build_suite, store_trace_file

    artifact_store = Store(store or None)
    out_dir = resolve_out_path(out or None)
    if file:
        item = store_trace_file(artifact_store, Path(file), out_dir=out_dir)
        return f"traces: {file} is valid; stored as {item.digest} ({item.trace_id})"
    chosen = parse_seeds(seeds) if seeds else None
    with progress(f"traces {suite}") as tick:
        result = build_suite(artifact_store, suite, chosen, out_dir=out_dir, progress=tick)
    return (
        f"traces: {len(result.items)} {suite} traces ({result.built} built, "
        f"{len(result.items) - result.built} from the store); manifest at "
        f"{result.manifest_path}"
    )


def _current(task: Any, values: Any) -> bool:
    from continuity.store import Store
    from continuity.traces.keys import parse_seeds, resolve_out_path, suite_is_current

    options = task.options or {}
    if options.get("file"):
        return False  # validating a user file is the point of the call
    try:
        seeds = parse_seeds(options["seeds"]) if options.get("seeds") else None
    except Exception:
        return False  # the action reports the error
    return suite_is_current(
        Store(options.get("store") or None),
        options.get("suite", "original"),
        seeds,
        out_dir=resolve_out_path(options.get("out") or None),
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
