"""``doit lookup_budget``: a fresh lookup sizing inventory and policy, or a fixed-budget
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
from typing import TYPE_CHECKING

from continuity.plan.request import HoldoutRequest

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.holdout import HoldoutSource
    from continuity.store import Store

__all__ = ["LookupBudgetRequest", "check_reader_model", "legacy_arguments", "lookup_budget"]


class LookupBudgetRequest(HoldoutRequest, frozen=True, kw_only=True):
    """``doit lookup_budget``: where the results go and the legacy corpus they are
    measured on (``--suites``, ``--seeds``), or the holdout source and selection and the
    fixed budget of a fixed-budget sizing (``--fixed-budget-sha256``: None when not
    given, its own policy file and the paid reader it prices)."""

    output: str = ""
    suites: str = ""
    fixed_budget_sha256: str | None = None
    policy: str = ""
    reader_model: str = ""


def check_reader_model(request: LookupBudgetRequest) -> str | None:
    """``--reader-model``: a ``provider:model`` reference, or None when not given.

    Raises:
        UsageError: ``lookup_reader_model_invalid``.
    """
    from continuity.errors import UsageError

    given = request.reader_model
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


def lookup_budget(request: LookupBudgetRequest) -> str:
    """``doit lookup_budget``: size the legacy corpus or a holdout's selection; the
    summary line (what was measured, and the file to pass on with its sha256)."""
    from continuity.progress import progress
    from continuity.runner.fixed_budget.sizing import check_fixed_budget_sha256
    from continuity.runner.lookup_budget import run_lookup_budget

    # An empty --fixed-budget-sha256 is refused before any workload or source option.
    fixed = check_fixed_budget_sha256(request.fixed_budget_sha256)
    source = _holdout(request, fixed)
    if source is not None or fixed is not None:
        return _fixed_budget(request, source, fixed)
    if request.reader_model:
        from continuity.errors import UsageError

        raise UsageError(
            "--reader-model names the paid reader a fixed-budget sizing prices; a "
            "legacy inventory has none",
            code="lookup_reader_model_invalid",
            location="--reader-model",
        )
    store, output, corpus = legacy_arguments(request)  # every argument, before any replay
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


def legacy_arguments(
    request: LookupBudgetRequest,
) -> tuple[Store, Path, list[tuple[str, Sequence[int] | None]]]:
    """The store, output directory and corpus of a legacy sizing, all checked.

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

    chosen = _required_output(request)
    output = check_new_directory(
        chosen, exists="lookup_output_exists", invalid="lookup_output_invalid"
    )
    given = request.seeds
    seeds = parse_seeds(given) if given else DEFAULT_SEEDS
    corpus: list[tuple[str, Sequence[int] | None]] = list(CORPUS)
    named = request.suites
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
    return Store(request.store or None), output, corpus


def _holdout(request: LookupBudgetRequest, fixed: str | None) -> HoldoutSource | None:
    """The holdout source a fixed-budget sizing names (None for legacy sizing).

    Raises:
        HoldoutError: ``holdout_source_incomplete`` (a partial triple, or an external-only
            option, ``--fixed-budget-sha256`` among them, without it).
        UsageError: ``lookup_fixed_budget_required`` (a source or ``--policy`` without
            ``--fixed-budget-sha256``), ``lookup_legacy_option_refused`` (``--suites`` or
            ``--seeds`` with it).
    """
    from continuity.commands.holdouts import external_given, holdout_source
    from continuity.errors import UsageError

    external = [*external_given(request), *(["--fixed-budget-sha256"] if fixed else [])]
    source = holdout_source(request, external=external)
    if fixed is None:
        if source is not None or request.policy:
            raise UsageError(
                "a holdout source (or --policy) in doit lookup_budget sizes at a fixed "
                "budget only: give --fixed-budget-sha256 (legacy sizing takes --output and "
                "its corpus options only)",
                code="lookup_fixed_budget_required",
                location="--fixed-budget-sha256",
            )
        return None
    for name, value in (("suites", request.suites), ("seeds", request.seeds)):
        if value:
            raise UsageError(
                f"--{name} chooses the legacy corpus; a fixed-budget sizing measures the "
                "holdout's selection",
                code="lookup_legacy_option_refused",
                location=f"--{name}",
            )
    return source


def _fixed_budget(
    request: LookupBudgetRequest, source: HoldoutSource | None, fixed: str | None
) -> str:
    """Size the holdout's selection at the fixed budget; where budget.json is."""
    from collections import Counter
    from pathlib import Path

    from continuity.plan.lookup_slots import EstimateRole
    from continuity.progress import progress
    from continuity.roles.table import ROLES
    from continuity.runner.fixed_budget.sizing import FixedBudgetRequest, run_fixed_budget
    from continuity.store import Store

    assert source is not None and fixed is not None  # _holdout refused anything else
    chosen = _required_output(request)
    seed = request.selection_seed
    policy = request.policy
    sizing = FixedBudgetRequest(
        output=Path(chosen),
        source=source,
        seed=None if seed == -1 else seed,
        per_group=request.per_group or None,
        fixed_budget_sha256=fixed,
        policy=Path(policy) if policy else None,
        reader_model=check_reader_model(request),
    )
    roles = [
        EstimateRole(name=r.name, arm=r.arm, code=r.code, soul_file=r.soul_file) for r in ROLES
    ]
    store = Store(request.store or None)
    with progress("lookup_budget") as tick:
        result = run_fixed_budget(store, sizing, roles, progress=tick)
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


def _required_output(request: LookupBudgetRequest) -> str:
    """``--output``, which lookup_budget requires.

    Raises:
        UsageError: ``lookup_output_required``.
    """
    from continuity.errors import UsageError

    if not request.output:
        raise UsageError(
            "lookup_budget needs --output DIR (a directory that does not exist)",
            code="lookup_output_required",
            location="--output",
        )
    return request.output
