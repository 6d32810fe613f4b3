"""`doit aggregate` and `doit score`: read a run's units into results and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from continuity.graph import task_action
from rules.params import OUT, STORE, Selection, SelectionOptions, TaskSpec, param
from rules.plan import PRICING

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.report.results import ScorerSection

__all__ = ["READ_RUN", "RUN_DIR", "RunOptions", "run_dir", "task_aggregate", "task_score"]

# aggregate and score: which run to read (none named: the most recent one).
READ_RUN = param("run", str, "", "run name under <out>/runs/ (default: the most recent run)")


class RunOptions(SelectionOptions, total=False):
    """`doit aggregate` and `doit score`: which run (and, to aggregate, how)."""

    run: str
    run_dir: str
    pricing: str
    scorer: str


def run_dir(options: RunOptions) -> Path:
    """`--run-dir`, else ``<out>/runs/<--run>``, else the most recent run there.

    Raises:
        UsageError: ``run_empty`` when no ``--run`` is given and no run holds units.
    """
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.report.runs import latest_run, runs_hint

    named = options.get("run_dir")
    if named:
        return Path(named).expanduser().absolute()
    runs = Selection(options).out / "runs"
    if options.get("run"):
        return runs / options["run"]
    latest = latest_run(runs)
    if latest is None:
        raise UsageError(
            f"no run to aggregate: {runs_hint(runs)}", code="run_empty", location="--run"
        )
    return latest


def _aggregate(**options: Unpack[RunOptions]) -> str:
    from pathlib import Path

    from continuity.plan.pricing import load_catalog
    from continuity.report.aggregate import aggregate_run

    chosen = Selection(options)
    pricing = options.get("pricing")
    catalog = load_catalog(Path(pricing) if pricing else None)
    results, paths, read = aggregate_run(
        chosen.store, run_dir(options), catalog, options.get("scorer") or "current"
    )
    return (
        f"aggregate: {results.units} units ({read} read, {results.units - read} from the "
        f"cache), graded by the {_scorer_name(results.scorer)}; report at {paths['report']}"
    )


def _scorer_name(section: ScorerSection | None) -> str:
    digest = section.digest if section is not None else None
    return f"current scorer {digest[:16]}" if digest else "original grades"


def _score(**options: Unpack[RunOptions]) -> str:
    from continuity.report.rescore import rescore_run

    run = run_dir(options)
    result = rescore_run(Selection(options).store, run)
    return (
        f"score: {result.units} units re-scored from their recorded answers with no model "
        f"call by scorer {result.scorer[:16]} ({result.written} score artifacts written, "
        f"{result.probes_changed} probe grades differ from the original; unit files "
        f"unchanged); artifacts in {result.folder}; run doit aggregate{_same_run(options, run)} "
        "to refresh the report"
    )


def _same_run(options: RunOptions, run: Path) -> str:
    """The aggregate option naming the run `doit score` graded (the most recent run when
    none was named, and the one aggregate reads by default: no option)."""
    if options.get("run_dir"):
        return f" --run-dir {run}"
    return f" --run {run.name}" if options.get("run") else ""


RUN_DIR = param("run_dir", str, "", "a run directory (a real run's --out); overrides --run")
SCORER = param(
    "scorer",
    str,
    "current",
    "current (the current scorer's grades; default) | original (the unit files' grades)",
)


def task_aggregate() -> TaskSpec:
    """Aggregate a run's units into results.json, summary.md and report.html (incremental)."""
    return {
        "actions": [task_action(_aggregate)],
        "params": [READ_RUN, RUN_DIR, PRICING, SCORER, STORE, OUT],
        "verbosity": 2,
    }


def task_score() -> TaskSpec:
    """Grade a run's recorded answers with the current scorer into new score artifacts."""
    return {
        "actions": [task_action(_score)],
        "params": [READ_RUN, RUN_DIR, STORE, OUT],
        "verbosity": 2,
    }
