"""``doit export``: a run's samples written as JSON Lines or CSV (`continuity.report.export`).

The run is chosen as ``doit aggregate`` chooses it (`--run-dir`, else ``--run``, else
the most recent run); the rows are graded by the same scorer choice and priced with the
same catalog. The file goes to ``--output``, else ``<run>/export/samples.<format>``,
written atomically.
"""

from __future__ import annotations

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
    """Write the run's samples; the summary line names the file and counts the rows.

    Raises:
        UsageError: ``export_format_unknown`` (checked before the run is read),
            ``run_empty``, ``scorer_unknown``. PricingError: ``pricing_invalid``.
            AggregateError: ``unit_malformed``, ``run_manifest_malformed``.
    """
    from pathlib import Path

    from continuity.outputs import write_output
    from continuity.plan.pricing import default_catalog_path, load_catalog
    from continuity.report.export import EXPORT_FORMATS, export_bytes, export_rows

    form = next((f for f in EXPORT_FORMATS if f == request.format), None)
    if form is None:
        raise UsageError(
            f"unknown export format {request.format!r}; use one of {', '.join(EXPORT_FORMATS)}",
            code="export_format_unknown",
            location="--format",
        )
    run = run_dir(request)
    if not (run / "units").is_dir():
        raise UsageError(
            f"{run} holds no units to export",
            code="run_empty",
            location="--run-dir" if request.run_dir else "--run",
        )
    catalog = load_catalog(Path(request.pricing) if request.pricing else default_catalog_path())
    rows = export_rows(Selection(request).store, run, request.scorer or "current", catalog)
    if not rows:  # as aggregate: a run without samples is refused, not exported empty
        raise UsageError(
            f"{run} holds no samples to export",
            code="run_empty",
            location="--run-dir" if request.run_dir else "--run",
        )
    path = (
        Path(request.output).expanduser() if request.output else run / "export" / f"samples.{form}"
    )
    write_output(path, export_bytes(rows, form))
    return f"export: {len(rows)} samples of {run.name} as {form}; written to {path}"
