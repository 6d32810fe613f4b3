"""Plans, workload and price estimates, and the guards around real mode."""

__all__ = [
    "agent_plan",
    "estimate",
    "estimate_format",
    "from_request",
    "guards",
    "holdout_plan",
    "holdout_pricing",
    "ledger_plan",
    "limits",
    "lookup_estimate",
    "lookup_report",
    "lookup_slots",
    "models",
    "pilot_catalog",
    "pilot_estimate",
    "plan",
    "pricing",
    "readiness",
    "request",
    "workload",
]
