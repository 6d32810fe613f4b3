"""Benchmarks for issue 3: replay wall time and MCP tool-call latency.

Run from the checkout root:  python benchmarks/bench_harness.py [--runs N] [--calls N]

1. Replaying hard seed 101 (and the whole default hard suite, 101-108) through the
   harness, against the named baseline "bare MCP calls": the same tool calls issued
   directly to the same fixture server, with no model, session, sidecar or loop.
2. One MCP tool call (8 KiB result) over streamable HTTP on loopback, against a raw
   httpx POST to a bare Starlette endpoint returning the same 8 KiB, both served by
   uvicorn in the same process and event loop, p50 and p95.

Medians over --runs repetitions; these shared machines are noisy.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from continuity.harness.replay import replay_trace
from continuity.harness.toolbox import McpToolbox
from continuity.messages import ToolCallRequest
from continuity.servers.asgi import serve_asgi
from continuity.servers.fixture import FixtureToolServer, FrozenRecord, frozen_records
from continuity.traces.generator import generate_trace
from continuity.traces.schema import ReplayTrace, replay_projection

PAYLOAD = ("All quiet at the loading bay; shelves due Thursday. " * 160)[:8192]


async def _replay(trace: ReplayTrace) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        await replay_trace(trace, Path(tmp) / "ws")
        return time.perf_counter() - started


async def _bare_calls(trace: ReplayTrace) -> float:
    records = frozen_records(trace)
    server = FixtureToolServer(records)
    async with server.running() as url, McpToolbox(url) as toolbox:
        started = time.perf_counter()
        for index, record in enumerate(records):
            await toolbox.call(ToolCallRequest(f"c{index}", record.tool, record.arguments))
        return time.perf_counter() - started


async def _mcp_latency(calls: int) -> list[float]:
    record = FrozenRecord("r", "email_search", {"query": "shelves"}, PAYLOAD)
    server = FixtureToolServer([record] * (calls + 20))
    call = ToolCallRequest("c", "email_search", {"query": "shelves"})
    samples = []
    async with server.running() as url, McpToolbox(url) as toolbox:
        for _ in range(20):  # warm up
            await toolbox.call(call)
        for _ in range(calls):
            started = time.perf_counter()
            await toolbox.call(call)
            samples.append(time.perf_counter() - started)
    return samples


async def _raw_latency(calls: int) -> list[float]:
    async def endpoint(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({"content": [{"type": "text", "text": PAYLOAD}]})

    app = Starlette(routes=[Route("/call", endpoint, methods=["POST"])])
    body = {"name": "email_search", "arguments": {"query": "shelves"}}
    samples = []
    # TCP_NODELAY, as the MCP client's transport uses: without it the baseline measures
    # Nagle's algorithm meeting delayed ACKs (~40 ms), not HTTP.
    transport = httpx.AsyncHTTPTransport(
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    )
    async with serve_asgi(app) as base, httpx.AsyncClient(transport=transport) as client:
        for _ in range(20):
            (await client.post(base + "/call", json=body)).raise_for_status()
        for _ in range(calls):
            started = time.perf_counter()
            (await client.post(base + "/call", json=body)).raise_for_status()
            samples.append(time.perf_counter() - started)
    return samples


def _p95(samples: list[float]) -> float:
    return sorted(samples)[int(len(samples) * 0.95) - 1]


async def main(runs: int, calls: int) -> None:
    one = replay_projection(generate_trace(101))
    suite = [replay_projection(generate_trace(seed)) for seed in range(101, 109)]
    replay_one = statistics.median([await _replay(one) for _ in range(runs)])
    bare_one = statistics.median([await _bare_calls(one) for _ in range(runs)])
    suite_runs = []
    for _ in range(max(1, runs // 2)):
        started = time.perf_counter()
        for trace in suite:
            await _replay(trace)
        suite_runs.append(time.perf_counter() - started)
    replay_suite = statistics.median(suite_runs)
    mcp: list[float] = []
    raw: list[float] = []
    for _ in range(runs):  # interleave the two so machine noise hits both
        mcp += await _mcp_latency(calls)
        raw += await _raw_latency(calls)
    mcp50, raw50 = statistics.median(mcp), statistics.median(raw)
    print(f"## Harness benchmarks ({runs} runs, medians)\n")
    print("| measurement | median | baseline (same run) | ratio | goal |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| replay hard seed 101 ({len(frozen_records(one))} tool calls) | "
        f"{replay_one:.2f} s | bare MCP calls: {bare_one:.2f} s | "
        f"{replay_one / bare_one:.1f}x | <= 3 s |"
    )
    print(f"| replay hard 101-108 (whole default suite) | {replay_suite:.2f} s | - | - | - |")
    print(
        f"| MCP tool call, 8 KiB result, p50 | {mcp50 * 1000:.2f} ms | raw httpx POST: "
        f"{raw50 * 1000:.2f} ms | {mcp50 / raw50:.2f}x | <= 2x |"
    )
    print(
        f"| MCP tool call, 8 KiB result, p95 | {_p95(mcp) * 1000:.2f} ms | raw httpx POST: "
        f"{_p95(raw) * 1000:.2f} ms | {_p95(mcp) / _p95(raw):.2f}x | - |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    anyio.run(main, args.runs, args.calls)
