"""Benchmark for issue 14 item 8: a real run's wall time against a slow model endpoint.

Run from the checkout root:

    python benchmarks/bench_real_latency.py [--baseline REV] [--runs N] [--latency-ms MS]

It runs the README walkthrough's real plan (``--provider openai-chat --reader
openai:local-model --judge none --effort none --arms native,compaction-1,continuity-store
--probe-limit 2``: the original suite, 12 units) with default flags against the loopback
stand-in (``python -m continuity.servers.wire``, each version's own, since a newer
stand-in refuses request shapes an older version sent), once with
``--latency-ms 0`` and once with ``--latency-ms MS`` (default 500), and times the
``doit units --real`` command (interpreter start-up included: what a user waits for).

Two versions are measured in the same run, their runs alternating, each from a
temporary git worktree (the real-mode guards refuse a dirty checkout): `current`, the
commit checked out here (``HEAD``; commit before measuring), and the named baseline
`REV` (default ``dadc1a4``: the last commit before real runs became parallel).

For each version it reports medians over ``--runs`` of:

- the wall time with latency and without (the local work);
- the ideal: local work + calls x latency / the achievable concurrency, where the
  achievable concurrency is calls / max(calls / concurrency, the longest chain of calls
  that must run in order: one checkpoint's units, `checkpoint_group`);
- the wall time as a ratio of the ideal (the goal is <= 1.2 with default flags);
- the most calls the stand-in held at once, and the run's peak process count and
  proportional set size (PSS, from /proc), sampled every 0.2 s.

The last lines print current against the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from continuity.arms import parse_arms  # noqa: E402
from continuity.runner.parallel import checkpoint_group  # noqa: E402

PLAN = [
    "--provider",
    "openai-chat",
    "--reader",
    "openai:local-model",
    "--judge",
    "none",
    "--effort",
    "none",
    "--arms",
    "native,compaction-1,continuity-store",
    "--probe-limit",
    "2",
]
CONCURRENCY = 4  # doit units --concurrency default: calls per model


def _env(tree: Path, work: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "CONTINUITY_STORE": str(work / "store"),
        "CONTINUITY_OUT": str(work / "out"),
    }
    env.pop("CI", None)
    return env


def _doit(tree: Path, work: Path, args: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(tree / "dodo.py"), *args],
        cwd=tree,
        env=_env(tree, work),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.exit(f"{tree}: doit {' '.join(args[:2])} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def _tree(pid: int) -> list[int]:
    """`pid` and its live descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _sample(process: subprocess.Popen[bytes], peak: dict[str, int]) -> None:
    """Record the process tree's peak process count and PSS until `process` exits."""
    while process.poll() is None:
        pids = _tree(process.pid)
        peak["processes"] = max(peak["processes"], len(pids))
        peak["pss"] = max(peak["pss"], sum(_pss(p) for p in pids))
        time.sleep(0.2)


def _longest_chain(out: Path) -> int:
    """The most calls one checkpoint's units made (they run in order)."""
    arms = {arm.id: arm for arm in parse_arms("all")}
    chains: dict[str, int] = {}
    for path in (out / "units").glob("*.json"):
        unit = msgspec.json.decode(path.read_bytes())
        group = checkpoint_group(unit["trace_id"], arms[unit["arm"]], unit["repeat"])
        calls = len(unit.get("mid_trace_calls") or []) + len(unit.get("judge_calls") or [])
        calls += sum(len((p.get("evidence") or {}).get("calls") or []) for p in unit["probes"])
        chains[group] = chains.get(group, 0) + calls
    return max(chains.values())


def _run(tree: Path, work: Path, latency: int) -> dict[str, float]:
    """One walkthrough run of `tree` against a fresh stand-in with `latency` ms."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    credentials = work / "credentials.json"
    credentials.write_text('{"api_key": ""}')
    log = work / "calls.jsonl"
    wire = subprocess.Popen(
        [
            *(sys.executable, "-m", "continuity.servers.wire"),
            *("--latency-ms", str(latency), "--calls-log", str(log)),
        ],
        cwd=tree,  # each version's own stand-in: a newer one refuses older request shapes
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert wire.stdout is not None
        url = wire.stdout.readline().strip().removeprefix("listening ")
        options = [*PLAN, "--base-url", url, "--credentials", str(credentials)]
        dry = _doit(tree, work, ["dry_run", *options])
        digest = next(
            line.split()[-1] for line in dry.splitlines() if line.startswith("confirmation digest")
        )
        out = work / "run"
        command = [sys.executable, "-m", "doit", "-f", str(tree / "dodo.py"), "units", "--real"]
        command += [*options, "--confirm-plan", digest, "--out", str(out)]
        peak = {"processes": 0, "pss": 0}
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=tree,
            env=_env(tree, work),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        sampler = threading.Thread(target=_sample, args=(process, peak))
        sampler.start()
        _, stderr = process.communicate()
        seconds = time.perf_counter() - started
        sampler.join()
        if process.returncode != 0:
            sys.exit(f"{tree}: doit units --real failed:\n{stderr.decode()}")
    finally:
        wire.terminate()
        wire.wait(timeout=30)
        if wire.stdout is not None:
            wire.stdout.close()
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return {
        "seconds": seconds,
        "calls": len(entries),
        "in_flight": max(e["in_flight"] for e in entries),
        "chain": _longest_chain(out),
        "processes": peak["processes"],
        "pss_mb": peak["pss"] / 2**20,
    }


def _worktree(rev: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), rev],
        check=True,
        capture_output=True,
    )
    return into


def _report(name: str, runs: dict[int, list[dict[str, float]]], latency: int) -> float:
    """Print one version's medians; return its wall time as a ratio of its ideal."""

    def median(key: str, at: int) -> float:
        return statistics.median(r[key] for r in runs[at])

    local, slow, calls = median("seconds", 0), median("seconds", latency), median("calls", latency)
    chain = median("chain", latency)
    achievable = calls / max(calls / CONCURRENCY, chain)
    ideal = local + calls * latency / 1000 / achievable
    print(
        f"{name:22s} local {local:6.1f} s  latency {slow:6.1f} s  calls {calls:.0f}  "
        f"chain {chain:.0f}  achievable {achievable:.2f}  ideal {ideal:6.1f} s  "
        f"ratio {slow / ideal:.2f}  in flight {median('in_flight', latency):.0f}  "
        f"processes {median('processes', latency):.0f}  PSS {median('pss_mb', latency):.0f} MB"
    )
    return slow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="dadc1a4", help="the baseline git revision")
    parser.add_argument("--current", default="HEAD", help="the revision measured as current")
    parser.add_argument("--runs", type=int, default=3, help="runs per version and latency")
    parser.add_argument("--latency-ms", type=int, default=500, help="the stand-in's latency")
    parser.add_argument(
        "--current-only", action="store_true", help="measure the current revision only"
    )
    args = parser.parse_args()
    latency = args.latency_ms
    with tempfile.TemporaryDirectory(prefix="bench-real-latency-") as tmp:
        work = Path(tmp)
        versions = {f"current {args.current}": _worktree(args.current, work / "current")}
        if not args.current_only:
            versions[f"baseline {args.baseline}"] = _worktree(args.baseline, work / "baseline")
        results: dict[str, dict[int, list[dict[str, float]]]] = {
            name: {0: [], latency: []} for name in versions
        }
        try:
            for n in range(args.runs):
                for name, tree in versions.items():
                    for at in (0, latency):
                        run = _run(tree, work / "run", at)
                        results[name][at].append(run)
                        print(
                            f"{name:22s} run {n + 1} latency {at:4d} ms: {run['seconds']:6.1f} s"
                            f" ({run['calls']:.0f} calls, {run['in_flight']:.0f} in flight, "
                            f"{run['processes']:.0f} processes, {run['pss_mb']:.0f} MB)",
                            flush=True,
                        )
        finally:
            for tree in versions.values():
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                    check=False,
                    capture_output=True,
                )
    print()
    slow = {name: _report(name, runs, latency) for name, runs in results.items()}
    names = list(slow)
    if len(names) == 2:
        ratio = slow[names[0]] / slow[names[1]]
        print(f"wall time at {latency} ms: current / baseline = {ratio:.2f}x")


if __name__ == "__main__":
    main()
