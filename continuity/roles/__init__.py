"""Cross-checkout comparison roles (offline only): guidance as a treatment, frozen souls,
six roles over two clean checkouts of this project, their registration, runs and
aggregate."""

__all__ = [
    "aggregate_render",
    "pilot",
    "pilot_estimate",
    "pilot_run",
    "receipt",
    "register",
    "register_holdout",
    "run",
    "run_launch",
    "table",
]
