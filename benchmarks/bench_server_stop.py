"""Benchmark for issue 13, item 1: start + stop of a loopback ASGI server.

Run from the checkout root:  python benchmarks/bench_server_stop.py [--runs N] [--server S]

Each run enters `serve_asgi` with a trivial ASGI app (lifespan on), makes one GET over a
kept-alive httpx connection (one client for all runs), and leaves the block; the time
covers all of it, including uvicorn's startup, the lifespan shutdown and the closed
connection. Two servers, runs
alternating, same process:
1. `loopback`: `continuity.servers.asgi._LoopbackServer` as shipped (1 ms polls);
2. the named baseline, "uvicorn.Server stock shutdown": plain `uvicorn.Server` put in
   its place, with its 100 ms main-loop tick and fixed 100 ms shutdown sleep.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
import httpx
import uvicorn

from continuity.servers import asgi

_SHIPPED = asgi._LoopbackServer


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[-1]
            await send({"type": f"{message['type']}.complete"})
            if kind == "shutdown":
                return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _one(server: str, client: httpx.AsyncClient) -> float:
    asgi._LoopbackServer = uvicorn.Server if server == "stock" else _SHIPPED  # type: ignore[assignment, misc]
    start = time.perf_counter()
    async with asgi.serve_asgi(_app) as base:
        response = await client.get(base + "/")
        assert response.status_code == 200
    return (time.perf_counter() - start) * 1000


async def _main(runs: int, servers: list[str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {s: [] for s in servers}
    # One client for all runs: building its SSL context (~20 ms) is not the server's cost.
    async with httpx.AsyncClient() as client:
        for s in servers:  # warm-up: imports, first connection
            await _one(s, client)
        for _ in range(runs):
            for s in servers:
                times[s].append(await _one(s, client))
    asgi._LoopbackServer = _SHIPPED  # type: ignore[misc]
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--server",
        choices=["both", "stock", "loopback"],
        default="both",
        help="stock: plain uvicorn.Server (the baseline); loopback: _LoopbackServer",
    )
    args = parser.parse_args()
    servers = ["stock", "loopback"] if args.server == "both" else [args.server]
    times = anyio.run(_main, args.runs, servers)
    medians = {s: statistics.median(t) for s, t in times.items()}
    for s, m in medians.items():
        print(f"{s:9s} start+request+stop median {m:7.1f} ms  (n={len(times[s])})")
    if len(medians) == 2:
        print(f"stock / loopback: {medians['stock'] / medians['loopback']:.1f}x")


if __name__ == "__main__":
    main()
