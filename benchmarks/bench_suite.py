"""Benchmark: how long the test suite takes, whole and in its fast tier.

Run from the checkout root:  python benchmarks/bench_suite.py [--runs N] [--tier T]
                             python benchmarks/bench_suite.py --list-slow [SECONDS]

Each run is the README's test command (`python -m pytest`, every test, two xdist
workers on this 2-core machine) or the fast tier (`python -m pytest -m "not slow"`), in
a fresh process, with pytest's cache off so no run reuses another's state. Runs
alternate between the tiers. Prints each wall time, then the median per tier and the
fast tier as a ratio of the whole suite (the named baseline, measured in the same run).
A run that fails is reported and counts: a slow failure is still slow.

``--list-slow`` runs the default tier once with every test's time recorded and prints
the entries of tests/slow_tests.txt: each module whose fixture setup took 3 s or more,
and each other test function one of whose cases took SECONDS (default 1.5) or more.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
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


def list_slow(threshold: float) -> list[str]:
    """Run the default tier once, timed per test; the slow list's entries."""
    with tempfile.TemporaryDirectory() as folder:
        record = Path(folder) / "durations.tsv"
        env = {**os.environ, "CONTINUITY_DURATIONS": str(record)}
        command = [*TIERS["whole"], "-p", "benchmarks._durations"]
        subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=False)
        rows = [line.split("\t") for line in record.read_text().splitlines()]
    modules = {n.split("::")[0] for s, when, _, n in rows if when == "setup" and float(s) >= 3}
    per_case: dict[str, float] = {}
    for seconds, _, _, node in rows:
        case = node.split("@")[0]
        per_case[case] = per_case.get(case, 0.0) + float(seconds)
    functions = {
        re.sub(r"\[.*$", "", case)
        for case, seconds in per_case.items()
        if seconds >= threshold and case.split("::")[0] not in modules
    }
    return sorted(modules | functions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per tier (default 3)")
    parser.add_argument("--tier", choices=(*TIERS, "both"), default="both")
    parser.add_argument(
        "--list-slow",
        type=float,
        nargs="?",
        const=1.5,
        metavar="SECONDS",
        help="print the slow list's entries from one timed run (default 1.5 s)",
    )
    args = parser.parse_args()
    if args.list_slow is not None:
        print("\n".join(list_slow(args.list_slow)))
        return
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
