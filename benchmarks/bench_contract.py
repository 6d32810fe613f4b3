"""Benchmark: the offline contract's wall time and stages, and a newcomer's time to it.

Run from the checkout root:

    python benchmarks/bench_contract.py [--baseline REV] [--runs N] [--newcomer-runs N]

- **The contract.** ``doit offline_contract`` from an empty store and ``out/``, for this
  checkout (``current``, as on disk) and for the baseline ``REV`` (a temporary git
  worktree; default ``d7fc7f1``, the last commit before the outside-agent pass ran in
  a process of its own), their runs alternating. Each run reports its wall time, the CPU
  time of the whole process tree (user + system, from ``wait4``), and each stage's span
  read from the plain progress lines as they arrive: a stage starts at its first line
  (``[k/N] <stage>``, or its first tick where the version prints no such line) and ends
  at its last tick.
- **A newcomer** (``--newcomer-runs``): ``git clone`` of this checkout's HEAD into an
  empty directory, a fresh virtualenv, then the README's first Quick start line
  (``python -m pip install -e . && python -m doit offline_contract``) in it, timed to the
  contract's first result line (``offline contract passed``). pip's cache is warm (a
  newcomer's first install also downloads; this machine has no network for that).

Both run in a user's environment: ``CI``, ``PYTHONDONTWRITEBYTECODE`` and
``PYTHONPYCACHEPREFIX`` are dropped, and both trees are byte-compiled before the first
timed contract (a newcomer's run compiles its own, and is timed with it).

Figures are medians; the last lines print the ratios against the baseline.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_TICK = re.compile(r"^(?P<stage>[a-z][a-z -]*?) \[\d+/\d+\] ")
_START = re.compile(r"^\[\d+/\d+\] (?P<stage>.+)$")


def _timed(
    cmd: list[str], cwd: Path, env: dict[str, str], until: str | None = None
) -> dict[str, Any]:
    """Run `cmd`, timestamping each stdout line; wall, CPU, stage spans, and when a
    line starting with `until` arrived."""
    started = time.perf_counter()
    process = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    spans: dict[str, list[float]] = {}
    first_result = None
    lines = []
    for line in process.stdout:
        now = time.perf_counter() - started
        lines.append(line)
        start, tick = _START.match(line), _TICK.match(line)
        if start:
            spans.setdefault(start["stage"].strip(), [now, now])
        elif tick:
            span = spans.setdefault(tick["stage"].strip(), [now, now])
            span[1] = now
        if until and first_result is None and line.startswith(until):
            first_result = now
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        sys.stdout.write("".join(lines[-30:]))
        raise SystemExit(f"{' '.join(cmd)} failed ({status})")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "spans": spans,
        "first_result": first_result,
    }


def _environment(tree: Path) -> dict[str, str]:
    """A user's environment for `tree`: no CI, and bytecode written and read as a
    normal install does (``PYTHONDONTWRITEBYTECODE`` would recompile every module in
    every child)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    for name in ("CI", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
        env.pop(name, None)
    return env


def _compile(tree: Path) -> None:
    """Byte-compile `tree` once, as the first run of a fresh install would."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "continuity", "examples", "dodo.py"],
        cwd=tree,
        env=_environment(tree),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _contract(tree: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-contract-") as tmp:
        env = _environment(tree)
        cmd = [sys.executable, "-m", "doit", "-f", str(tree / "dodo.py"), "offline_contract"]
        cmd += ["--store", f"{tmp}/store", "--out", f"{tmp}/out"]
        return _timed(cmd, tree, env)


def _newcomer() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-newcomer-") as tmp:
        started = time.perf_counter()
        subprocess.run(["git", "clone", "-q", str(REPO), f"{tmp}/continuity"], check=True)
        subprocess.run([sys.executable, "-m", "venv", f"{tmp}/venv"], check=True)
        python = f"{tmp}/venv/bin/python"
        line = f"{python} -m pip install -q -e . && {python} -m doit offline_contract"
        env = _environment(Path(tmp))
        del env["PYTHONPATH"]
        env["CONTINUITY_STORE"] = f"{tmp}/store"
        setup = time.perf_counter() - started
        run = _timed(["bash", "-c", line], Path(tmp) / "continuity", env, "offline contract passed")
        if run["first_result"] is None:
            raise SystemExit("the newcomer's contract printed no result line")
        return {"first_result": setup + run["first_result"], "setup": setup, "wall": run["wall"]}


def _stages(runs: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Each stage's median start and end (seconds from the command's start)."""
    names = sorted(
        {n for r in runs for n in r["spans"]}, key=lambda n: runs[0]["spans"].get(n, [0])[0]
    )
    return {
        n: (
            statistics.median(r["spans"][n][0] for r in runs if n in r["spans"]),
            statistics.median(r["spans"][n][1] for r in runs if n in r["spans"]),
        )
        for n in names
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="d7fc7f1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--newcomer-runs", type=int, default=0)
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {"current": [], args.baseline: []}
    work = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    base = work / "tree"
    if args.runs:
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(base), args.baseline],
            cwd=REPO,
            check=True,
        )
    try:
        if args.runs:
            _compile(REPO)
            _compile(base)
        for i in range(args.runs):
            for name, tree in (("current", REPO), (args.baseline, base)):
                r = _contract(tree)
                results[name].append(r)
                print(
                    f"run {i + 1} {name}: wall {r['wall']:.1f} s, cpu {r['cpu']:.1f} s", flush=True
                )
    finally:
        if args.runs:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=REPO, check=False
            )
        shutil.rmtree(work, ignore_errors=True)
    for name, runs in results.items():
        if not runs:
            continue
        walls = [r["wall"] for r in runs]
        listed = ", ".join(f"{w:.1f}" for w in walls)
        print(
            f"\n{name}: wall median {statistics.median(walls):.1f} s ({listed}), "
            f"cpu median {statistics.median(r['cpu'] for r in runs):.1f} s"
        )
        for stage, (start, end) in _stages(runs).items():
            print(f"  {stage:<28} {start:6.1f} s -> {end:6.1f} s ({end - start:5.1f} s)")
    if args.runs:
        cur = statistics.median(r["wall"] for r in results["current"])
        old = statistics.median(r["wall"] for r in results[args.baseline])
        print(f"\ncurrent / {args.baseline}: {cur / old:.2f}x wall")
    newcomers = []
    for i in range(args.newcomer_runs):
        n = _newcomer()
        newcomers.append(n)
        print(
            f"newcomer {i + 1}: first result at {n['first_result']:.1f} s "
            f"(clone + venv {n['setup']:.1f} s, install + contract {n['wall']:.1f} s)",
            flush=True,
        )
    if newcomers:
        firsts = [n["first_result"] for n in newcomers]
        print(
            f"newcomer: first result median {statistics.median(firsts):.1f} s "
            f"({', '.join(f'{f:.1f}' for f in firsts)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
