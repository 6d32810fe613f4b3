"""`doit arms` and `doit runs`: what a user can run, and what they have run."""

from __future__ import annotations

from continuity.graph import task_action
from rules.params import OUT, TaskSpec


def _arms() -> str:
    from continuity.arm_catalog import arm_rows, arms_table
    from continuity.arms import OPT_IN

    rows = arm_rows()
    runnable = [r for r in rows if r["runs"] in ("every suite", "long suites only")]
    print(arms_table(), flush=True)
    return (
        f"arms: {len(rows)} defined, {len(runnable)} run by --arms all, {len(OPT_IN)} more "
        f"only when named ({', '.join(sorted(OPT_IN))}: --arms all,ID adds it; doit units "
        "--arms ID,... picks some; the README's arm table explains each)"
    )


def _runs(out: str) -> str:
    from continuity.outputs import resolve_out_path
    from continuity.report.runs import latest_run, run_names, runs_table

    root = resolve_out_path(out or None) / "runs"
    latest = latest_run(root)
    if latest is None:
        return f"runs: none under {root} holds units yet (doit units writes them)"
    print(runs_table(root), flush=True)
    return (
        f"runs: {len(run_names(root))} under {root}; doit aggregate without --run reads "
        f"the most recent, {latest.name}"
    )


def task_arms() -> TaskSpec:
    """List every arm: boundary, history, continuity, evidence, pressure, availability.

    One row per arm with its boundary, its history binding, its continuity source, the
    evidence it records, its pressure rule and whether it runs at this revision."""
    return {"actions": [task_action(_arms)], "verbosity": 2}


def task_runs() -> TaskSpec:
    """List the runs under the output directory with their unit counts and plan digests.

    For each run: its unit files, when the newest was written, its latest plan digest
    (and how many plans its invocations ran) and first start date (from its run.json),
    and whether a report was aggregated."""
    return {"actions": [task_action(_runs)], "params": [OUT], "verbosity": 2}
