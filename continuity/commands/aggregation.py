"""``doit aggregate`` and ``doit score``: a run's units read into results and reports.

`aggregate` is the entry point of ``doit aggregate`` and `score` the one of ``doit
score``; `rules/aggregate.py` declares their options and calls them with the options
typed once (`AggregateRequest`, `ScoreRequest`). Both read the run `run_dir` chooses.

``doit aggregate`` is up to date (`aggregate_current`; doit prints ``-- aggregate`` and
the location line `aggregate_where`, and nothing is rewritten) while the run's stamp
(`continuity.report.freshness`) matches: same unit files, scorer, pricing and report
code, outputs intact. ``--fail-under PCT`` gates the run on accuracy: with it the task
always runs, so the gate is always evaluated, but it re-aggregates only when the stamp
does not match; then every arm's overall accuracy in every suite must be at least PCT
percent, else `GateFailed` ``accuracy_below_threshold`` (exit status 3) after the
reports are written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from continuity.commands.selection import Selection
from continuity.errors import ContinuityError, UsageError
from continuity.requests import Request

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.report.freshness import AggregateStamp
    from continuity.report.results import ScorerSection

__all__ = [
    "AggregateRequest",
    "RunRequest",
    "ScoreRequest",
    "aggregate",
    "aggregate_current",
    "aggregate_where",
    "run_dir",
    "score",
]


class RunRequest(Request, frozen=True, kw_only=True):
    """Which run to read: ``--run-dir``, else ``<out>/runs/<--run>``, else ("" for both)
    the most recent run under ``<out>/runs/``."""

    run: str = ""
    run_dir: str = ""


class ScoreRequest(RunRequest, frozen=True, kw_only=True):
    """``doit score``: the run whose recorded answers the current scorer grades."""


class AggregateRequest(RunRequest, frozen=True, kw_only=True):
    """``doit aggregate``: the run, the pricing catalog ("": the default catalog), the
    scorer (``current`` or ``original``) and the accuracy gate (None: no gate; else a
    percentage from 0 to 100)."""

    pricing: str = ""
    scorer: str = "current"
    fail_under: float | None = None


def run_dir(request: RunRequest) -> Path:
    """`--run-dir`, else ``<out>/runs/<--run>``, else the most recent run there: the
    run ``doit aggregate``, ``score`` and ``export`` read.

    Raises:
        UsageError: ``run_unknown`` (`continuity.report.runs.unknown_run`, at the option
            that named it, listing the runs that hold units) when the named run is not
            there; ``run_empty`` when no run is named and no run holds units.
        InputError: ``input_not_a_directory`` when the named run is there and is not a
            directory.
    """
    import os
    from pathlib import Path

    from continuity.inputs import check_user_dir
    from continuity.outputs import resolve_out_path
    from continuity.report.runs import latest_run, runs_hint, unknown_run

    if request.run_dir:  # outside <out>: the output folder is only named, not created
        runs = resolve_out_path(request.out or None) / "runs"
        option, named = "--run-dir", request.run_dir
        chosen = Path(named).expanduser().absolute()
    else:
        runs = Selection(request).out / "runs"
        option, named, chosen = "--run", request.run, runs / request.run
    if named:
        if not os.path.exists(chosen):  # a dangling link too: nothing to read there
            raise unknown_run(named, [chosen], runs, option)
        check_user_dir(chosen, what=option)
        return chosen
    latest = latest_run(runs)
    if latest is None:
        raise UsageError(
            f"no run to aggregate: {runs_hint(runs)}", code="run_empty", location="--run"
        )
    return latest


def _catalog_path(request: AggregateRequest) -> Path:
    from pathlib import Path

    pricing = request.pricing
    if pricing:
        return Path(pricing)
    from continuity.plan.pricing import default_catalog_path

    return default_catalog_path()


def _key(request: AggregateRequest, run: Path) -> str:
    """The aggregate key of the run this request reads (see continuity.report.freshness)."""
    from continuity.report.freshness import aggregate_key
    from continuity.store import resolve_store_path

    store = resolve_store_path(request.store or None)  # a path; nothing is opened
    return aggregate_key(run, request.scorer or "current", _catalog_path(request), store)


def _rebuild(request: AggregateRequest, run: Path) -> str:
    """Aggregate `run` and stamp its outputs (the key is computed again before any unit
    is read, so a unit written meanwhile makes the next check run again)."""
    from continuity.report.freshness import aggregate_stamped

    results, paths, read = aggregate_stamped(
        Selection(request).store, run, _catalog_path(request), request.scorer or "current"
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


def aggregate(request: AggregateRequest) -> str:
    """``doit aggregate``: aggregate the run (unless its stamp is current under a gate),
    then apply ``--fail-under``; returns the summary line.

    Raises:
        GateFailed: ``accuracy_below_threshold`` (exit status 3) after the reports are
            written.
    """
    from continuity.report.freshness import current_stamp

    run = run_dir(request)
    minimum = request.fail_under
    # Without a gate doit's uptodate check already skipped a current run; with one the
    # task always runs, and skips only the rebuild.
    stamp = current_stamp(run, _key(request, run)) if minimum is not None else None
    line = _rebuild(request, run) if stamp is None else _fresh_line(run, stamp)
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


def aggregate_current(request: AggregateRequest) -> bool:
    """doit's uptodate: the run's stamp matches a fresh key (never with --fail-under)."""
    from continuity.report.freshness import current_stamp

    if request.fail_under is not None:
        return False  # the gate is evaluated on every call
    try:
        run = run_dir(request)
        return current_stamp(run, _key(request, run)) is not None
    except (ContinuityError, OSError):
        return False  # the action runs and reports the problem with its code


def aggregate_where(request: AggregateRequest) -> str:
    """An up-to-date run's location line."""
    from continuity.report.freshness import read_stamp

    run = run_dir(request)
    stamp = read_stamp(run)
    if stamp is None:
        return f"aggregate: report at {run / 'report.html'}"
    return _fresh_line(run, stamp)


def _scorer_name(section: ScorerSection | None) -> str:
    digest = section.digest if section is not None else None
    return f"current scorer {digest[:16]}" if digest else "original grades"


def score(request: ScoreRequest) -> str:
    """``doit score``: grade the run's recorded answers with the current scorer into new
    score artifacts (no model call; the unit files are unchanged); returns the summary
    line."""
    from continuity.report.rescore import rescore_run

    run = run_dir(request)
    result = rescore_run(Selection(request).store, run)
    return (
        f"score: {result.units} units re-scored from their recorded answers with no model "
        f"call by scorer {result.scorer[:16]} ({result.written} score artifacts written, "
        f"{result.probes_changed} probe grades differ from the original; unit files "
        f"unchanged); artifacts in {result.folder}; run doit aggregate{_same_run(request, run)} "
        "to refresh the report"
    )


def _same_run(request: RunRequest, run: Path) -> str:
    """The aggregate option naming the run `doit score` graded (the most recent run when
    none was named, and the one aggregate reads by default: no option)."""
    if request.run_dir:
        return f" --run-dir {run}"
    return f" --run {run.name}" if request.run else ""
