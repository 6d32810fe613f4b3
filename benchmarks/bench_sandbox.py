"""Benchmark: what the outside-agent sandbox costs one adapter process.

Run from the checkout root:  python benchmarks/bench_sandbox.py [--runs N]

Each run spawns the tests' echo adapter (`tests/agents/echo_adapter.py`, a CAP/0 adapter
on continuity's SDK), waits for its answer to ``initialize``, and kills it: the cost of a
unit's start and of a restart. Two ways, runs alternating, same process:
1. `sandboxed`: inside bubblewrap with the loopback forwarder as its first process
   (`continuity.agents.sandbox`), as every unit runs by default;
2. the named baseline, `unsandboxed`: the same spawn with ``--no-sandbox``.
Prints the median and quartiles of each, in milliseconds, and the median ratio.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from continuity.agents.client import spawn_adapter
from continuity.agents.manifest import load_manifest
from continuity.agents.protocol import InitParams, ModelEndpoint
from continuity.agents.sandbox import WORKSPACE, Confinement, sandbox_problem

ROOT = Path(__file__).resolve().parents[1]


async def _one(folder: Path, sandboxed: bool) -> float:
    manifest = load_manifest(folder / "agent.toml")
    work = Path(tempfile.mkdtemp(prefix="bench-sbx-"))
    confinement = Confinement(sockets=work, forwards=()) if sandboxed else None
    model = ModelEndpoint(base_url="http://127.0.0.1:9/v1", api_key="dummy")
    params = InitParams(workspace=WORKSPACE if sandboxed else str(work / "ws"), model=model)
    start = time.perf_counter()
    async with spawn_adapter(manifest, workspace=work / "ws", log=work / "log",
                             env={"PYTHONPATH": str(ROOT)},
                             confinement=confinement) as adapter:  # fmt: skip
        await adapter.initialize(params, timeout=60)
    elapsed = (time.perf_counter() - start) * 1000
    shutil.rmtree(work, ignore_errors=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    if (problem := sandbox_problem()) is not None:
        raise SystemExit(f"no sandbox here: {problem}")
    folder = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    shutil.copy(ROOT / "tests" / "agents" / "echo_adapter.py", folder / "echo_adapter.py")
    (folder / "agent.toml").write_text(
        'name = "echo"\nversion = "1"\ncommand = ["{python}", "echo_adapter.py"]\n'
        'env = ["PYTHONPATH"]\n'
    )
    times: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
    for name in times:  # warm-up: imports, page cache
        anyio.run(_one, folder, name == "sandboxed")
    for _ in range(runs):
        for name in times:
            times[name].append(anyio.run(_one, folder, name == "sandboxed"))
    for name, values in times.items():
        q1, median, q3 = statistics.quantiles(values, n=4)
        print(f"{name:<12} median {median:7.1f} ms  (quartiles {q1:.1f}-{q3:.1f}, n={runs})")
    ratio = statistics.median(times["sandboxed"]) / statistics.median(times["unsandboxed"])
    print(f"sandboxed / unsandboxed (medians): {ratio:.2f}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
