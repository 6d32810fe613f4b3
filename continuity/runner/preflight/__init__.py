"""The offline preparation preflight (``doit compare_preflight``): every scheduled lookup
slot prepared in a fresh child in a private root, its workspace checked against the
probe limits, then removed.

`run` schedules the slots and writes the report; `slot` runs one slot start to end;
`launch` makes the private root and starts the contained child; `child` is that child
(``python -m continuity.runner.preflight.child``); `tree` holds the workspace limits and
the dry restore; `records` the slot and finding types."""

__all__ = [
    "child",
    "run",
    "tree",
]
