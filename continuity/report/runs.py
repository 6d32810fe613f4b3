"""The runs under an output directory: which exist, and which is the most recent.

A run is a folder under ``<out>/runs/`` whose ``units/`` folder holds at least one unit
file. `doit aggregate` and `doit score` without ``--run`` take the most recent one (the
run whose newest unit file was written last), and a run with no units names the runs
that do exist.
"""

from __future__ import annotations

from pathlib import Path

from continuity.tables import text_table

__all__ = ["latest_run", "run_names", "run_rows", "runs_hint", "runs_table"]


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


def run_rows(runs_root: Path) -> list[dict[str, str]]:
    """One row per run that holds units, by name: its unit files, when the newest was
    written (UTC) and whether a report was aggregated."""
    from datetime import UTC, datetime

    rows = []
    for name, newest in sorted(_runs(runs_root).items()):
        run = runs_root / name
        rows.append(
            {
                "run": name,
                "units": str(sum(1 for p in (run / "units").rglob("*.json") if p.is_file())),
                "newest unit": datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%d %H:%M"),
                "report": "report.html" if (run / "report.html").is_file() else "-",
            }
        )
    return rows


def runs_table(runs_root: Path) -> str:
    """`run_rows` as an aligned text table (a header first); empty when there is none."""
    return text_table(run_rows(runs_root), ("run", "units", "newest unit", "report"))
