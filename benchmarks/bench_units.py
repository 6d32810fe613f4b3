"""Benchmark for issue 13: unit throughput on a warm store, and the offline contract.

Run from the checkout root:

    python benchmarks/bench_units.py [--baseline REV] [--runs N] [--contract-runs N]

Two versions are measured in the same run, their runs alternating:
1. `current`: this checkout, as it is on disk;
2. the named baseline, `REV` (default ``d218779``, the last commit before issue 13's
   changes), checked out into a temporary git worktree (removed at the end).

Each version runs in fresh processes (``python -m doit -f <version>/dodo.py``) with
``PYTHONPATH`` set to its own tree, so it imports its own `continuity`.

- **Units on a warm store.** Once per version, a store is prepared with the contract's
  unit selection built: ``doit units --arms all`` on ``original`` and on ``hard --seeds
  101-102``. Each timed run copies that store (and its ``out/``), deletes the unit action
  entries from the copy (traces and checkpoints stay: the store is warm) and times the
  two ``doit units`` invocations again. Samples per second = the probes in the units
  written / the wall time of the two invocations (interpreter and doit start-up
  included: this is what a user waits for).
- **The offline contract.** ``doit offline_contract`` in a fresh, empty store and
  ``out/``: trace generation, checkpoint replays, every unit, the aggregate report.

Figures are medians; the last lines print the ratios (current against the baseline).
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

import msgspec

REPO = Path(__file__).resolve().parent.parent
SELECTIONS = (
    ["units", "--suite", "original", "--arms", "all"],
    ["units", "--suite", "hard", "--seeds", "101-102", "--arms", "all"],
)


def _doit(tree: Path, args: list[str], store: Path, out: Path, extra: list[str]) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "CONTINUITY_STORE": str(store),
        "CONTINUITY_OUT": str(out),
    }
    env.pop("CI", None)
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(tree / "dodo.py"), *args, *extra],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{tree}: doit {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return seconds


def _drop_units(store: Path) -> None:
    """Delete the unit action entries (traces and checkpoints stay)."""
    for path in (store / "actions").rglob("*.json"):
        body = path.read_bytes().split(b"\n", 1)[0]  # the entry; its checksum follows
        if msgspec.json.decode(body).get("kind") == "unit":
            path.unlink()


def _samples(out: Path, run: str) -> int:
    total = 0
    for path in (out / "runs" / run / "units").glob("*.json"):
        total += len(msgspec.json.decode(path.read_bytes()).get("probes", []))
    return total


def _prepare(tree: Path, work: Path) -> tuple[Path, Path]:
    store, out = work / "warm-store", work / "warm-out"
    for args in SELECTIONS:
        _doit(tree, args, store, out, ["--run", "warm"])
    return store, out


def _units_run(tree: Path, warm: tuple[Path, Path], work: Path, n: int) -> float:
    """One timed run: samples per second."""
    store, out = work / f"store-{n}", work / f"out-{n}"
    shutil.copytree(warm[0], store, symlinks=True)
    shutil.copytree(warm[1], out, symlinks=True)
    _drop_units(store)
    run = f"bench-{n}"
    seconds = sum(_doit(tree, args, store, out, ["--run", run]) for args in SELECTIONS)
    samples = _samples(out, run)
    shutil.rmtree(store)
    shutil.rmtree(out)
    return samples / seconds


def _contract_run(tree: Path, work: Path, n: int) -> float:
    store, out = work / f"contract-store-{n}", work / f"contract-out-{n}"
    seconds = _doit(tree, ["offline_contract"], store, out, [])
    shutil.rmtree(store)
    shutil.rmtree(out)
    return seconds


def _worktree(rev: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), rev],
        check=True,
        capture_output=True,
    )
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="d218779", help="the baseline git revision")
    parser.add_argument("--runs", type=int, default=5, help="timed unit runs per version")
    parser.add_argument("--contract-runs", type=int, default=3, help="contract runs per version")
    parser.add_argument(
        "--current-only", action="store_true", help="measure this checkout only (no ratio)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-units-") as tmp:
        work = Path(tmp)
        base = None if args.current_only else _worktree(args.baseline, work / "baseline-tree")
        try:
            versions = {"current": REPO}
            if base is not None:
                versions[f"baseline {args.baseline}"] = base
            rates: dict[str, list[float]] = {v: [] for v in versions}
            contract: dict[str, list[float]] = {v: [] for v in versions}
            warm = {}
            for name, tree in versions.items():
                (work / name).mkdir()
                warm[name] = _prepare(tree, work / name)
            for n in range(args.runs):
                for name, tree in versions.items():
                    rates[name].append(_units_run(tree, warm[name], work / name, n))
                    print(f"units   {name:20s} run {n + 1}: {rates[name][-1]:.1f} samples/s")
            for n in range(args.contract_runs):
                for name, tree in versions.items():
                    contract[name].append(_contract_run(tree, work / name, n))
                    print(f"contract {name:19s} run {n + 1}: {contract[name][-1]:.1f} s")
        finally:
            if base is not None:
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                    check=False,
                    capture_output=True,
                )
    names = list(versions)
    rate = {v: statistics.median(r) for v, r in rates.items()}
    print()
    for v in names:
        line = f"{v:22s} units {rate[v]:6.1f} samples/s"
        if contract[v]:
            line += f"   contract {statistics.median(contract[v]):6.1f} s"
        print(line)
    if len(names) < 2:
        return
    print(f"units: current / baseline = {rate[names[0]] / rate[names[1]]:.2f}x")
    if contract[names[0]]:
        ratio = statistics.median(contract[names[0]]) / statistics.median(contract[names[1]])
        print(f"contract: current / baseline = {ratio:.2f}x")


if __name__ == "__main__":
    main()
