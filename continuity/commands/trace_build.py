"""``doit traces``: build, validate, store and materialise a trace suite.

`traces` is the command's entry point; `rules/traces.py` declares its options and calls
it with them typed once (`TracesRequest`). With ``--file`` it validates and stores one
user-supplied trace file instead of the suite. `traces_current` is the task's uptodate
check and `traces_where` an up-to-date run's location line.
"""

from __future__ import annotations

from pathlib import Path

from continuity.commands.selection import Selection
from continuity.errors import ContinuityError
from continuity.requests import SuiteRequest

__all__ = ["TracesRequest", "traces", "traces_current", "traces_where"]


class TracesRequest(SuiteRequest, frozen=True, kw_only=True):
    """``doit traces``: the selection, or ("" is none) one user trace file to validate
    and store instead."""

    file: str = ""


def traces(request: TracesRequest) -> str:
    """Validate and store the ``--file`` trace, else build the suite; returns the
    summary line."""
    from continuity.progress import progress
    from continuity.traces.suites import build_suite, store_trace_file

    chosen = Selection(request)
    file = request.file
    if file:
        item = store_trace_file(chosen.store, Path(file), out_dir=chosen.out)
        return f"traces: {file} is valid; stored as {item.digest} ({item.trace_id})"
    with progress(f"traces {chosen.suite}") as tick:
        result = build_suite(
            chosen.store, chosen.suite, chosen.seeds, out_dir=chosen.out, progress=tick
        )
    return (
        f"traces: {len(result.items)} {chosen.suite} traces ({result.built} built, "
        f"{len(result.items) - result.built} from the store); manifest at "
        f"{result.manifest_path}"
    )


def traces_current(request: TracesRequest) -> bool:
    """doit's uptodate: building the suite would do nothing (never with ``--file``); False
    when the selection is bad (the action then runs and reports the error with its code)."""
    from continuity.traces.keys import suite_is_current

    if request.file:
        return False  # validating a user file is the point of the call
    try:
        chosen = Selection(request)
    except ContinuityError:
        return False
    return suite_is_current(chosen.store, chosen.suite, chosen.seeds, out_dir=chosen.out)


def traces_where(request: TracesRequest) -> str:
    """An up-to-date run's location line."""
    chosen = Selection(request)
    manifest = chosen.out / "traces" / chosen.suite / "manifest.json"
    return f"traces: {chosen.suite} up to date; manifest at {manifest}"
