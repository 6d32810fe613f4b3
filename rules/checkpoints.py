"""`doit checkpoints`: replay a suite's traces into content-addressed checkpoints."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE, Selection, selection_or_none
from rules.traces import SEEDS, SUITE


def _build(**options: Any) -> str:
    from continuity.progress import progress
    from continuity.runner.checkpoints import build_checkpoints

    chosen = Selection(options)
    with progress(f"checkpoints {chosen.suite}") as tick:
        results, manifest = build_checkpoints(
            chosen.store,
            chosen.suite,
            chosen.seeds,
            traces=options.get("trace") or None,
            out_dir=chosen.out,
            progress=tick,
        )
    built = sum(r.status == "built" for r in results)
    return (
        f"checkpoints: {len(results)} {chosen.suite} checkpoints ({built} replayed, "
        f"{len(results) - built} from the store); manifest at {manifest}"
    )


def _current(task: Any, values: Any) -> bool:
    from continuity.runner.checkpoints import checkpoints_current

    chosen = selection_or_none(task)
    return chosen is not None and checkpoints_current(
        chosen.store,
        chosen.suite,
        chosen.seeds,
        traces=(task.options or {}).get("trace") or None,
        out_dir=chosen.out,
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
