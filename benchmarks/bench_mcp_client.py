"""The MCP HTTP client's construction cost: the SDK's default client against the
toolbox's (`continuity.harness.toolbox.http_client`, one shared TLS context), in the
same run. Medians of `--runs` constructions, in milliseconds.

    python3 benchmarks/bench_mcp_client.py --runs 50
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from mcp.shared._httpx_utils import create_mcp_http_client

from continuity.harness.toolbox import http_client


def median_ms(build: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        build()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    baseline = median_ms(create_mcp_http_client, runs)
    shared = median_ms(http_client, runs)
    print(f"SDK default client (baseline): {baseline:.2f} ms")
    print(f"toolbox client, shared TLS context: {shared:.3f} ms ({shared / baseline:.4f}x)")


if __name__ == "__main__":
    main()
