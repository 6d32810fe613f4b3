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
paths too). Figures are medians of wall time (interpreter and doit start-up included:
what a user waits for). The last lines print the ratios (current warm / current cold,
current warm / baseline warm: the old re-measurement) and every inventory digest seen,
which must be one.
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


def _version(
    name: str, tree: Path, work: Path, runs: int, cold_runs: int, digests: set[str]
) -> tuple[list[float], list[float]]:
    """The cold and warm wall times of one version."""
    cold: list[float] = []
    warm: list[float] = []
    store = work / "store"
    for n in range(cold_runs):
        shutil.rmtree(store, ignore_errors=True)
        seconds, digest = _budget(tree, store, work / f"cold-{n}")
        cold.append(seconds)
        digests.add(digest)
        print(f"{name:22s} cold run {n + 1}: {seconds:7.1f} s  inventory {digest[:16]}")
    for n in range(runs):
        seconds, digest = _budget(tree, store, work / f"warm-{n}")
        warm.append(seconds)
        digests.add(digest)
        print(f"{name:22s} warm run {n + 1}: {seconds:7.1f} s  inventory {digest[:16]}")
    return cold, warm


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
            for name, tree in versions.items():
                folder = work / name.replace(" ", "-")
                folder.mkdir()
                colds, warms = _version(name, tree, folder, args.runs, args.cold_runs, digests)
                medians[name] = (statistics.median(colds), statistics.median(warms))
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                check=False,
                capture_output=True,
            )
    print()
    for name, (cold, warm) in medians.items():
        print(f"{name:22s} cold {cold:7.1f} s   warm {warm:7.2f} s   (medians)")
    (cold, warm), (_, old_warm) = medians["current"], medians[f"baseline {args.baseline}"]
    print(f"current warm / current cold = {warm / cold:.3f}x")
    print(f"current warm / baseline warm (the old re-measurement) = {warm / old_warm:.3f}x")
    print(f"inventory digests seen: {', '.join(sorted(digests))}")


if __name__ == "__main__":
    main()
