"""Task parameters shared by several task families."""

from __future__ import annotations

from typing import Any

STORE: dict[str, Any] = {
    "name": "store",
    "long": "store",
    "type": str,
    "default": "",
    "help": "artifact store directory (default: $CONTINUITY_STORE or ./store)",
}
OUT: dict[str, Any] = {
    "name": "out",
    "long": "out",
    "type": str,
    "default": "",
    "help": "output directory (default: $CONTINUITY_OUT or ./out)",
}


def param(name: str, kind: type, default: Any, text: str) -> dict[str, Any]:
    """A doit task parameter whose long option is `name` with dashes."""
    return {
        "name": name,
        "long": name.replace("_", "-"),
        "type": kind,
        "default": default,
        "help": text,
    }


class Selection:
    """The store, suite, seeds and output directory a task's options select."""

    def __init__(self, options: dict[str, Any]) -> None:
        from continuity.outputs import resolve_out_path
        from continuity.store import Store
        from continuity.traces.keys import parse_seeds

        self.suite: str = options.get("suite") or "original"
        seeds = options.get("seeds")
        self.seeds = parse_seeds(seeds) if seeds else None
        self.store = Store(options.get("store") or None)
        self.out = resolve_out_path(options.get("out") or None)


def selection_or_none(task: Any) -> Selection | None:
    """The task's selection for an uptodate check; None when its options are bad (the
    action then runs and reports the error with its code)."""
    from continuity.errors import ContinuityError

    try:
        return Selection(task.options or {})
    except ContinuityError:
        return None
