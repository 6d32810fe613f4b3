"""`doit checkpoints`: replay a suite's traces into content-addressed checkpoints."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE
from rules.traces import SEEDS, SUITE


def _build(suite: str, seeds: str, trace: str, store: str, out: str) -> str:
    from continuity.progress import progress
    from continuity.runner.checkpoints import build_checkpoints
    from continuity.store import Store
    from continuity.traces.keys import parse_seeds, resolve_out_path

    chosen = parse_seeds(seeds) if seeds else None
    with progress(f"checkpoints {suite}") as tick:
        results, manifest = build_checkpoints(
            Store(store or None),
            suite,
            chosen,
            traces=trace or None,
            out_dir=resolve_out_path(out or None),
            progress=tick,
        )
    built = sum(r.status == "built" for r in results)
    return (
        f"checkpoints: {len(results)} {suite} checkpoints ({built} replayed, "
        f"{len(results) - built} from the store); manifest at {manifest}"
    )


def _current(task: Any, values: Any) -> bool:
    from continuity.runner.checkpoints import checkpoints_current
    from continuity.store import Store
    from continuity.traces.keys import parse_seeds, resolve_out_path

    options = task.options or {}
    try:
        seeds = parse_seeds(options["seeds"]) if options.get("seeds") else None
    except Exception:
        return False  # the action reports the error
    return checkpoints_current(
        Store(options.get("store") or None),
        options.get("suite", "original"),
        seeds,
        traces=options.get("trace") or None,
        out_dir=resolve_out_path(options.get("out") or None),
    )


def task_checkpoints() -> dict[str, Any]:
    """Replay a suite's traces through the harness into checkpoints (--suite --seeds --trace)."""
    return {
        "actions": [task_action(_build)],
        "params": [
            SUITE,
            SEEDS,
            {
                "name": "trace",
                "long": "trace",
                "type": str,
                "default": "",
                "help": "only these trace ids (comma-separated)",
            },
            STORE,
            OUT,
        ],
        "uptodate": [_current],
        "verbosity": 2,
    }
