"""Benchmark: units on a Dask cluster against the local runner, on this machine.

Run from the checkout root:  python benchmarks/bench_cluster.py [--runs N]

Each run builds the original suite's offline units (every default arm, two probes a
unit: 32 units, 64 samples) into a fresh store, four ways, runs alternating:
1. the named baseline, `local`: ``doit units`` in this process's runner threads
   (``--jobs 2``, one per core);
2. `dask-1`: a ``LocalCluster`` of one worker process (``--executor dask --workers 1``);
3. `dask-2`: a ``LocalCluster`` of two worker processes;
4. `dask-2-shared`: two workers over a shared store (a directory backend): every worker
   builds into a cache of its own, fetches each trace first, publishes each unit, and
   the client fetches every unit back.
Each figure includes starting and stopping the cluster. Prints each way's median wall
time and samples per second, and its median ratio to `local`.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks._ways import compare_ways
from continuity.runner.cluster import Cluster
from continuity.runner.units.build import build_units
from continuity.store import Store

WAYS: dict[str, Cluster | None] = {
    "local": None,
    "dask-1": Cluster(workers=1),
    "dask-2": Cluster(workers=2),
    "dask-2-shared": Cluster(workers=2, shared="SHARED"),
}
SAMPLES = 64


def _one(way: str) -> float:
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    cluster = WAYS[way]
    if cluster is not None and cluster.shared:
        cluster = Cluster(workers=cluster.workers, shared=str(folder / "shared"))
    try:
        start = time.perf_counter()
        store = Store(folder / "store")
        run = folder / "run"
        records, _, built = build_units(
            store, "original", probe_limit=2, run_dir=run, jobs=2, cluster=cluster
        )
        elapsed = time.perf_counter() - start
        assert built == len(records) == 32, (way, built)
        return elapsed
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    compare_ways(__doc__.split("\n")[0], list(WAYS), _one, SAMPLES)


if __name__ == "__main__":
    main()
