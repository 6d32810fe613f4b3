"""Benchmark for issue 14 item 7: a no-op `doit aggregate` against `doit list`.

Run from the checkout root, after ``doit offline_contract`` has written its run:

    python benchmarks/bench_noop_aggregate.py [--runs N] [--run offline-contract]

`doit list` (doit loading dodo.py and the task list, running nothing) is the named
baseline: the floor of any doit command. The measured case is ``doit aggregate --run
RUN`` on a run whose reports are current: doit's uptodate check reads the run's stamp
and the units directory listing, finds the key unchanged, prints ``-- aggregate`` and
the location line, and rewrites nothing. Both commands are timed as whole processes,
interleaved in one session, and the medians compared. Goal: ratio <= 1.5.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUTS = ("report.html", "results.json", "summary.md")


def _doit(*args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return time.perf_counter() - started, done.stdout


def _states(run: Path) -> dict[str, int]:
    return {name: (run / name).stat().st_mtime_ns for name in OUTPUTS}


def main(runs: int, run_name: str, out: Path) -> float:
    run = out / "runs" / run_name
    if not (run / "units").is_dir():
        sys.exit(f"no run at {run}: run `doit offline_contract` first")
    aggregate = ("aggregate", "--run", run_name)
    _doit(*aggregate)  # brings the reports (and their stamp) up to date
    before = _states(run)
    _doit("list")  # warm the file cache for both
    listed: list[float] = []
    noop: list[float] = []
    for _ in range(runs):
        seconds, _ = _doit("list")
        listed.append(seconds)
        seconds, stdout = _doit(*aggregate)
        if "-- aggregate" not in stdout.splitlines():
            sys.exit(f"doit aggregate was not up to date:\n{stdout}")
        noop.append(seconds)
    if _states(run) != before:
        sys.exit("a no-op doit aggregate rewrote an output")
    units = sum(1 for _ in (run / "units").rglob("*.json"))
    base, measured = statistics.median(listed), statistics.median(noop)
    ratio = measured / base
    print(f"run {run} ({units} unit files), {runs} runs each, interleaved")
    print(f"doit list (baseline)         median {base * 1000:7.1f} ms")
    print(f"doit aggregate (up to date)  median {measured * 1000:7.1f} ms")
    print(f"ratio {ratio:.2f}x (goal <= 1.5x)")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--run", default="offline-contract")
    parser.add_argument("--out", type=Path, default=REPO / "out")
    args = parser.parse_args()
    main(args.runs, args.run, args.out)
