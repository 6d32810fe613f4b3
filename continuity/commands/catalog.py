"""``doit arms`` and ``doit runs``: what a user can run (every arm), and what they have
run (the runs under the output directory)."""

from __future__ import annotations

from continuity.requests import Request

__all__ = ["RunsRequest", "arms", "runs"]


class RunsRequest(Request, frozen=True, kw_only=True):
    """`doit runs`: the output directory whose ``runs/`` to list."""


def arms() -> str:
    """Print the arm table (one block per arm where the table would not fit the
    terminal, or 100 columns); the summary counts the arms, those ``--arms all`` runs and
    the opt-in ones."""
    from continuity.arm_catalog import arm_rows, arms_table
    from continuity.arms import OPT_IN

    rows = arm_rows()
    runnable = [r for r in rows if r["runs"] in ("every suite", "long suites only")]
    print(arms_table(), flush=True)
    return (
        f"arms: {len(rows)} defined, {len(runnable)} run by --arms all, {len(OPT_IN)} more "
        f"only when named ({', '.join(sorted(OPT_IN))})\n"
        "--arms all,ID adds one, --arms ID,... picks some; docs/concepts.md explains each"
    )


def runs(request: RunsRequest) -> str:
    """Print the table of runs under ``<out>/runs/`` (none: say so); the summary names
    the most recent, the one ``doit aggregate`` reads by default."""
    from continuity.outputs import resolve_out_path
    from continuity.report.runs import latest_run, run_names, runs_table

    root = resolve_out_path(request.out or None) / "runs"
    latest = latest_run(root)
    if latest is None:
        return f"runs: none under {root} holds units yet (doit units writes them)"
    print(runs_table(root), flush=True)
    return (
        f"runs: {len(run_names(root))} under {root}; doit aggregate without --run reads "
        f"the most recent, {latest.name}"
    )
