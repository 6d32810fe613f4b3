"""Running a plan: checkpoints, units (offline and real), outside agents' units, the
lookup inventory and fixed-budget sizing, preflight slots, judge calibration and the run
manifest."""

__all__ = [
    "agent_cluster",
    "agent_real",
    "agent_units",
    "checkpoints",
    "children",
    "cluster",
    "design",
    "fixed_budget",
    "inventory",
    "judge_calibration",
    "ledger_run",
    "ledger_smoke",
    "lookup_budget",
    "lookup_run",
    "manifest",
    "preflight",
    "real",
    "real_request",
    "samples",
    "units",
]
