"""Benchmark for issue 17 (item 6): `doit lookup_budget` from an empty store, and again
into a new output with the store kept, against the re-measurement it replaces.

Run from the checkout root:

    python benchmarks/bench_lookup_budget.py [--baseline REV] [--runs N] [--cold-runs N]

Two versions, each in fresh processes (``python -m doit -f <version>/dodo.py
lookup_budget --output NEW``, ``PYTHONPATH`` set to its own tree, so it imports its own
`continuity`), on the default corpus (the four originals, hard and hard-distractors
seeds 101-108 and the two regression records: 114 paths):

1. `current`: this checkout, as it is on disk;
2. the named baseline, `REV` (default ``43da69b``, the last commit before the inventory
   was keyed in the store), checked out into a temporary git worktree (removed at the
   end).

For each version: ``--cold-runs`` runs from an empty store (default 1: each replays 40
checkpoints), then ``--runs`` warm runs into a new output directory each, with the store
of the last cold run kept (its traces and checkpoints cached; for `current` its measured
paths too). The two versions alternate run by run. Figures are medians of wall time
(interpreter and doit start-up included: what a user waits for). The last lines print
the ratios (current warm / current cold, current warm / baseline warm: the old
re-measurement, current cold / baseline cold) and every inventory digest seen, which
must be one.
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

REPO = Path(__file__).resolve().parent.parent
DIGEST = re.compile(r"inventory sha256 ([0-9a-f]{64})")


def _budget(tree: Path, store: Path, output: Path) -> tuple[float, str]:
    """One `doit lookup_budget` of `tree` on `store` into `output`: (seconds, digest)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "CONTINUITY_STORE": str(store)}
    env.pop("CI", None)
    started = time.perf_counter()
    command = [sys.executable, "-m", "doit", "-f", str(tree / "dodo.py"), "lookup_budget"]
    result = subprocess.run(
        [*command, "--output", str(output)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"lookup_budget failed in {tree}:\n{result.stdout}\n{result.stderr}")
    found = DIGEST.search(result.stdout)
    return seconds, found.group(1) if found else "?"


def _worktree(rev: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), rev],
        check=True,
        capture_output=True,
    )
    return into


def _cold(name: str, tree: Path, work: Path, n: int, digests: set[str]) -> float:
    """A run from an empty store (the store is kept for the warm runs)."""
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    seconds, digest = _budget(tree, store, work / f"cold-{n}")
    digests.add(digest)
    print(f"{name:22s} cold run {n + 1}: {seconds:7.1f} s  inventory {digest[:16]}", flush=True)
    return seconds


def _warm(name: str, tree: Path, work: Path, n: int, digests: set[str]) -> float:
    """A run into a new output directory on the kept store."""
    seconds, digest = _budget(tree, work / "store", work / f"warm-{n}")
    digests.add(digest)
    print(f"{name:22s} warm run {n + 1}: {seconds:7.1f} s  inventory {digest[:16]}", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="43da69b", help="the baseline git revision")
    parser.add_argument("--runs", type=int, default=3, help="warm runs per version")
    parser.add_argument("--cold-runs", type=int, default=1, help="empty-store runs per version")
    args = parser.parse_args()
    digests: set[str] = set()
    medians: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-lookup-budget-") as tmp:
        work = Path(tmp)
        base = _worktree(args.baseline, work / "baseline-tree")
        try:
            versions = {"current": REPO, f"baseline {args.baseline}": base}
            folders = {name: work / name.replace(" ", "-") for name in versions}
            cold: dict[str, list[float]] = {name: [] for name in versions}
            warm: dict[str, list[float]] = {name: [] for name in versions}
            # The versions alternate, so a neighbour's load on the shared machine falls
            # on both alike.
            for n in range(args.cold_runs):
                for name, tree in versions.items():
                    folders[name].mkdir(exist_ok=True)
                    cold[name].append(_cold(name, tree, folders[name], n, digests))
            for n in range(args.runs):
                for name, tree in versions.items():
                    warm[name].append(_warm(name, tree, folders[name], n, digests))
            for name in versions:
                medians[name] = (statistics.median(cold[name]), statistics.median(warm[name]))
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                check=False,
                capture_output=True,
            )
    print()
    for name, (cold_median, warm_median) in medians.items():
        print(f"{name:22s} cold {cold_median:7.1f} s   warm {warm_median:7.2f} s   (medians)")
    (now_cold, now_warm), (old_cold, old_warm) = (
        medians["current"],
        medians[f"baseline {args.baseline}"],
    )
    print(f"current warm / current cold = {now_warm / now_cold:.3f}x")
    print(f"current warm / baseline warm (the old re-measurement) = {now_warm / old_warm:.3f}x")
    print(f"current cold / baseline cold = {now_cold / old_cold:.2f}x")
    print(f"inventory digests seen: {', '.join(sorted(digests))}")


if __name__ == "__main__":
    main()
