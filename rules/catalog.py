"""`doit arms` and `doit runs`: what a user can run, and what they have run."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, TaskSpec


def _arms() -> str:
    from continuity.commands.catalog import arms

    return arms()


def _runs(**options: Any) -> str:
    from continuity.commands.catalog import RunsRequest, runs

    return runs(RunsRequest.of(options))


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
