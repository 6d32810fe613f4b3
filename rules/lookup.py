"""`doit lookup_budget`: a fresh lookup sizing inventory and policy, or a fixed-budget
sizing of a holdout source.

Legacy sizing (no ``--fixed-budget-sha256``) measures the project's corpus and derives a
policy; it takes ``--output`` and its corpus options only, and refuses holdout options
(a partial source or an external-only option is ``holdout_source_incomplete``, a whole
source or ``--policy`` is ``lookup_fixed_budget_required``). Fixed-budget sizing
(``--fixed-budget-sha256 SHA`` with the source triple and ``--selection-seed N
[--per-group K]``) never derives limits (`continuity.runner.fixed_budget.sizing`); it refuses
the legacy corpus options (``lookup_legacy_option_refused``). A present but empty
``--fixed-budget-sha256`` is ``lookup_empty_fixed_budget_sha256``, before anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

from continuity.graph import task_action
from rules.holdout import (
    SELECTION_PARAMS,
    SOURCE_PARAMS,
    HoldoutOptions,
    external_given,
    holdout_source,
)
from rules.params import STORE, NewDirOption, SeedsOption, TaskSpec, param

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.holdout import HoldoutSource
    from continuity.store import Store

__all__ = ["LookupBudgetOptions", "task_lookup_budget"]


class LookupBudgetOptions(HoldoutOptions, total=False):
    """`doit lookup_budget`: where the policy goes and the corpus it is measured on, or
    the holdout source and selection (`HoldoutOptions`) and fixed budget of a
    fixed-budget sizing."""

    suites: str
    seeds: str
    fixed_budget_sha256: str | None
    policy: str
    reader_model: str


def _reader_model(options: LookupBudgetOptions) -> str | None:
    """``--reader-model``: a ``provider:model`` reference, or None when not given.

    Raises:
        UsageError: ``lookup_reader_model_invalid``.
    """
    from continuity.errors import UsageError

    given = options.get("reader_model") or ""
    if not given:
        return None
    provider, _, model = given.partition(":")
    if not (provider and model and given.isascii() and given.isprintable() and " " not in given):
        raise UsageError(
            f"--reader-model is provider:model (openai:gpt-x), not {given[:60]!r}",
            code="lookup_reader_model_invalid",
            location="--reader-model",
        )
    return given


def _budget(**options: Unpack[LookupBudgetOptions]) -> str:
    from continuity.progress import progress
    from continuity.runner.fixed_budget.sizing import check_fixed_budget_sha256
    from continuity.runner.lookup_budget import run_lookup_budget

    # An empty --fixed-budget-sha256 is refused before any workload or source option.
    fixed = check_fixed_budget_sha256(options.get("fixed_budget_sha256"))
    source = _holdout(options, fixed)
    if source is not None or fixed is not None:
        return _fixed_budget(options, source, fixed)
    if options.get("reader_model"):
        from continuity.errors import UsageError

        raise UsageError(
            "--reader-model names the paid reader a fixed-budget sizing prices; a "
            "legacy inventory has none",
            code="lookup_reader_model_invalid",
            location="--reader-model",
        )
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


def _holdout(options: LookupBudgetOptions, fixed: str | None) -> HoldoutSource | None:
    """The holdout source a fixed-budget sizing names (None for legacy sizing).

    Raises:
        HoldoutError: ``holdout_source_incomplete`` (a partial triple, or an external-only
            option, ``--fixed-budget-sha256`` among them, without it).
        UsageError: ``lookup_fixed_budget_required`` (a source or ``--policy`` without
            ``--fixed-budget-sha256``), ``lookup_legacy_option_refused`` (``--suites`` or
            ``--seeds`` with it).
    """
    from continuity.errors import UsageError

    external = [*external_given(options), *(["--fixed-budget-sha256"] if fixed else [])]
    source = holdout_source(options, external=external)
    if fixed is None:
        if source is not None or options.get("policy"):
            raise UsageError(
                "a holdout source (or --policy) in doit lookup_budget sizes at a fixed "
                "budget only: give --fixed-budget-sha256 (legacy sizing takes --output and "
                "its corpus options only)",
                code="lookup_fixed_budget_required",
                location="--fixed-budget-sha256",
            )
        return None
    for name in ("suites", "seeds"):
        if options.get(name):
            raise UsageError(
                f"--{name} chooses the legacy corpus; a fixed-budget sizing measures the "
                "holdout's selection",
                code="lookup_legacy_option_refused",
                location=f"--{name}",
            )
    return source


def _fixed_budget(
    options: LookupBudgetOptions, source: HoldoutSource | None, fixed: str | None
) -> str:
    """Size the holdout's selection at the fixed budget; where budget.json is."""
    from collections import Counter
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.plan.lookup_slots import EstimateRole
    from continuity.progress import progress
    from continuity.roles.table import ROLES
    from continuity.runner.fixed_budget.sizing import FixedBudgetRequest, run_fixed_budget
    from continuity.store import Store

    assert source is not None and fixed is not None  # _holdout refused anything else
    chosen = options.get("output")
    if not chosen:
        raise UsageError(
            "lookup_budget needs --output DIR (a directory that does not exist)",
            code="lookup_output_required",
            location="--output",
        )
    seed = options.get("selection_seed", -1)
    policy = options.get("policy")
    request = FixedBudgetRequest(
        output=Path(chosen),
        source=source,
        seed=None if seed == -1 else seed,
        per_group=options.get("per_group") or None,
        fixed_budget_sha256=fixed,
        policy=Path(policy) if policy else None,
        reader_model=_reader_model(options),
    )
    roles = [
        EstimateRole(name=r.name, arm=r.arm, code=r.code, soul_file=r.soul_file) for r in ROLES
    ]
    store = Store(options.get("store") or None)
    with progress("lookup_budget") as tick:
        result = run_fixed_budget(store, request, roles, progress=tick)
    budget = result.budget
    classes = Counter(s.classification for s in budget.slots)
    unknown = classes.get("unknown", 0)
    terms = budget.budget
    return (
        f"lookup_budget: fixed budget {terms.calls} calls / {terms.bytes:,} bytes / "
        f"{terms.rounds} rounds ({terms.policy_file}); {len(budget.slots):,} slots "
        f"({len(budget.roles)} roles x {len(budget.holdout.selected)} conversations x their "
        f"probes): {', '.join(f'{k} {v:,}' for k, v in sorted(classes.items()))}; "
        f"{result.measured:,} slot records measured, {result.reused:,} reused from the store, "
        f"{result.failed:,} failed"
        + (f"\n{unknown:,} slots of unknown feasibility block pricing" if unknown else "")
        + f"\nbudget.json in {result.path} (sha256 {result.sha256}); use it with "
        f"--lookup-policy {result.path} --lookup-policy-sha256 {result.sha256}"
    )


def task_lookup_budget() -> TaskSpec:
    """Measure a lookup sizing inventory, or size a holdout source at a fixed budget.

    Legacy: every reference path of the corpus is an action in the store (a rerun
    reuses them and takes seconds, a killed one resumes); a policy is derived (never the
    frozen one) and written with the inventory and a summary to --output.
    --fixed-budget-sha256 SHA with a holdout source (--manifest, --manifest-sha256,
    --statistical-spec) and --selection-seed N [--per-group K] sizes each role x
    selected conversation x probe at the frozen policy's budget (ten rounds, unchanged
    deadlines; --policy names another frozen policy file): every slot records its
    observed initial context and admission, measured in a private scratch store that is
    removed; records are keyed in the store. It prints budget.json's sha256.
    Results: --output (policy.json, inventory.json, summary.md; or budget.json, summary.md).
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
            *SOURCE_PARAMS,
            *SELECTION_PARAMS,
            param(
                "fixed_budget_sha256",
                str,
                None,
                "fixed-budget sizing of a holdout: the sha256 of the frozen policy's raw "
                "bytes (fixtures/lookup/budget-v4.json: 8 calls, 126,976 bytes)",
            ),
            param(
                "policy",
                str,
                "",
                "fixed-budget sizing: another frozen policy file whose bytes hash to "
                "--fixed-budget-sha256",
            ),
            param(
                "reader_model",
                str,
                "",
                "fixed-budget sizing: the paid reader it prices, provider:model (default "
                "the scripted binding's reader, Sol; measured offline either way)",
            ),
            STORE,
        ],
        "verbosity": 2,
    }
