"""What a forked probe child pays for imports its parent did not make: a fresh
interpreter imports the probe child's module, then forks `--runs` children that each run
one empty anyio event loop (what every probe child does first), before and after the
unit worker's `warm_imports`. Medians in milliseconds, both in the same run.

    python3 benchmarks/bench_fork_imports.py --runs 15
"""

from __future__ import annotations

import argparse
import subprocess
import sys

PROBE = """
import os, statistics, sys, time
import continuity.sampling.child  # what the worker always imported before forking
if sys.argv[2] == "warm":
    from continuity.sampling.worker import warm_imports, UnitRequest
    warm_imports(UnitRequest(store_root="-", tree="-", workspace="-", arm="native", probes=[]))
times = []
for _ in range(int(sys.argv[1])):
    read, write = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        import anyio
        async def nothing() -> None:
            pass
        anyio.run(nothing)
        os.write(write, b"x")
        os._exit(0)
    os.read(read, 1)
    os.waitpid(pid, 0)
    times.append(time.perf_counter() - start)
print(statistics.median(times) * 1000)
"""


def child_ms(runs: int, mode: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(runs), mode], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    cold, warm = child_ms(runs, "cold"), child_ms(runs, "warm")
    print(f"fork + anyio.run, probe child module only (baseline): {cold:.1f} ms")
    print(f"fork + anyio.run after warm_imports: {warm:.1f} ms ({warm / cold:.3f}x)")


if __name__ == "__main__":
    main()
