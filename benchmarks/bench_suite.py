"""Benchmark: how long the test suite takes, whole and in its fast tier.

Run from the checkout root:  python benchmarks/bench_suite.py [--runs N] [--tier T]

Each run is the README's test command (`python -m pytest`, every test, two xdist
workers on this 2-core machine) or the fast tier (`python -m pytest -m "not slow"`), in
a fresh process, with pytest's cache off so no run reuses another's state. Runs
alternate between the tiers. Prints each wall time, then the median per tier and the
fast tier as a ratio of the whole suite (the named baseline, measured in the same run).
A run that fails is reported and counts: a slow failure is still slow.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = {
    "whole": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
    "fast": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow"],
}


def _one(tier: str) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run(TIERS[tier], cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return seconds, done.returncode, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per tier (default 3)")
    parser.add_argument("--tier", choices=(*TIERS, "both"), default="both")
    args = parser.parse_args()
    tiers = list(TIERS) if args.tier == "both" else [args.tier]
    times: dict[str, list[float]] = {tier: [] for tier in tiers}
    for run in range(args.runs):
        for tier in tiers:
            seconds, code, last = _one(tier)
            times[tier].append(seconds)
            print(f"run {run + 1} {tier}: {seconds:7.1f} s (exit {code}) {last}", flush=True)
    for tier, values in times.items():
        print(f"{tier}: median {statistics.median(values):7.1f} s over {len(values)} runs")
    if len(tiers) == 2:
        ratio = statistics.median(times["fast"]) / statistics.median(times["whole"])
        print(f"fast / whole: {ratio:.2f}")


if __name__ == "__main__":
    main()
