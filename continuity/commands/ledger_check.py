"""``doit ledger_smoke``: the ledger arm's offline mechanism proof
(`continuity.runner.ledger_smoke`), and its summary line."""

from __future__ import annotations

from continuity.requests import Request

__all__ = ["LedgerSmokeRequest", "ledger_smoke"]


class LedgerSmokeRequest(Request, frozen=True, kw_only=True):
    """`doit ledger_smoke`: whether every extraction answers invalid JSON
    (``fail_upkeep``: the fallback and the content-free gap, no repair)."""

    fail_upkeep: bool = False


def ledger_smoke(request: LedgerSmokeRequest) -> str:
    """Run the smoke under ``<out>/ledger-smoke/``; the summary says what reached the
    upkeep input and the reader, and where the report is.

    Raises:
        UsageError: ``out_path_invalid``.
        ContinuityError: ``ledger_smoke_failed`` (a mechanism check did not hold; the
            report is written first).
    """
    from continuity.outputs import usable_out_path
    from continuity.runner.ledger_smoke import run_smoke

    fail = request.fail_upkeep
    report, path = run_smoke(usable_out_path(request.out or None), fail_upkeep=fail)
    if fail:
        return (
            f"ledger smoke (fail-upkeep) passed: {report.extraction_requests} extractions, "
            "each refused as invalid JSON and never repaired; the empty ledger and the "
            f"deterministic pack reached every reader request; a content-free gap of "
            f"{report.coverage_gap} spans; report in {path}"
        )
    return (
        f"ledger smoke passed: the buried tool id and the corrected amount reached the "
        f"upkeep input and all {report.reader_requests} cold reader requests (inside the "
        "ledger, once each, beside the question and the pack once each); report in "
        f"{path}"
    )
