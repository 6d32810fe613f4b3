"""`doit export`: its options, and one call (`continuity.commands.export_run.export`)."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.aggregate import READ_RUN, RUN_DIR, SCORER
from rules.params import OUT, STORE, TaskSpec, param
from rules.plan import PRICING

__all__ = ["task_export"]

FORMAT = param(
    "format",
    str,
    "jsonl",
    "jsonl (one JSON object per sample; default) | csv | inspect (Inspect eval logs, one "
    "per suite and arm, for inspect view; needs the inspect extra)",
)
OUTPUT = param(
    "output",
    str,
    "",
    "the file to write (default: <run>/export/samples.<format>); for inspect, the folder "
    "(default: <run>/export/inspect/)",
)


def _export(**options: Any) -> str:
    from continuity.commands.export_run import ExportRequest, export

    return export(ExportRequest.of(options))


def task_export() -> TaskSpec:
    """Write a run's samples for other tools: JSON Lines, CSV, or Inspect eval logs."""
    return {
        "actions": [task_action(_export)],
        "params": [READ_RUN, RUN_DIR, FORMAT, OUTPUT, PRICING, SCORER, STORE, OUT],
        "verbosity": 2,
    }
