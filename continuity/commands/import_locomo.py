"""``doit import_locomo``: LoCoMo's archive as an external holdout source
(`continuity.holdout.locomo_import`), and the command that validates it next."""

from __future__ import annotations

from continuity.errors import UsageError
from continuity.requests import Request

__all__ = ["ImportLocomoRequest", "import_locomo"]


class ImportLocomoRequest(Request, frozen=True, kw_only=True):
    """`doit import_locomo`: LoCoMo's archive (``zip``) and the new directory to write
    (``output``); both are required ("" is missing)."""

    zip: str = ""
    output: str = ""


def import_locomo(request: ImportLocomoRequest) -> str:
    """Import the archive into the new directory; the summary: what was read, kept and
    dropped, the ``doit holdout_validate`` command for the result, and where it is.

    Raises:
        UsageError: ``option_value_missing`` (no ``--zip``, then no ``--output``), or the
            import's own codes (``locomo_zip_unreadable``, ``locomo_format_invalid``,
            ``locomo_output_exists``, ``locomo_output_invalid``).
    """
    import shlex
    from pathlib import Path

    from continuity.holdout import locomo_import
    from continuity.installation import task_command

    for name, value in (("zip", request.zip), ("output", request.output)):
        if not value:
            raise UsageError(
                f"import_locomo needs --{name}",
                code="option_value_missing",
                location=f"--{name}",
            )
    result = locomo_import.import_locomo(Path(request.zip), Path(request.output))
    report = result.report
    by_category = ", ".join(f"{k} {v:,}" for k, v in report.probes_by_category.items())
    dropped = ", ".join(f"{k} {v}" for k, v in report.dropped_by_reason.items()) or "none"
    return (
        f"import_locomo: {len(report.conversations)} conversations, {report.questions:,} "
        f"questions read, {report.probes:,} probes ({by_category}); dropped "
        f"{len(report.dropped)} ({dropped}; see import-report.json)\n"
        f"next: {shlex.join(task_command())} holdout_validate --manifest {result.manifest} "
        f"--manifest-sha256 {result.manifest_sha256} --statistical-spec {result.spec}\n"
        f"source in {result.output} (manifest sha256 {result.manifest_sha256})"
    )
