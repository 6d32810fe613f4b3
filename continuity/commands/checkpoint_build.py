"""``doit checkpoints``: a suite's traces replayed into content-addressed checkpoints.

`checkpoints` is the command's entry point; `rules/checkpoints.py` declares its options
and calls it with them typed once (`CheckpointsRequest`). With ``--arms`` it also forks
each trace's checkpoint per arm and crosses the arm's boundary (the arm samples,
`continuity.runner.samples`). `checkpoints_current` is the task's uptodate check and
`checkpoints_where` an up-to-date run's location line.
"""

from __future__ import annotations

from continuity.commands.selection import Selection
from continuity.errors import ContinuityError
from continuity.requests import SuiteRequest

__all__ = ["CheckpointsRequest", "checkpoints", "checkpoints_current", "checkpoints_where"]


class CheckpointsRequest(SuiteRequest, frozen=True, kw_only=True):
    """``doit checkpoints``: the selection, the arms to fork per trace ("": none;
    comma-separated arm ids, or all), the traces to run in parallel with arms (0: the
    default) and the trace ids to build ("": every trace of the suite)."""

    arms: str = ""
    jobs: int = 0
    trace: str = ""


def checkpoints(request: CheckpointsRequest) -> str:
    """Build the suite's checkpoints (with ``--arms``: its arm samples); returns the
    summary line."""
    from continuity.progress import progress
    from continuity.runner.checkpoints import build_checkpoints

    chosen = Selection(request)
    arms = request.arms
    if arms:
        from continuity.runner.samples import DEFAULT_JOBS, build_arm_samples

        with progress(f"arms {chosen.suite}") as tick:
            records, path, built = build_arm_samples(
                chosen.store,
                chosen.suite,
                chosen.seeds,
                arms=arms,
                traces=request.trace or None,
                out_dir=chosen.out,
                progress=tick,
                jobs=request.jobs or DEFAULT_JOBS,
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
            traces=request.trace or None,
            out_dir=chosen.out,
            progress=tick,
        )
    built = sum(r.status == "built" for r in results)
    return (
        f"checkpoints: {len(results)} {chosen.suite} checkpoints ({built} replayed, "
        f"{len(results) - built} from the store); manifest at {manifest}"
    )


def checkpoints_current(request: CheckpointsRequest) -> bool:
    """doit's uptodate: building would do nothing (the checkpoints, with ``--arms`` the
    arm samples, are in the store and the manifest); False when the selection is bad
    (the action then runs and reports the error with its code)."""
    from continuity.runner.checkpoints import checkpoints_current as suite_current

    try:
        chosen = Selection(request)
    except ContinuityError:
        return False
    arms = request.arms
    if arms:
        from continuity.runner.samples import arm_samples_current

        return arm_samples_current(
            chosen.store,
            chosen.suite,
            chosen.seeds,
            arms=arms,
            traces=request.trace or None,
            out_dir=chosen.out,
        )
    return suite_current(
        chosen.store,
        chosen.suite,
        chosen.seeds,
        traces=request.trace or None,
        out_dir=chosen.out,
    )


def checkpoints_where(request: CheckpointsRequest) -> str:
    """An up-to-date run's location line (with --arms: the arm samples' manifest)."""
    chosen = Selection(request)
    what = "arms" if request.arms else "checkpoints"
    name = "arms.json" if request.arms else "manifest.json"
    manifest = chosen.out / "checkpoints" / chosen.suite / name
    return f"{what}: {chosen.suite} up to date; manifest at {manifest}"
