"""Profile: where the offline contract's CPU goes, stage by stage.

Run from the checkout root, on an otherwise idle machine:

    python benchmarks/profile_contract.py

It runs the contract's stages one after another in this process (the contract itself
runs some of them side by side), in a fresh store, and prints for each its wall time,
the CPU the kernel reports for this process and the children it reaped (user, system,
minor page faults: `getrusage`), and the whole machine's busy CPU over the stage
(``/proc/stat``). The last column is the one to trust for the outside-agent pass: its
adapters run in a sandbox whose own PID namespace reaps them, so `getrusage` never sees
their CPU. Each stage that forks probe children gets a zygote pool of its own, closed
at its end, so the zygotes' children are reaped inside it.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
T = TypeVar("T")
sys.path.insert(0, str(REPO))


def _machine_busy() -> float:
    """Seconds of CPU the whole machine has spent busy (not idle, not waiting on I/O)."""
    with open("/proc/stat", encoding="ascii") as handle:
        ticks = [int(v) for v in handle.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _usage() -> tuple[float, float, int]:
    own, reaped = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return (
        own.ru_utime + reaped.ru_utime,
        own.ru_stime + reaped.ru_stime,
        own.ru_minflt + reaped.ru_minflt,
    )


def main() -> int:
    os.environ.pop("CI", None)
    import continuity.contract as contract
    from continuity.contract_agent import start_outside_agent
    from continuity.plan.plan import build_plan
    from continuity.plan.pricing import default_catalog_path
    from continuity.progress import stages
    from continuity.report.freshness import aggregate_stamped
    from continuity.runner.children import ZYGOTE_PRELOAD
    from continuity.runner.manifest import utc_stamp, write_run_manifest
    from continuity.store import Store
    from continuity.zygote import ZygotePool

    rows: list[tuple[str, float, float, float, int, float]] = []

    def stage(name: str, work: Callable[[], T]) -> T:
        user, system, faults = _usage()
        busy, started = _machine_busy(), time.perf_counter()
        result = work()
        wall = time.perf_counter() - started
        user2, system2, faults2 = _usage()
        rows.append(
            (name, wall, user2 - user, system2 - system, faults2 - faults, _machine_busy() - busy)
        )
        return result

    def pooled(work: Callable[[ZygotePool], T]) -> Callable[[], T]:
        def run() -> T:
            with ZygotePool(ZYGOTE_PRELOAD, start=2) as zygotes:
                return work(zygotes)

        return run

    with tempfile.TemporaryDirectory(prefix="profile-contract-") as tmp:
        store, out = Store(Path(tmp) / "store"), Path(tmp) / "out"
        run_dir = out / "runs" / contract.CONTRACT_RUN
        with stages("profile", 8, force_plain=True):
            results = stage("suites", lambda: contract._build_suites(store, out))
            originals = [(i.key, i.digest) for i in results["original"].items]

            def agent() -> str:
                running = start_outside_agent(store, originals, out / "runs" / "agent")
                try:
                    return running.result()
                finally:
                    running.stop()

            stage("outside-agent pass", agent)
            stage("checkpoints", lambda: contract._check_checkpoints(store, out, results))
            stage("units", pooled(lambda z: contract._run_units(store, run_dir, z)))
            stage("ledger samples", pooled(lambda z: contract._ledger_samples(store, out, z)))
            stage(
                "design checks",
                pooled(lambda z: contract._check_designs(store, results["hard"], z)),
            )
            plan = build_plan(arms=contract.CONTRACT_ARMS, judge=contract.CONTRACT_JUDGE)
            write_run_manifest(run_dir, plan, started=utc_stamp(), suites=["original", "hard"])
            stage("aggregate", lambda: aggregate_stamped(store, run_dir, default_catalog_path()))
    print(f"\n{'stage':<20} {'wall':>7} {'user':>7} {'system':>7} {'faults':>10} {'machine':>8}")
    for name, wall, user, system, faults, busy in rows:
        print(f"{name:<20} {wall:6.1f}s {user:6.1f}s {system:6.1f}s {faults:10,d} {busy:7.1f}s")
    wall = sum(r[1] for r in rows)
    user = sum(r[2] for r in rows)
    system = sum(r[3] for r in rows)
    busy = sum(r[5] for r in rows)
    print(f"{'all':<20} {wall:6.1f}s {user:6.1f}s {system:6.1f}s {'':>10} {busy:7.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
