"""Aggregation of unit records into results.json, summary.md and report.html."""

__all__: list[str] = []
