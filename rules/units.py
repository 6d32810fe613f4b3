"""`doit units` and `doit aggregate`: probe units and the incremental report."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE, Selection
from rules.traces import SEEDS, SUITE

RUN: dict[str, Any] = {
    "name": "run",
    "long": "run",
    "type": str,
    "default": "offline",
    "help": "run name: units and reports go to <out>/runs/<run>/",
}


def _units(**options: Any) -> str:
    from continuity.progress import progress
    from continuity.runner.samples import DEFAULT_JOBS
    from continuity.runner.units import build_units

    chosen = Selection(options)
    run_dir = chosen.out / "runs" / options["run"]
    with progress(f"units {chosen.suite}") as tick:
        records, folder, built = build_units(
            chosen.store,
            chosen.suite,
            chosen.seeds,
            arms=options.get("arms") or None,
            repeats=int(options.get("repeats") or 1),
            traces=options.get("trace") or None,
            probe_limit=int(options.get("probe_limit") or 0) or None,
            run_dir=run_dir,
            progress=tick,
            jobs=int(options.get("jobs") or 0) or DEFAULT_JOBS,
        )
    excluded = sum(1 for r in records for p in r.probes if p.status != "valid")
    return (
        f"units: {len(records)} units ({built} run, {len(records) - built} from the store), "
        f"{sum(len(r.probes) for r in records)} probe samples, {excluded} excluded; "
        f"units in {folder}"
    )


def _aggregate(**options: Any) -> str:
    from continuity.report.aggregate import aggregate_run

    chosen = Selection(options)
    results, paths, read = aggregate_run(chosen.store, chosen.out / "runs" / options["run"])
    return (
        f"aggregate: {results.units} units ({read} read, {results.units - read} from the "
        f"cache); report at {paths['report']}"
    )


def task_units() -> dict[str, Any]:
    """Run probe units (repeat x trace x arm): fork, cross the boundary, ask every probe."""
    return {
        "actions": [task_action(_units)],
        "params": [
            SUITE,
            SEEDS,
            {
                "name": "arms",
                "long": "arms",
                "type": str,
                "default": "all",
                "help": "arm ids (comma-separated) or all",
            },
            {
                "name": "repeats",
                "long": "repeats",
                "type": int,
                "default": 1,
                "help": "repeats per trace and arm",
            },
            {
                "name": "trace",
                "long": "trace",
                "type": str,
                "default": "",
                "help": "only these trace ids (comma-separated)",
            },
            {
                "name": "probe_limit",
                "long": "probe-limit",
                "type": int,
                "default": 0,
                "help": "only the first N probes of each trace",
            },
            {
                "name": "jobs",
                "long": "jobs",
                "type": int,
                "default": 0,
                "help": "traces to run in parallel (default: up to 2 cores)",
            },
            RUN,
            STORE,
            OUT,
        ],
        "verbosity": 2,
    }


def task_aggregate() -> dict[str, Any]:
    """Aggregate a run's units into results.json, summary.md and report.html (incremental)."""
    return {
        "actions": [task_action(_aggregate)],
        "params": [RUN, STORE, OUT],
        "verbosity": 2,
    }
