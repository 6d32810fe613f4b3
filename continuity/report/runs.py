"""The runs under an output directory: which exist, and which is the most recent.

A run is a folder under ``<out>/runs/`` whose ``units/`` folder holds at least one unit
file. `doit aggregate` and `doit score` without ``--run`` take the most recent one (the
run whose newest unit file was written last), and a run with no units names the runs
that do exist. A run that is not there is refused the same way by every command that
reads one (`unknown_run`: ``run_unknown`` at the option that named it, listing the runs
that hold units). `doit runs` lists them with the latest plan digest and the first start
date their run manifest (``run.json``) records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from continuity.errors import ContinuityError, UsageError
from continuity.tables import text_table

__all__ = [
    "RUN_COLUMNS",
    "latest_run",
    "run_names",
    "run_rows",
    "runs_hint",
    "runs_table",
    "unknown_run",
]


def _newest_unit(run: Path) -> float | None:
    """When the newest unit file of `run` was written; None when it has none."""
    times = [p.stat().st_mtime for p in (run / "units").rglob("*.json") if p.is_file()]
    return max(times) if times else None


def _runs(runs_root: Path) -> dict[str, float]:
    if not runs_root.is_dir():
        return {}
    found = {}
    for run in sorted(runs_root.iterdir()):
        newest = _newest_unit(run) if run.is_dir() else None
        if newest is not None:
            found[run.name] = newest
    return found


def run_names(runs_root: Path) -> list[str]:
    """The runs under `runs_root` that hold units, by name."""
    return sorted(_runs(runs_root))


def latest_run(runs_root: Path) -> Path | None:
    """The run under `runs_root` whose newest unit file is the newest; None when no run
    holds a unit."""
    runs = _runs(runs_root)
    if not runs:
        return None
    return runs_root / max(runs, key=lambda name: (runs[name], name))


def runs_hint(runs_root: Path) -> str:
    """What to tell a user who named a run without units: the runs that have some."""
    names = run_names(runs_root)
    if not names:
        return f"no run under {runs_root} holds units yet (doit units writes them)"
    return f"runs with units under {runs_root}: {', '.join(names)}"


def unknown_run(
    named: str,
    looked: Sequence[Path],
    runs_root: Path,
    location: str,
    kind: type[ContinuityError] = UsageError,
) -> ContinuityError:
    """The ``run_unknown`` refusal every command that reads a run gives (``doit
    aggregate``, ``score``, ``export``, ``compare``): the run `named`, where it was
    looked for (`looked`), and the runs under `runs_root` that hold units. `location` is
    the option that named it (``--run``, ``--run-dir``, ``--base``...; a path only for a
    caller without options); `kind` the error class to raise."""
    where = " or ".join(str(path.absolute()) for path in looked)
    message = f"no run {named!r} at {where}; {runs_hint(runs_root)}"
    return kind(message, code="run_unknown", location=location)


def _manifest_cells(run: Path) -> tuple[str, str]:
    """The run's latest plan digest (short; how many plans when its invocations ran
    several) and its first start date, from its manifest: '-' for a run without one,
    '?' for one that does not read (doit aggregate names its error)."""
    from continuity.errors import AggregateError
    from continuity.runner.manifest import read_run_manifest

    try:
        manifest = read_run_manifest(run)
    except AggregateError:
        return "?", "?"
    if manifest is None:
        return "-", "-"
    plans = len(manifest.plans())
    digest = manifest.latest.plan_digest[:12] + (f" (latest of {plans} plans)" if plans > 1 else "")
    return digest, manifest.started[:16].replace("T", " ")


def run_rows(runs_root: Path) -> list[dict[str, str]]:
    """One row per run that holds units, by name: its unit files, when the newest was
    written (UTC), its plan digest and start date (UTC) from its run manifest
    (continuity.runner.manifest) and whether a report was aggregated."""
    from datetime import UTC, datetime

    rows = []
    for name, newest in sorted(_runs(runs_root).items()):
        run = runs_root / name
        digest, started = _manifest_cells(run)
        rows.append(
            {
                "run": name,
                "units": str(sum(1 for p in (run / "units").rglob("*.json") if p.is_file())),
                "newest unit": datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%d %H:%M"),
                "plan digest": digest,
                "started": started,
                "report": "report.html" if (run / "report.html").is_file() else "-",
            }
        )
    return rows


RUN_COLUMNS = ("run", "units", "newest unit", "plan digest", "started", "report")


def runs_table(runs_root: Path) -> str:
    """`run_rows` as an aligned text table (a header first); empty when there is none."""
    return text_table(run_rows(runs_root), RUN_COLUMNS)
