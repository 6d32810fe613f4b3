"""``doit export``: a run's samples written as JSON Lines or CSV (`continuity.report.export`),
or as Inspect eval logs (`continuity.report.inspect_log`).

The run is chosen as ``doit aggregate`` chooses it (`--run-dir`, else ``--run``, else
the most recent run); the rows are graded by the same scorer choice and priced with the
same catalog. The file goes to ``--output``, else ``<run>/export/samples.<format>``,
written atomically; Inspect logs (one per suite and arm) go to the folder ``--output``
names, else ``<run>/export/inspect/``.
"""

from __future__ import annotations

from pathlib import Path

from continuity.commands.aggregation import RunRequest, run_dir
from continuity.commands.selection import Selection
from continuity.errors import UsageError

__all__ = ["ExportRequest", "export"]


class ExportRequest(RunRequest, frozen=True, kw_only=True):
    """``doit export``: the run, the format, where to write it ("": beside the run), the
    pricing catalog ("": the default one) and the scorer (``current`` or ``original``)."""

    format: str = "jsonl"
    output: str = ""
    pricing: str = ""
    scorer: str = "current"


def export(request: ExportRequest) -> str:
    """Write the run's samples; the summary line names the file (or folder) and counts
    the rows.

    Raises:
        UsageError: ``export_format_unknown`` and ``export_extra_missing`` (both
            checked before the run is read), ``run_unknown`` for a run that is not
            there, ``run_empty`` for one without samples, ``scorer_unknown``.
            PricingError: ``pricing_invalid``. AggregateError: ``unit_malformed``,
            ``run_manifest_malformed``.
    """
    from continuity.outputs import write_output
    from continuity.plan.pricing import default_catalog_path, load_catalog
    from continuity.report.export import EXPORT_FORMATS, export_bytes, export_run

    form = next((f for f in EXPORT_FORMATS if f == request.format), None)
    if form is None:
        raise UsageError(
            f"unknown export format {request.format!r}; use one of {', '.join(EXPORT_FORMATS)}",
            code="export_format_unknown",
            location="--format",
        )
    if form == "inspect":
        from continuity.report.inspect_log import require_inspect

        require_inspect()
    run = run_dir(request)
    _check_run(request, run)
    catalog = load_catalog(Path(request.pricing) if request.pricing else default_catalog_path())
    exported = export_run(Selection(request).store, run, request.scorer or "current", catalog)
    rows = exported.rows
    if not rows:  # as aggregate: a run without samples is refused, not exported empty
        raise UsageError(
            f"{run} holds no samples to export",
            code="run_empty",
            location="--run-dir" if request.run_dir else "--run",
        )
    output = Path(request.output).expanduser() if request.output else None
    if form == "inspect":
        from continuity.report.inspect_log import write_inspect_logs

        folder = output or run / "export" / "inspect"
        logs = write_inspect_logs(exported, run.name, folder)
        return (
            f"export: {len(rows)} samples of {run.name} as {len(logs)} Inspect logs "
            f"(one per suite and arm); written to {folder} (open with: inspect view "
            f"--log-dir {folder})"
        )
    path = output or run / "export" / f"samples.{form}"
    write_output(path, export_bytes(rows, form))
    return f"export: {len(rows)} samples of {run.name} as {form}; written to {path}"


def _check_run(request: ExportRequest, run: Path) -> None:
    """A run that is not there is ``run_unknown``; one without a units folder
    ``run_empty`` (as ``doit aggregate`` and ``doit compare`` call them)."""
    from continuity.report.runs import runs_hint

    where = "--run-dir" if request.run_dir else "--run"
    if not run.exists():
        raise UsageError(
            f"no run {run.name!r} at {run}; {runs_hint(Selection(request).out / 'runs')}",
            code="run_unknown",
            location=where,
        )
    if not (run / "units").is_dir():
        raise UsageError(f"{run} holds no units to export", code="run_empty", location=where)
