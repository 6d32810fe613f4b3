"""Aggregation of unit records into results.json, summary.md and report.html."""

__all__ = [
    "compare",
    "compare_runs",
    "export",
    "findings",
    "freshness",
    "inspect_log",
    "lookup",
    "rescore",
    "results",
    "runs",
    "sections",
    "threshold",
]
