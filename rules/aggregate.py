"""`doit aggregate` and `doit score`: read a run's units into results and reports.

`doit aggregate` is up to date (doit prints ``-- aggregate`` and the location line, and
nothing is rewritten) while the run's stamp (`continuity.report.freshness`) matches: same
unit files, scorer, pricing and report code, outputs intact. ``--fail-under PCT`` gates
the run on accuracy: with it the task always runs, so the gate is always evaluated, but
it re-aggregates only when the stamp does not match; then every arm's overall accuracy
in every suite must be at least PCT percent, else `GateFailed`
``accuracy_below_threshold`` (exit status 3) after the reports are written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from continuity.errors import ContinuityError, UsageError
from continuity.graph import task_action
from rules.params import OUT, STORE, FloatOption, Selection, SelectionOptions, TaskSpec, param
from rules.plan import PRICING

if TYPE_CHECKING:
    from pathlib import Path

    from doit.task import Task

    from continuity.report.freshness import AggregateStamp
    from continuity.report.results import ScorerSection

__all__ = [
    "FAIL_UNDER",
    "READ_RUN",
    "RUN_DIR",
    "PercentOption",
    "RunOptions",
    "run_dir",
    "task_aggregate",
    "task_score",
]

# aggregate and score: which run to read (none named: the most recent one).
READ_RUN = param("run", str, "", "run name under <out>/runs/ (default: the most recent run)")


class RunOptions(SelectionOptions, total=False):
    """`doit aggregate` and `doit score`: which run (and, to aggregate, how)."""

    run: str
    run_dir: str
    pricing: str
    scorer: str
    fail_under: float | None


class PercentOption:
    """A percentage from 0 to 100 (``60`` is 60 %, not 0.6), as a doit parameter type.

    Raises:
        ValueError: the coded line ``option_invalid: ... (at OPTION)`` (doit's parser).
    """

    def __init__(self, option: str) -> None:
        self.option = option
        self._number = FloatOption(option, 0.0, inclusive=True)

    def __repr__(self) -> str:
        return "<percent 0 to 100>"

    def __call__(self, text: str) -> float | None:
        value = self._number(text)
        if value > 100:
            refusal = UsageError(
                f"{value:g} is above 100: give a percentage (--fail-under 60 is 60 %)",
                code="option_invalid",
                location=self.option,
            )
            raise ValueError(str(refusal))
        return value


def run_dir(options: RunOptions) -> Path:
    """`--run-dir`, else ``<out>/runs/<--run>``, else the most recent run there.

    Raises:
        UsageError: ``run_empty`` when no ``--run`` is given and no run holds units.
        InputError: ``input_not_a_directory`` when the named run is there and is not a
            directory (a missing one is reported as the run's, with its code).
    """
    import os
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.inputs import check_user_dir
    from continuity.report.runs import latest_run, runs_hint

    named = options.get("run_dir")
    if named or options.get("run"):
        chosen = (
            Path(named).expanduser().absolute()
            if named
            else Selection(options).out / "runs" / options.get("run", "")
        )
        if os.path.exists(chosen):  # a missing one (or a dangling link) is run_empty later
            check_user_dir(chosen, what="--run-dir" if named else "--run")
        return chosen
    runs = Selection(options).out / "runs"
    latest = latest_run(runs)
    if latest is None:
        raise UsageError(
            f"no run to aggregate: {runs_hint(runs)}", code="run_empty", location="--run"
        )
    return latest


def _catalog_path(options: RunOptions) -> Path:
    from pathlib import Path

    pricing = options.get("pricing")
    if pricing:
        return Path(pricing)
    from continuity.plan.pricing import default_catalog_path

    return default_catalog_path()


def _key(options: RunOptions, run: Path) -> str:
    """The aggregate key of the run these options read (see continuity.report.freshness)."""
    from continuity.report.freshness import aggregate_key
    from continuity.store import resolve_store_path

    store = resolve_store_path(options.get("store") or None)  # a path; nothing is opened
    return aggregate_key(run, options.get("scorer") or "current", _catalog_path(options), store)


def _rebuild(options: RunOptions, run: Path) -> str:
    """Aggregate `run` and stamp its outputs (the key is computed again before any unit
    is read, so a unit written meanwhile makes the next check run again)."""
    from continuity.report.freshness import aggregate_stamped

    results, paths, read = aggregate_stamped(
        Selection(options).store, run, _catalog_path(options), options.get("scorer") or "current"
    )
    return (
        f"aggregate: {results.units} units ({read} read, {results.units - read} from the "
        f"cache), graded by the {_scorer_name(results.scorer)}; report at {paths['report']}"
    )


def _fresh_line(run: Path, stamp: AggregateStamp) -> str:
    return (
        f"aggregate: {run.name} up to date ({stamp.units} units; unit files, scorer, "
        f"pricing and report code unchanged); report at {run / 'report.html'}"
    )


def _aggregate(**options: Unpack[RunOptions]) -> str:
    from continuity.report.freshness import current_stamp

    run = run_dir(options)
    minimum = options.get("fail_under")
    # Without a gate doit's uptodate check already skipped a current run; with one the
    # task always runs, and skips only the rebuild.
    stamp = current_stamp(run, _key(options, run)) if minimum is not None else None
    line = _rebuild(options, run) if stamp is None else _fresh_line(run, stamp)
    if minimum is None:
        return line
    from continuity.report.threshold import check_accuracy

    print(line, flush=True)  # the reports are written whatever the gate decides
    results = run / "results.json"
    findings = check_accuracy(results, minimum)
    lowest = min(f.percent for f in findings if f.percent is not None)
    return (
        f"aggregate: every arm at or above {minimum:g} % in every suite "
        f"({len(findings)} arm-suite accuracies, lowest {lowest:.1f} %); results at {results}"
    )


def _current(task: Task, values: Mapping[str, object]) -> bool:
    """doit's uptodate: the run's stamp matches a fresh key (never with --fail-under)."""
    from continuity.report.freshness import current_stamp

    options: RunOptions = task.options or RunOptions()
    if options.get("fail_under") is not None:
        return False  # the gate is evaluated on every call
    try:
        run = run_dir(options)
        return current_stamp(run, _key(options, run)) is not None
    except (ContinuityError, OSError):
        return False  # the action runs and reports the problem with its code


def _where(options: Mapping[str, Any]) -> str:
    """An up-to-date run's location line."""
    from continuity.report.freshness import read_stamp

    run = run_dir(options)  # type: ignore[arg-type]
    stamp = read_stamp(run)
    if stamp is None:
        return f"aggregate: report at {run / 'report.html'}"
    return _fresh_line(run, stamp)


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

FAIL_UNDER = param(
    "fail_under",
    PercentOption("--fail-under"),
    None,
    "exit 3 (accuracy_below_threshold) when any arm's overall accuracy in any suite is "
    "below this percentage (0-100; 60 means 60 %); checked on every call",
)


def task_aggregate() -> TaskSpec:
    """Aggregate a run's units into results.json, summary.md and report.html (incremental)."""
    return {
        "actions": [task_action(_aggregate)],
        "params": [READ_RUN, RUN_DIR, PRICING, SCORER, FAIL_UNDER, STORE, OUT],
        "uptodate": [_current],
        "meta": {"uptodate_line": _where},
        "verbosity": 2,
    }


def task_score() -> TaskSpec:
    """Grade a run's recorded answers with the current scorer into new score artifacts."""
    return {
        "actions": [task_action(_score)],
        "params": [READ_RUN, RUN_DIR, STORE, OUT],
        "verbosity": 2,
    }
