"""Benchmark for issue 7: what the metering proxy adds to a ConversationHistory call.

Run from the checkout root:  python benchmarks/bench_lookup.py [--runs N] [--calls N]

One ``get`` of an 8 KiB page through the metering forwarding proxy (reserve, forward over
MCP, charge the exact content bytes, deliver) against the named baseline "direct": the
same call to the ConversationHistory server without the proxy. Both on 127.0.0.1 in
one process. A fresh proxy (and meter) per run, as per probe. p50 over --calls calls;
medians over --runs runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from continuity.harness.toolbox import McpToolbox
from continuity.lookup.meter import metered_history
from continuity.memory.retained import RetainedStore
from continuity.servers.history import serve_history

TEXT = "The spare key sits under the blue pot by the shed door. " * 600


async def _run(calls: int, root: Path) -> tuple[float, float]:
    store = RetainedStore(root / "retained.sqlite3")
    for index in range(8):
        store.retain_tool_result(
            f"{index} {TEXT}", tool="mail", tool_kind="email", entry_ref=f"e{index}"
        )
    direct: list[float] = []
    proxied: list[float] = []
    async with serve_history(store) as upstream:
        async with McpToolbox(upstream) as client:
            for index in range(calls):
                started = time.perf_counter()
                await client.call_raw(
                    "ConversationHistory", {"action": "get", "id": f"c{index % 8 + 1}"}
                )
                direct.append(time.perf_counter() - started)
        async with (
            metered_history(upstream, calls=10**6, budget_bytes=10**9) as (url, _),
            McpToolbox(url) as client,
        ):
            for index in range(calls):
                started = time.perf_counter()
                await client.call_raw(
                    "ConversationHistory", {"action": "get", "id": f"c{index % 8 + 1}"}
                )
                proxied.append(time.perf_counter() - started)
    store.close()
    return statistics.median(direct), statistics.median(proxied)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    direct: list[float] = []
    proxied: list[float] = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            d, p = anyio.run(_run, args.calls, Path(tmp))
        direct.append(d)
        proxied.append(p)
    d, p = statistics.median(direct), statistics.median(proxied)
    print(f"direct get p50 {d * 1000:.2f} ms; metered get p50 {p * 1000:.2f} ms: {p / d:.2f}x")


if __name__ == "__main__":
    main()
