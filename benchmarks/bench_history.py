"""Benchmark for issue 4: ConversationHistory search latency on a hard trace's store.

Run from the checkout root:  python benchmarks/bench_history.py [--runs N] [--searches N]

The store is what replay with retention records for hard seed 101 (owner turns and tool
results, ~0.86 MB). Queries are drawn from the trace's probe texts and owner turns.
Three measurements, same run:
1. `RetainedStore.search` (bm25 ranking, snippets, paging) in process;
2. the named baseline: the bare FTS5 ``MATCH`` returning row ids, no ranking or snippet;
3. a full ConversationHistory ``search`` tool call through the MCP SDK on loopback.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio

from continuity.harness.keys import ReplayConfig
from continuity.harness.replay import replay_trace
from continuity.harness.toolbox import McpToolbox
from continuity.harness.workspace import Workspace
from continuity.memory.retained import RetainedStore
from continuity.messages import ToolCallRequest
from continuity.servers.history import HISTORY_TOOL, serve_history
from continuity.traces.generator import generate_trace
from continuity.traces.schema import OwnerMessage, iter_turns, replay_projection


def _queries(count: int) -> list[str]:
    trace = generate_trace(101)
    texts = [p.text for p in trace.probes]
    texts += [t.text for _, _, t in iter_turns(trace) if isinstance(t, OwnerMessage)]
    words = [" ".join(t.replace(":", " ").replace("?", " ").split()[-6:]) for t in texts]
    return [words[i % len(words)] for i in range(count)]


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def main(runs: int, searches: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        await replay_trace(
            replay_projection(generate_trace(101)), root, config=ReplayConfig(retained_records=True)
        )
        store = RetainedStore(Workspace(root).retained_path, readonly=True)
        queries = _queries(searches)
        ours: list[float] = []
        bare: list[float] = []
        tool: list[float] = []
        for _ in range(runs):
            for query in queries:
                started = time.perf_counter()
                store.search(query, limit=5)
                ours.append(time.perf_counter() - started)
                match = " OR ".join(f'"{w}"' for w in query.split())
                started = time.perf_counter()
                store.db.execute(
                    "SELECT rowid FROM records_fts WHERE records_fts MATCH ? LIMIT 6", (match,)
                ).fetchall()
                bare.append(time.perf_counter() - started)
            async with serve_history(store) as url, McpToolbox(url) as toolbox:
                for query in queries:
                    call = ToolCallRequest(
                        "c", HISTORY_TOOL, {"action": "search", "query": query, "limit": 5}
                    )
                    started = time.perf_counter()
                    await toolbox.call(call)
                    tool.append(time.perf_counter() - started)
        stats = store.stats()
        store.close()
    ms = 1000
    print(
        f"## ConversationHistory search ({runs} runs x {searches} queries; store of "
        f"{stats.records} records, {stats.retained_bytes / 1e6:.2f} MB)\n"
    )
    print("| measurement | p50 | p95 | baseline p95 (same run) | ratio at p95 | goal |")
    print("|---|---:|---:|---:|---:|---|")
    print(
        f"| `RetainedStore.search` | {_p(ours, 0.5) * ms:.2f} ms | {_p(ours, 0.95) * ms:.2f} ms "
        f"| bare FTS5 MATCH: {_p(bare, 0.95) * ms:.2f} ms | "
        f"{_p(ours, 0.95) / _p(bare, 0.95):.1f}x | p95 <= 5 ms |"
    )
    print(
        f"| ConversationHistory tool call (MCP, loopback) | {_p(tool, 0.5) * ms:.2f} ms | "
        f"{_p(tool, 0.95) * ms:.2f} ms | - | - | - |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    anyio.run(main, args.runs, args.searches)
