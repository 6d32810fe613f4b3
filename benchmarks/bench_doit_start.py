"""Benchmark: what a `doit` process costs before its task does anything.

Run from the checkout root:  python benchmarks/bench_doit_start.py [--runs N]

Times, in fresh processes, the import of the modules a plan-loading command needs
(`continuity.plan.plan`, `continuity.report.aggregate`) against the named baseline
`import mcp` (the MCP SDK, which they must not pull in), and one pass over the refusals
of `tests/test_options_special_files.py` (each a `doit` process refused before any
work). Prints each import's median of N runs (default 5) as a ratio of the baseline,
and the median of N // 2 passes over the refusals (one pass for N < 4).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = ("mcp", "continuity.plan.plan", "continuity.report.aggregate")


def _import_seconds(module: str) -> float:
    """The cumulative import time of `module` in a fresh interpreter (-X importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()[-1]
    return int(last.split("|")[1]) / 1e6


def _refusals() -> float:
    """Wall time of every case of tests/test_options_special_files.py, one after another."""
    sys.path.insert(0, str(ROOT))
    from tests.graph.test_dodo import doit_command, doit_env
    from tests.test_options_special_files import _cases

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        for args, _ in _cases(Path(tmp)):
            subprocess.run(doit_command(*args), cwd=ROOT, env=doit_env(Path(tmp)),
                           capture_output=True, check=False)  # fmt: skip
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    medians = {m: statistics.median(_import_seconds(m) for _ in range(runs)) for m in IMPORTS}
    base = medians["mcp"]
    for module, seconds in medians.items():
        print(f"import {module}: {seconds:.3f} s ({seconds / base:.2f}x import mcp)")
    refusals = statistics.median(_refusals() for _ in range(max(1, runs // 2)))
    print(f"special-file refusals (42 doit processes): {refusals:.1f} s")


if __name__ == "__main__":
    main()
