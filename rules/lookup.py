"""`doit lookup_budget`: measure a fresh lookup sizing inventory and policy."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import STORE, param


def _budget(**options: Any) -> str:
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.lookup.budget import run_lookup_budget
    from continuity.lookup.inventory import CORPUS
    from continuity.progress import progress
    from continuity.store import Store
    from continuity.traces.keys import parse_seeds

    if not options.get("output"):
        raise UsageError(
            "lookup_budget needs --output DIR (a directory that does not exist)",
            code="lookup_output_required",
            location="--output",
        )
    corpus = list(CORPUS)
    if options.get("suites"):
        seeds = parse_seeds(options["seeds"]) if options.get("seeds") else tuple(range(101, 109))
        corpus = [
            (suite, None if suite == "original" else tuple(seeds))
            for suite in options["suites"].split(",")
        ]
    with progress("lookup_budget") as tick:
        result = run_lookup_budget(
            Store(options.get("store") or None),
            Path(options["output"]).expanduser().absolute(),
            corpus=corpus,
            progress=tick,
        )
    policy = result.policy
    return (
        f"lookup_budget: {policy.paths} paths, budget {policy.calls} calls / "
        f"{policy.bytes:,} bytes (max path {policy.max_path_calls} calls / "
        f"{policy.max_path_bytes:,} bytes, largest response {policy.largest_response:,}); "
        f"inventory sha256 {result.inventory_sha256}\n"
        f"policy in {result.policy_path} (sha256 {result.policy_sha256}); use it with "
        f"--policy {result.policy_path} --policy-sha256 {result.policy_sha256}"
    )


def task_lookup_budget() -> dict[str, Any]:
    """Measure a fresh lookup sizing inventory and derive a policy (never the frozen one)."""
    return {
        "actions": [task_action(_budget)],
        "params": [
            param("output", str, "", "a directory that does not exist yet"),
            param("suites", str, "", "corpus suites (default original,hard,hard-distractors)"),
            param("seeds", str, "", "generated-suite seeds (default 101-108)"),
            STORE,
        ],
        "verbosity": 2,
    }
