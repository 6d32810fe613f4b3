"""`doit offline_contract`: the offline end-to-end contract CI runs."""

from __future__ import annotations

from continuity.graph import task_action
from rules.params import OUT, STORE, TaskSpec


def _run(store: str, out: str) -> str:
    from continuity.contract import run_offline_contract
    from continuity.outputs import resolve_out_path
    from continuity.store import Store

    report, path = run_offline_contract(Store(store or None), out_dir=resolve_out_path(out or None))
    traces = sum(s.traces for s in report.suites)
    return (
        f"offline contract passed: {traces} traces in {len(report.suites)} suites, every arm "
        f"run and aggregated; report at {report.report} (contract checks in {path})"
    )


def task_offline_contract() -> TaskSpec:
    """Run the offline contract (all default suites, scripted models) and write its report."""
    return {
        "actions": [task_action(_run)],
        "params": [STORE, OUT],
        "verbosity": 2,
    }
