"""`doit checkpoints`: replay a suite's traces into content-addressed checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from continuity.graph import task_action
from rules.params import (
    MAX_JOBS,
    OUT,
    STORE,
    IntOption,
    Selection,
    SelectionOptions,
    TaskSpec,
    param,
    selection_or_none,
)
from rules.traces import SEEDS, SUITE, TRACE

if TYPE_CHECKING:
    from doit.task import Task


class CheckpointsOptions(SelectionOptions, total=False):
    """`doit checkpoints`: the selection, and the arms to fork per trace."""

    arms: str
    jobs: int
    trace: str


def _build(**options: Unpack[CheckpointsOptions]) -> str:
    from continuity.progress import progress
    from continuity.runner.checkpoints import build_checkpoints

    chosen = Selection(options)
    arms = options.get("arms")
    if arms:
        from continuity.runner.samples import DEFAULT_JOBS, build_arm_samples

        with progress(f"arms {chosen.suite}") as tick:
            records, path, built = build_arm_samples(
                chosen.store,
                chosen.suite,
                chosen.seeds,
                arms=arms,
                traces=options.get("trace") or None,
                out_dir=chosen.out,
                progress=tick,
                jobs=int(options.get("jobs") or 0) or DEFAULT_JOBS,
            )
        counts: dict[str, int] = {}
        for record in records:
            status = record.classification.status
            counts[status] = counts.get(status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        return (
            f"arms: {len(records)} samples ({built} run, {len(records) - built} from the "
            f"store): {summary}; manifest at {path}"
        )
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


def _current(task: Task, values: Mapping[str, object]) -> bool:
    from continuity.runner.checkpoints import checkpoints_current

    chosen = selection_or_none(task)
    options: CheckpointsOptions = task.options or CheckpointsOptions()
    arms = options.get("arms")
    if chosen is not None and arms:
        from continuity.runner.samples import arm_samples_current

        return arm_samples_current(
            chosen.store,
            chosen.suite,
            chosen.seeds,
            arms=arms,
            traces=options.get("trace") or None,
            out_dir=chosen.out,
        )
    return chosen is not None and checkpoints_current(
        chosen.store,
        chosen.suite,
        chosen.seeds,
        traces=options.get("trace") or None,
        out_dir=chosen.out,
    )


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


def _where(options: Mapping[str, Any]) -> str:
    """An up-to-date run's location line (with --arms: the arm samples' manifest)."""
    chosen = Selection(options)
    what = "arms" if options.get("arms") else "checkpoints"
    name = "arms.json" if options.get("arms") else "manifest.json"
    manifest = chosen.out / "checkpoints" / chosen.suite / name
    return f"{what}: {chosen.suite} up to date; manifest at {manifest}"
