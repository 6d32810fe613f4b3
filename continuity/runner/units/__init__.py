"""Units: one record per repeat x trace x arm, holding every probe's answer and score.

`build` is the run's orchestrator (`build_units`); `run` runs one unit; `plan` is one
unit as the runner plans it; `selection` chooses the units and their probes; `worker`
is the unit worker call; `grading` classifies and scores a unit's samples; `record`
holds the record types, the key and the file name; `store` seals, stores and
materialises a unit."""

__all__ = [
    "build",
    "execution",
    "grading",
    "plan",
    "record",
    "run",
    "store",
    "worker",
]
