"""Cross-checkout comparison roles (offline): guidance as a treatment, frozen souls,
six roles over two clean checkouts of this project, their registration, runs and
aggregate; the capped real pilot's top layer (`pilot/`)."""

__all__ = [
    "aggregate_render",
    "pilot",
    "receipt",
    "register",
    "register_holdout",
    "run",
    "run_launch",
    "table",
]
