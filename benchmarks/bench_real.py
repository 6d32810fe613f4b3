"""Benchmarks for issue 6: the provider's per-call overhead, the call cache, the dry run.

Run from the checkout root:  python benchmarks/bench_real.py [--runs N] [--calls N]

1. One streamed Chat Completions call through `OpenAIChatProvider` (payload building,
   retries wrapper, model slot, SSE parsing, usage normalisation) against the loopback
   wire server, versus the named baseline "raw httpx stream": the same request bytes
   POSTed with httpx and the SSE body read to the end, no parsing. Both on 127.0.0.1 in
   the same process, p50.
   The same call recorded in the call cache (a miss: the call plus a durable store
   write) is reported too.
2. The same call answered from the call cache (key computation, store read, replay),
   versus the same raw httpx baseline: what a resumed run pays per finished call.
3. `doit dry_run`-equivalent work for the hard suite, two repeats, all arms (generate
   and validate the traces in memory, estimate every call, price it twice), versus the
   named baseline "generate and validate the same traces" alone.

Medians over --runs repetitions; these shared machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import httpx
import msgspec

from continuity.messages import ModelRequest, UserMessage
from continuity.plan.estimate import dry_run
from continuity.plan.plan import build_plan
from continuity.plan.pricing import load_catalog
from continuity.plan.workload import load_plan_traces, workload
from continuity.providers.cache import CachedProvider
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.protocol import complete
from continuity.providers.real import make_provider
from continuity.servers.asgi import serve_asgi
from continuity.servers.wire import WireServer
from continuity.store import Store

CONTEXT = ("The shelves arrive Thursday; the bay stays closed until noon. " * 120)[:6000]


def _request(index: int) -> ModelRequest:
    return ModelRequest(
        session_id="bench",
        provider="openai-chat",
        model="local-model",
        system="Be terse.",
        messages=(UserMessage(CONTEXT), UserMessage(f"question {index}")),
    )


async def _calls(calls: int, root: Path) -> dict[str, float]:
    credentials = root / "credentials.json"
    credentials.write_text('{"api_key": "sk"}')
    store = Store(root / "store")
    async with serve_asgi(WireServer()) as url:
        spec = EndpointSpec(
            kind="openai-chat",
            base_url=url + "/v1",
            model="local-model",
            credentials_path=str(credentials),
        )
        raw_times: list[float] = []
        provider_times: list[float] = []
        cached_times: list[float] = []
        bare_times: list[float] = []
        async with make_provider(spec) as provider, httpx.AsyncClient() as client:
            for index in range(calls):
                body = msgspec.json.encode(provider.payload(_request(index)))
                started = time.perf_counter()
                async with client.stream(
                    "POST",
                    url + "/v1/chat/completions",
                    content=body,
                    headers={"content-type": "application/json"},
                ) as r:
                    async for _ in r.aiter_bytes():
                        pass
                raw_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                await complete(provider, _request(index))  # no cache
                bare_times.append(time.perf_counter() - started)
                cached = CachedProvider(provider, spec, store, repeat=1, role="answer")
                started = time.perf_counter()
                await complete(cached, _request(index))  # a miss: the real call
                provider_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                await complete(cached, _request(index))  # the same call: a hit
                cached_times.append(time.perf_counter() - started)
    return {
        "raw": statistics.median(raw_times),
        "bare": statistics.median(bare_times),
        "provider": statistics.median(provider_times),
        "cached": statistics.median(cached_times),
    }


def _dry_run() -> tuple[float, float]:
    plan = build_plan("hard", repeats=2)
    started = time.perf_counter()
    load_plan_traces(plan)
    baseline = time.perf_counter() - started
    started = time.perf_counter()
    dry_run(plan, workload(plan, load_plan_traces(plan)), load_catalog())
    return time.perf_counter() - started, baseline


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    results: dict[str, list[float]] = {
        k: [] for k in ("raw", "bare", "provider", "cached", "dry", "dry_base")
    }
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            timing = anyio.run(_calls, args.calls, Path(tmp))
        for key, value in timing.items():
            results[key].append(value)
        dry, base = _dry_run()
        results["dry"].append(dry)
        results["dry_base"].append(base)
    median = {k: statistics.median(v) for k, v in results.items()}
    print(json.dumps({k: round(v * 1000, 3) for k, v in median.items()}, indent=2))
    print(
        f"provider call p50 {median['bare'] * 1000:.2f} ms vs raw httpx stream "
        f"{median['raw'] * 1000:.2f} ms: {median['bare'] / median['raw']:.2f}x"
    )
    print(
        f"recorded call (provider + call cache write) p50 {median['provider'] * 1000:.2f} ms"
        f" vs raw httpx stream: {median['provider'] / median['raw']:.2f}x"
    )
    print(
        f"cached call p50 {median['cached'] * 1000:.2f} ms vs raw httpx stream: "
        f"{median['cached'] / median['raw']:.2f}x"
    )
    print(
        f"dry run hard x2 {median['dry']:.2f} s vs trace generation alone "
        f"{median['dry_base']:.2f} s: {median['dry'] / median['dry_base']:.2f}x"
    )


if __name__ == "__main__":
    main()
