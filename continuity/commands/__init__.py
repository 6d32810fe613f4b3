"""The commands: one entry point per doit task that runs work, taking the task's
typed request (`continuity.requests.Request`, converted once from doit's options) and
returning its summary line (`units.run_units`). `rules/` declares each task's options
and calls its entry point; nothing below this layer reads a doit option."""

__all__ = [
    "agent_check",
    "agent_units",
    "aggregation",
    "calibrate_judge",
    "catalog",
    "checkpoint_build",
    "comparison",
    "estimation",
    "export_run",
    "holdouts",
    "import_locomo",
    "ledger_check",
    "lookup_sizing",
    "offline_contract",
    "pilot_runs",
    "planning",
    "preflight_runs",
    "qualification",
    "reference",
    "role_runs",
    "selection",
    "store_upkeep",
    "trace_build",
    "units",
    "units_request",
]
