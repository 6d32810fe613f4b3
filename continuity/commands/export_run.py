"""``doit export``: a run's samples written as JSON Lines or CSV (`continuity.report.export`),
or as Inspect eval logs (`continuity.report.inspect_log`).

The run is chosen as ``doit aggregate`` chooses it (`--run-dir`, else ``--run``, else
the most recent run; `continuity.commands.aggregation.run_dir`); the rows are graded by
the same scorer choice and priced with the same catalog. The file goes to ``--output``,
else ``<run>/export/samples.<format>``, written atomically; Inspect logs (one per suite
and arm) go to the folder ``--output`` names, else ``<run>/export/inspect/``.

``--output`` is checked before the run is read (`check_output`): a file must not be a
directory, a folder must not be a file, and the folder that will hold what is written
must be one that can be created and written. A write that fails anyway leaves nothing
behind: no temp file, no folder it created, no log half-written.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from continuity.commands.aggregation import RunRequest, run_dir
from continuity.commands.selection import Selection
from continuity.errors import UsageError

if TYPE_CHECKING:
    from continuity.report.export import ExportRow, RowFormat

__all__ = ["ExportRequest", "check_output", "export"]


class ExportRequest(RunRequest, frozen=True, kw_only=True):
    """``doit export``: the run, the format, where to write it ("": beside the run), the
    pricing catalog ("": the default one) and the scorer (``current`` or ``original``)."""

    format: str = "jsonl"
    output: str = ""
    pricing: str = ""
    scorer: str = "current"


def _invalid(why: str, target: Path | str) -> UsageError:
    return UsageError(
        f"--output cannot be written: {why}", code="export_output_invalid", location=str(target)
    )


def check_output(text: str, folder_output: bool) -> Path | None:
    """``--output`` (`text`; "" for the default, None back) as an absolute path, checked
    without leaving anything behind: `folder_output` (the inspect format) names a folder,
    else a file. The folder that would hold the output is created with its missing
    parents to prove it can be, and removed again.

    Raises:
        UsageError: ``export_output_invalid`` (at the path) for a file output that is an
            existing directory, a folder output that exists and is not a directory, a
            path under a file, or a folder that cannot be created (``/proc/nope``) or
            written.
    """
    if not text:
        return None
    if "\x00" in text:
        raise _invalid("not a usable path", repr(text))
    target = Path(text).expanduser().absolute()
    if not folder_output and target.is_dir():
        raise _invalid("it is a directory; name a file (or leave --output out)", target)
    if folder_output and target.exists() and not target.is_dir():
        raise _invalid("it exists and is not a directory; --format inspect writes a folder", target)
    folder = target if folder_output else target.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
    if not existing.is_dir():
        raise _invalid(f"{existing} is not a directory, so nothing can be written under it", target)
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_created(created)
        why = exc.strerror or type(exc).__name__
        raise _invalid(f"cannot create {folder}: {why}", target) from None
    writable = os.access(folder, os.W_OK | os.X_OK)
    _remove_created(created)
    if not writable:
        raise _invalid(f"{folder} is not writable", target)
    return target


def _reason(exc: OSError) -> str:
    why = exc.strerror or type(exc).__name__
    return f"{why} ({exc.filename})" if exc.filename else why


def _remove_created(created: list[Path]) -> None:
    """Remove the folders a check or a failed write created (`created`: deepest first),
    each only while it is empty."""
    for folder in created:
        with contextlib.suppress(OSError):
            folder.rmdir()


def export(request: ExportRequest) -> str:
    """Write the run's samples; the summary line names the file (or folder) and counts
    the rows.

    Raises:
        UsageError: ``export_format_unknown``, ``export_extra_missing`` and
            ``export_output_invalid`` (all checked before the run is read; the last also
            for a write that fails), ``run_unknown`` for a run that is not there (at
            ``--run`` or ``--run-dir``, `run_dir`), ``run_empty`` for one without
            samples, ``scorer_unknown``. PricingError: ``pricing_invalid``.
            AggregateError: ``unit_malformed``, ``run_manifest_malformed``.
    """
    from continuity.plan.pricing import default_catalog_path, load_catalog
    from continuity.report.export import EXPORT_FORMATS, export_run

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
    output = check_output(request.output, folder_output=form == "inspect")
    run = run_dir(request)
    if not (run / "units").is_dir():
        raise UsageError(
            f"{run} holds no units to export",
            code="run_empty",
            location="--run-dir" if request.run_dir else "--run",
        )
    catalog = load_catalog(Path(request.pricing) if request.pricing else default_catalog_path())
    exported = export_run(Selection(request).store, run, request.scorer or "current", catalog)
    rows = exported.rows
    if not rows:  # as aggregate: a run without samples is refused, not exported empty
        raise UsageError(
            f"{run} holds no samples to export",
            code="run_empty",
            location="--run-dir" if request.run_dir else "--run",
        )
    if form == "inspect":
        from continuity.report.inspect_log import write_inspect_logs

        folder = output or run / "export" / "inspect"
        try:  # each log whole or none at all: a failure removes what it wrote
            logs = write_inspect_logs(exported, run.name, folder)
        except OSError as exc:
            raise _invalid(_reason(exc), folder) from None
        return (
            f"export: {len(rows)} samples of {run.name} as {len(logs)} Inspect logs "
            f"(one per suite and arm); written to {folder} (open with: inspect view "
            f"--log-dir {folder})"
        )
    path = output or run / "export" / f"samples.{form}"
    _write_rows(path, exported.rows, form)
    return f"export: {len(rows)} samples of {run.name} as {form}; written to {path}"


def _write_rows(path: Path, rows: list[ExportRow], form: RowFormat) -> None:
    """Write `rows` to `path` atomically; a failure removes the folders it created.

    Raises:
        UsageError: ``export_output_invalid`` when the file cannot be written.
    """
    from continuity.outputs import write_output
    from continuity.report.export import export_bytes

    created = [p for p in path.parents if not p.exists()]
    try:
        write_output(path, export_bytes(rows, form))
    except OSError as exc:  # write_output removed its temp file
        _remove_created(created)
        raise _invalid(_reason(exc), path) from None
