"""What a command's request selects: the store, the suite, its seeds and the output
directory, each read and checked once."""

from __future__ import annotations

from continuity.requests import Request, SuiteRequest

__all__ = ["Selection"]


class Selection:
    """The store, suite, seeds and output directory a task's request selects (a request
    without a suite selects the original suite's default seeds).

    Raises:
        UsageError: ``seeds_invalid``, ``store_path_invalid`` or ``out_path_invalid``.
    """

    def __init__(self, request: Request) -> None:
        from continuity.outputs import usable_out_path
        from continuity.store import Store
        from continuity.traces.keys import parse_seeds

        suite, seeds = (
            (request.suite, request.seeds) if isinstance(request, SuiteRequest) else ("", "")
        )
        self.suite: str = suite or "original"
        self.seeds = parse_seeds(seeds) if seeds else None
        self.store = Store(request.store or None)
        self.out = usable_out_path(request.out or None)
