"""doit entry point: wires `rules/` into doit. No benchmark logic lives here."""

from continuity.argv import front_door
from continuity.graph import doit_config
from continuity.interrupts import install as install_interrupt_handlers
from rules.agents import task_agent_check
from rules.aggregate import task_aggregate, task_score
from rules.calibrate import task_calibrate
from rules.catalog import task_arms, task_runs
from rules.checkpoints import task_checkpoints
from rules.compare import task_compare
from rules.contract import task_offline_contract
from rules.estimate import task_estimate
from rules.export import task_export
from rules.holdout import (
    task_holdout_freeze,
    task_holdout_overlap,
    task_holdout_select,
    task_holdout_validate,
)
from rules.ledger import task_ledger_smoke
from rules.locomo import task_import_locomo
from rules.lookup import task_lookup_budget
from rules.pilot import task_compare_pilot, task_pilot_register, task_pilot_smoke
from rules.plan import task_dry_run, task_plan
from rules.preflight import task_compare_preflight
from rules.qualify import task_qualify
from rules.roles import task_compare_aggregate, task_compare_register, task_compare_run
from rules.store import task_gc, task_verify
from rules.traces import task_traces
from rules.units import task_units

front_door()  # run from another directory (-f), doit never read pyproject.toml's loader
install_interrupt_handlers()  # Ctrl-C, SIGTERM: one line, exit 130 or 143, no traceback
DOIT_CONFIG = doit_config()

# The order `doit list` and `doit help` show the tasks in (continuity.argv): everyday
# work first; last, comparing registered checkouts and the capped real pilots.
# tests/graph/test_task_groups.py checks that every task is in exactly one group.
TASK_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Everyday",
        (
            "offline_contract",
            "traces",
            "checkpoints",
            "units",
            "aggregate",
            "score",
            "export",
            "runs",
            "arms",
        ),
    ),
    ("Compare and gate", ("compare", "calibrate")),
    ("Checks of the benchmark itself", ("qualify", "ledger_smoke")),
    ("Outside agents", ("agent_check",)),
    ("Real models and spend", ("plan", "dry_run", "estimate", "lookup_budget")),
    (
        "Holdouts",
        (
            "holdout_validate",
            "holdout_freeze",
            "holdout_select",
            "holdout_overlap",
            "import_locomo",
        ),
    ),
    ("The store", ("verify", "gc")),
    (
        "Advanced: checkout comparisons and pilots",
        (
            "compare_register",
            "compare_preflight",
            "compare_run",
            "compare_aggregate",
            "pilot_register",
            "pilot_smoke",
            "compare_pilot",
        ),
    ),
)

__all__ = [
    "DOIT_CONFIG",
    "TASK_GROUPS",
    "task_agent_check",
    "task_aggregate",
    "task_arms",
    "task_calibrate",
    "task_checkpoints",
    "task_compare",
    "task_compare_aggregate",
    "task_compare_pilot",
    "task_compare_preflight",
    "task_compare_register",
    "task_compare_run",
    "task_dry_run",
    "task_estimate",
    "task_export",
    "task_gc",
    "task_holdout_freeze",
    "task_holdout_overlap",
    "task_holdout_select",
    "task_holdout_validate",
    "task_import_locomo",
    "task_ledger_smoke",
    "task_lookup_budget",
    "task_offline_contract",
    "task_pilot_register",
    "task_pilot_smoke",
    "task_plan",
    "task_qualify",
    "task_runs",
    "task_score",
    "task_traces",
    "task_units",
    "task_verify",
]
