"""The nine recall arms on LoCoMo, offline: availability and loss attribution per arm.

Imports LoCoMo's archive, checks and freezes it as a holdout source, runs every default
recall arm on all ten conversations (``--per-group 5``: every family of both groups)
with the scripted reader, aggregates, and prints the Markdown tables of
``docs/locomo.md`` from the run's ``results.json``. Everything runs in a fresh store and
output directory under ``--work`` (default: a new temporary directory), never in the
checkout's.

    python3 benchmarks/locomo_availability.py [--zip PATH] [--work DIR] [--probe-limit N]
    python3 benchmarks/locomo_availability.py --results DIR/out/runs/locomo/results.json

The scripted reader answers UNKNOWN, so the accuracy columns are mechanics only; the
availability columns (where the evidence turns of each question were after the
boundary: in the reader's context word for word, retrievable through ConversationHistory
within the lookup budget, or gone) are the real, model-free result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ZIP = REPO.parent / "shared" / "external" / "locomo" / "locomo10.zip"
SEED = 2026  # any preregistered seed: --per-group 5 selects every family


def _doit(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"doit {args[0]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def run(archive: Path, work: Path, probe_limit: int | None) -> Path:
    """Import, validate, check overlap, freeze and run; the results.json path."""
    env = {
        **os.environ,
        "CONTINUITY_STORE": str(work / "store"),
        "CONTINUITY_OUT": str(work / "out"),
    }
    source = work / "locomo"
    _doit(env, "import_locomo", "--zip", str(archive), "--output", str(source))
    sha = hashlib.sha256((source / "manifest.json").read_bytes()).hexdigest()
    triple = [
        "--manifest", str(source / "manifest.json"), "--manifest-sha256", sha,
        "--statistical-spec", str(source / "statistical-spec.json"),
    ]  # fmt: skip
    _doit(env, "holdout_validate", *triple)
    _doit(env, "holdout_overlap", *triple, "--output", str(work / "overlap"))
    _doit(env, "holdout_freeze", *triple, "--overlap", str(work / "overlap" / "overlap.json"))
    limit = ["--probe-limit", str(probe_limit)] if probe_limit else []
    started = time.monotonic()
    _doit(
        env, "units", "--suite", "holdout", *triple, "--selection-seed", str(SEED),
        "--per-group", "5", "--run", "locomo", *limit,
    )  # fmt: skip
    print(f"units took {time.monotonic() - started:.0f} s", file=sys.stderr)
    _doit(env, "aggregate", "--run", "locomo")
    return work / "out" / "runs" / "locomo" / "results.json"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def tables(results: dict[str, Any]) -> str:
    """The Markdown tables of docs/locomo.md."""
    suite = "imported"
    lines = [
        "| arm | valid | excluded | in context | retrievable | absent | not applicable "
        "| lost at boundary | lost at retrieval | present but missed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for arm in results["arms"]:
        a = results["availability"][suite].get(arm, {})
        excluded = sum(results["excluded"][suite].get(arm, {}).values())
        facts = a.get("in_context", 0) + a.get("retrievable", 0) + a.get("absent", 0)
        valid = facts + a.get("not_applicable", 0)
        lines.append(
            f"| {arm} | {valid:,} | {excluded:,} | {_pct(a.get('in_context', 0), facts)} "
            f"| {_pct(a.get('retrievable', 0), facts)} | {_pct(a.get('absent', 0), facts)} "
            f"| {a.get('not_applicable', 0):,} | {a.get('lost_at_boundary', 0):,} "
            f"| {a.get('lost_at_retrieval', 0):,} | {a.get('present_but_missed', 0):,} |"
        )
    lines += ["", "| arm | excluded by class |", "|---|---|"]
    for arm in results["arms"]:
        classes = {k: v for k, v in results["excluded"][suite].get(arm, {}).items() if v}
        text = ", ".join(f"{k} {v:,}" for k, v in sorted(classes.items())) or "none"
        lines.append(f"| {arm} | {text} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zip", type=Path, default=DEFAULT_ZIP)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--probe-limit", type=int, default=None)
    parser.add_argument("--results", type=Path, default=None, help="print from a results.json")
    args = parser.parse_args(argv)
    if args.results is None:
        work = args.work or Path(tempfile.mkdtemp(prefix="locomo-availability-"))
        args.results = run(args.zip, work, args.probe_limit)
        print(f"results in {args.results}", file=sys.stderr)
    sys.stdout.write(tables(json.loads(args.results.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
