"""Benchmarks for issue 2: trace generation throughput and the no-op doit overhead.

Run from the checkout root:  python benchmarks/bench_traces.py [--runs N]

1. Generation + validation + store of hard seeds 101-108 into a fresh store, against the
   named baseline "store only" (put_blob of the same bytes into a fresh store: the
   hashing and fsync floor), both measured in this run.
2. A no-op ``doit traces --suite hard`` (everything already in the store) against
   ``doit list`` on the same dodo.py, interleaved, in fresh processes.

Medians over --runs repetitions; these shared machines are noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from continuity.store import Store
from continuity.traces.suites import build_suite

REPO = Path(__file__).resolve().parents[1]


def _generation(runs: int) -> tuple[float, float, int]:
    totals, baselines = [], []
    size = 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "store")
            started = time.perf_counter()
            result = build_suite(store, "hard", out_dir=Path(tmp) / "out")
            totals.append(time.perf_counter() - started)
            blobs = [store.get_blob(item.digest) for item in result.items]
            size = sum(len(b) for b in blobs)
            fresh = Store(Path(tmp) / "baseline")
            started = time.perf_counter()
            for blob in blobs:
                fresh.put_blob(blob)
            baselines.append(time.perf_counter() - started)
    return statistics.median(totals), statistics.median(baselines), size


def _doit(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), *args],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def _noop(runs: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CONTINUITY_STORE": f"{tmp}/store", "CONTINUITY_OUT": f"{tmp}/out"}
        _doit(["traces", "--suite", "hard"], env)
        noop, listing = [], []
        for _ in range(runs):
            noop.append(_doit(["traces", "--suite", "hard"], env))
            listing.append(_doit(["list"], env))
    return statistics.median(noop), statistics.median(listing)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    total, baseline, size = _generation(args.runs)
    noop, listing = _noop(args.runs)
    mb = size / 1e6
    print(f"## Trace benchmarks ({args.runs} runs, medians)\n")
    print("| measurement | median | baseline (same run) | ratio | goal |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| hard 101-108: generate + validate + store ({mb:.1f} MB) | {total:.3f} s "
        f"({mb / total:.1f} MB/s) | store only: {baseline:.3f} s | {total / baseline:.1f}x "
        "| <= 2 s |"
    )
    print(
        f"| no-op `doit traces --suite hard` | {noop:.3f} s | `doit list`: {listing:.3f} s "
        f"| {noop / listing:.2f}x | <= 1.5x |"
    )


if __name__ == "__main__":
    main()
