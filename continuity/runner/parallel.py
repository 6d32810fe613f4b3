"""Run per-trace work in parallel: one trace's items in order, traces side by side.

Items of one trace share checkpoints (and their locks), so they run in order in one
thread; different traces run in up to `jobs` threads. Results come back in the order of
the items; the first failure is re-raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from continuity.interrupts import interrupted
from continuity.progress import Tick

__all__ = ["Item", "Result", "Status", "run_by_trace"]

Item = TypeVar("Item")
Result = TypeVar("Result")
Status = TypeVar("Status", bound=str)  # the work's status word (e.g. `UnitStatus`)


def run_by_trace(
    items: Sequence[Item],
    *,
    trace_of: Callable[[Item], str],
    work: Callable[[Item], tuple[Result, Status]],
    describe: Callable[[Item], str],
    jobs: int,
    progress: Tick | None = None,
) -> list[tuple[Result, Status]]:
    """Apply `work` (returning a result and a status word) to every item."""
    outcomes: list[tuple[Result, Status] | None] = [None] * len(items)
    finished = 0
    lock = threading.Lock()

    def run_group(indexes: list[int]) -> None:
        nonlocal finished
        for index in indexes:
            if interrupted():  # Ctrl-C or SIGTERM: the main thread is unwinding
                return
            outcome = work(items[index])
            with lock:
                outcomes[index] = outcome
                finished += 1
                if progress is not None:
                    progress(finished, len(items), describe(items[index]), outcome[1])

    groups: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        groups.setdefault(trace_of(item), []).append(index)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(run_group, g) for g in groups.values()]:
            future.result()
    return [outcome for outcome in outcomes if outcome is not None]
