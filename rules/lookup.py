"""`doit lookup_budget`: measure a fresh lookup sizing inventory and policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

from continuity.graph import task_action
from rules.params import STORE, NewDirOption, SeedsOption, TaskSpec, param

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.store import Store


class LookupBudgetOptions(TypedDict, total=False):
    """`doit lookup_budget`: where the policy goes and the corpus it is measured on."""

    output: str
    suites: str
    seeds: str
    store: str


def _budget(**options: Unpack[LookupBudgetOptions]) -> str:
    from continuity.progress import progress
    from continuity.runner.lookup_budget import run_lookup_budget

    store, output, corpus = _arguments(options)  # every argument, before any replay
    with progress("lookup_budget") as tick:
        result = run_lookup_budget(store, output, corpus=corpus, progress=tick)
    policy = result.policy
    return (
        f"lookup_budget: {policy.paths} paths, budget {policy.calls} calls / "
        f"{policy.bytes:,} bytes (max path {policy.max_path_calls} calls / "
        f"{policy.max_path_bytes:,} bytes, largest response {policy.largest_response:,}); "
        f"inventory sha256 {result.inventory_sha256}; {result.measured} paths measured, "
        f"{result.reused} reused from the store\n"
        f"policy in {result.policy_path} (sha256 {result.policy_sha256}); use it with "
        f"--policy {result.policy_path} --policy-sha256 {result.policy_sha256}"
    )


def _arguments(
    options: LookupBudgetOptions,
) -> tuple[Store, Path, list[tuple[str, Sequence[int] | None]]]:
    """The store, output directory and corpus `options` name, all checked.

    Raises:
        UsageError: ``lookup_output_required``, ``lookup_output_exists``,
            ``lookup_output_invalid``, ``suite_unknown``, ``seeds_invalid``,
            ``store_path_invalid``.
    """
    from continuity.errors import UsageError
    from continuity.outputs import check_new_directory
    from continuity.runner.inventory import CORPUS
    from continuity.store import Store
    from continuity.traces.keys import DEFAULT_SEEDS, SUITES, parse_seeds

    chosen = options.get("output")
    if not chosen:
        raise UsageError(
            "lookup_budget needs --output DIR (a directory that does not exist)",
            code="lookup_output_required",
            location="--output",
        )
    output = check_new_directory(
        chosen, exists="lookup_output_exists", invalid="lookup_output_invalid"
    )
    given = options.get("seeds")
    seeds = parse_seeds(given) if given else DEFAULT_SEEDS
    corpus: list[tuple[str, Sequence[int] | None]] = list(CORPUS)
    named = options.get("suites")
    if named:
        suites = [name.strip() for name in named.split(",")]
        for suite in suites:
            if suite not in SUITES:
                raise UsageError(
                    f"unknown suite {suite[:40]!r}; choose from {', '.join(SUITES)}",
                    code="suite_unknown",
                    location="--suites",
                )
        corpus = [(suite, None if suite == "original" else tuple(seeds)) for suite in suites]
    return Store(options.get("store") or None), output, corpus


def task_lookup_budget() -> TaskSpec:
    """Measure a lookup sizing inventory and derive a policy (never the frozen one).

    Every reference path is an action in the store: paths measured before with the same
    inputs are reused, so a rerun takes seconds and a killed one resumes. The policy,
    inventory and summary are written to --output.
    """
    return {
        "actions": [task_action(_budget)],
        "params": [
            param(
                "output",
                NewDirOption(
                    "--output", exists="lookup_output_exists", invalid="lookup_output_invalid"
                ),
                "",
                "a directory that does not exist yet",
            ),
            param("suites", str, "", "corpus suites (default original,hard,hard-distractors)"),
            param("seeds", SeedsOption("--seeds"), "", "generated-suite seeds (default 101-108)"),
            STORE,
        ],
        "verbosity": 2,
    }
