"""Benchmark: an outside agent's units on a Dask cluster against a local build.

Run from the checkout root:  python benchmarks/bench_agent_cluster.py [--runs N]

The case a cluster is for: every sample re-replays the whole trace through the agent in
its own processes. Each run builds the toy agent's (examples/agents/toy/v1.toml) units
for the original suite's four traces, three arms (native, continuity-store,
continuity-pack-cold), one probe each (12 units, 12 samples), into a fresh store, three
ways, runs alternating:
1. the named baseline, `local`: ``doit units --agent``'s own build (one trace at a time);
2. `local-2`: the local build with two traces at once (two threads);
3. `dask-2-shared`: a ``LocalCluster`` of two worker processes over a shared store (a
   directory backend), one trace's units a task; the figure includes starting and
   stopping the cluster.
Prints each way's median wall time and samples per second, and its ratio to `local`.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks._ways import compare_ways
from continuity.agents.manifest import load_manifest
from continuity.plan.from_request import plan_from_request
from continuity.plan.request import PlanRequest
from continuity.runner.agent_cluster import build_agent_units_on_cluster
from continuity.runner.agent_units import AgentUnitPlan, build_agent_units
from continuity.runner.cluster import Cluster
from continuity.store import Store
from continuity.traces.suites import build_suite
from continuity.traces.validate import load_trace

AGENT = Path("examples/agents/toy/v1.toml")
OPTIONS = {"agent": str(AGENT), "suite": "original", "probe_limit": 1,
           "arms": "native,continuity-store,continuity-pack-cold"}  # fmt: skip
WAYS = ("local", "local-2", "dask-2-shared")
SAMPLES = 12


def _one(way: str) -> float:
    folder = Path(tempfile.mkdtemp(prefix="bench-agent-cluster-"))
    try:
        start = time.perf_counter()
        store = Store(folder / "store")
        plan = AgentUnitPlan.of(plan_from_request(PlanRequest.of(OPTIONS)), load_manifest(AGENT))
        items = build_suite(store, "original", out_dir=folder).items
        traces = [(i.key, load_trace(store.get_blob(i.digest), source=i.trace_id)) for i in items]
        run = folder / "run"
        if way == "dask-2-shared":
            cluster = Cluster(workers=2, shared=str(folder / "shared"))
            build = build_agent_units_on_cluster(store, plan, traces, run, cluster=cluster)
        else:
            build = build_agent_units(
                store, plan, traces, run, workers=2 if way == "local-2" else 1
            )
        elapsed = time.perf_counter() - start
        assert build.built == len(build.records) == SAMPLES, (way, build.built)
        return elapsed
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    compare_ways(__doc__.split("\n")[0], WAYS, _one, SAMPLES)


if __name__ == "__main__":
    main()
