"""Run grouped work in parallel: one group's items in order, groups side by side.

Items of one group share a checkpoint (its pinned workspace path and its lock), so they
run in order in one thread; different groups run in up to `jobs` threads. Offline runs
group by trace (their local work is CPU-bound; `checkpoint_group`'s finer split buys
nothing on two cores). Real runs wait on the model most of the time, so they group by
the checkpoint a unit forks (`checkpoint_group`): every checkpoint of the plan can
proceed at once, bounded by the model slots (``--concurrency`` calls per model) and by
`real_jobs` (the slots, the cores and the memory). Results come back in the order of
the items; the first failure is re-raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import msgspec

from continuity.arms import Arm, replay_config_for
from continuity.interrupts import interrupted
from continuity.progress import Tick

__all__ = [
    "MAX_REAL_JOBS",
    "THREAD_MEMORY",
    "Item",
    "Result",
    "Status",
    "available_memory",
    "checkpoint_group",
    "real_jobs",
    "run_grouped",
]

Item = TypeVar("Item")
Result = TypeVar("Result")
Status = TypeVar("Status", bound=str)  # the work's status word (e.g. `UnitStatus`)

# What one real runner thread holds while its unit runs: its zygote, the unit worker
# forked from it and the probe child (measured on the README walkthrough: 466 MB
# proportional set size for four threads, with the runner itself).
THREAD_MEMORY = 128 * 2**20
# Past this many threads the zygotes' start-up imports cost more local work than the
# overlap saves, whatever the slots allow.
MAX_REAL_JOBS = 16


def checkpoint_group(trace_id: str, arm: Arm, repeat: int) -> str:
    """The group a real unit runs in: the checkpoint it forks.

    Arms that replay the same history (native and compaction-1) share one checkpoint and
    so one group; a real arm with a mid-trace compaction forks a checkpoint of its own
    per repeat (its summary is a real call of that repeat), so each repeat is a group.
    """
    config = replay_config_for(arm)
    own = f" r{repeat}" if config.mid_trace_compaction else ""
    return f"{trace_id} {msgspec.json.encode(config).decode()}{own}"


def available_memory() -> int | None:
    """The memory the kernel says new work can use (``MemAvailable``), or None where
    it does not say (not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def real_jobs(concurrency: int, models: int, *, memory: int | None, cpus: int | None) -> int:
    """Runner threads for a real run with `concurrency` calls per model and `models`
    models (the reader, and the judge when there is one).

    One thread per model slot keeps the slots busy; past two threads per core (`cpus`)
    the threads' local work (replays, forks, the MCP servers) contends for the CPU and
    each thread's zygote adds its imports (measured on the README walkthrough on two
    cores at 500 ms a call: 8 threads took 31 s where 4 took 24 s). Never more than half
    of `memory` (``MemAvailable``) allows at `THREAD_MEMORY` a thread, nor more than
    `MAX_REAL_JOBS`; at least one.
    """
    wanted = max(1, concurrency) * max(1, models)
    wanted = min(wanted, 2 * max(1, cpus or 1), MAX_REAL_JOBS)
    if memory is not None:
        wanted = min(wanted, memory // 2 // THREAD_MEMORY)
    return max(1, wanted)


def run_grouped(
    items: Sequence[Item],
    *,
    group_of: Callable[[Item], str],
    work: Callable[[Item], tuple[Result, Status]],
    describe: Callable[[Item], str],
    jobs: int,
    progress: Tick | None = None,
) -> list[tuple[Result, Status]]:
    """Apply `work` (returning a result and a status word) to every item: the items of
    one group (`group_of`) in order, up to `jobs` groups at a time."""
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
        groups.setdefault(group_of(item), []).append(index)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(run_group, g) for g in groups.values()]:
            future.result()
    return [outcome for outcome in outcomes if outcome is not None]
