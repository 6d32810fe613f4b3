"""Running a plan: checkpoints, units (offline and real), outside agents' units, the
lookup inventory and fixed-budget sizing, preflight slots, judge calibration and the run
manifest."""

__all__: list[str] = []
