"""Timing several ways of one job against a named baseline: the cluster benchmarks'
shared loop (`bench_cluster.py`, `bench_agent_cluster.py`)."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence

__all__ = ["compare_ways"]


def compare_ways(
    description: str, ways: Sequence[str], one: Callable[[str], float], samples: int
) -> None:
    """Run `one(way)` for every way, ``--runs`` times alternating; print each way's
    median wall time, its samples per second and its ratio to the first (the baseline)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(runs):
        for way in ways:
            times[way].append(one(way))
    base = statistics.median(times[ways[0]])
    for way, seconds in times.items():
        median = statistics.median(seconds)
        each = ", ".join(f"{s:.2f}" for s in seconds)
        print(
            f"{way:14} median {median:6.2f} s  {samples / median:5.2f} samples/s  "
            f"x{median / base:.2f} of {ways[0]}  ({each})"
        )
