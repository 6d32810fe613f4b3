"""Benchmark for issue 34: the real local model smoke's wall time and calls.

Run from the checkout root, with the local extra installed and the checkout committed
(real mode refuses a dirty checkout):

    python3 benchmarks/bench_local_smoke.py [--runs N]

It runs CI's real-model smoke plan (``--suite smoke --arms
native,cold-rebuild,continuity-store --probe-limit 2 --max-output-tokens 48``: three
units, one short trace) ``--runs`` times, each against a freshly started
``python3 -m continuity.servers.local_model`` (llama.cpp's server with SmolLM2-135M on
127.0.0.1, so no run reads another's prompt cache) and into a fresh store, and times
``doit units --real`` (interpreter start-up included: what a user waits for).

The named baseline, measured in the same invocation and alternating with it, is the same
plan offline (``doit units`` with the scripted reader, a fresh store): the same
replays, checkpoints, forks, MCP calls and scoring, without the model. The difference is
the time the model took. Medians are printed, with the real run's HTTP sends from its
``attempts.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLAN = [
    "--suite", "smoke", "--arms", "native,cold-rebuild,continuity-store",
    "--probe-limit", "2",
]  # fmt: skip
REAL = [
    "--provider", "openai-chat", "--reader", "local:smollm2-135m-instruct",
    "--effort", "none", "--context-window", "8192", "--max-output-tokens", "48",
]  # fmt: skip


def _env(work: Path) -> dict[str, str]:
    env = {**os.environ, "CONTINUITY_STORE": str(work / "store")}
    env["CONTINUITY_OUT"] = str(work / "out")
    env["HOME"] = str(work / "home")
    env.pop("CI", None)
    return env


def _doit(work: Path, args: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=REPO,
        env=_env(work),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.exit(f"doit {' '.join(args[:2])} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def _fresh(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    (work / "home").mkdir(parents=True)


def _offline(work: Path) -> float:
    _fresh(work)
    started = time.perf_counter()
    _doit(work, ["units", *PLAN, "--run", "bench"])
    return time.perf_counter() - started


def _real(work: Path) -> tuple[float, int]:
    _fresh(work)
    server = subprocess.Popen(
        [sys.executable, "-m", "continuity.servers.local_model"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = next(line.split()[1] for line in server.stdout if line.startswith("listening "))
        dry = _doit(work, ["dry_run", *PLAN, *REAL, "--base-url", url])
        words = next(line for line in dry.splitlines() if line.startswith("next: "))
        args = words.removeprefix("next: ").split()[3:]  # after "python3 -m doit"
        started = time.perf_counter()
        _doit(work, args)
        seconds = time.perf_counter() - started
        out = Path(args[args.index("--out") + 1])
        sends = len((out / "attempts.jsonl").read_text().splitlines())
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
    return seconds, sends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each (default 3)")
    args = parser.parse_args()
    offline: list[float] = []
    real: list[float] = []
    sends: list[int] = []
    with tempfile.TemporaryDirectory(prefix="bench-local-smoke-") as tmp:
        work = Path(tmp)
        for run in range(args.runs):
            offline.append(_offline(work / "offline"))
            seconds, count = _real(work / "real")
            real.append(seconds)
            sends.append(count)
            print(
                f"run {run + 1}: offline {offline[-1]:.1f} s, real {seconds:.1f} s, {count} sends",
                flush=True,
            )
    base, wall = statistics.median(offline), statistics.median(real)
    print(
        f"median of {args.runs}: offline (baseline) {base:.1f} s, real {wall:.1f} s, "
        f"real / offline {wall / base:.2f}x, {statistics.median(sends):.0f} model calls, "
        f"{(wall - base) / statistics.median(sends):.1f} s of model time a call"
    )


if __name__ == "__main__":
    main()
