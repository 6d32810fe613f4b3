"""What a command's options select: the store, the suite, its seeds and the output
directory, each read and checked once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Selection"]


class Selection:
    """The store, suite, seeds and output directory a task's options select.

    Raises:
        UsageError: ``seeds_invalid``, ``store_path_invalid`` or ``out_path_invalid``.
    """

    def __init__(self, options: Mapping[str, Any]) -> None:
        from continuity.outputs import usable_out_path
        from continuity.store import Store
        from continuity.traces.keys import parse_seeds

        self.suite: str = options.get("suite") or "original"
        seeds = options.get("seeds")
        self.seeds = parse_seeds(seeds) if seeds else None
        self.store = Store(options.get("store") or None)
        self.out = usable_out_path(options.get("out") or None)
