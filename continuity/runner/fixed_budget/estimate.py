"""Pricing a holdout source from its fixed-budget sizing (``doit estimate`` with a source).

`holdout_lookup_estimate` loads ``budget.json``
(`continuity.lookup.fixed_budget.load_fixed_budget`: raw sha256, bindings, every class
recomputed), loads the frozen source and its selection from the store and refuses a
source or selection other than the one the sizing binds (``lookup_policy_holdout_mismatch``:
the seed is preregistered, given identically to budget, estimate, registration and plan),
checks the per-call output limit against its source (`check_output_limit`), and prices:
the sensitivity profiles over the sizing's slots
(`continuity.plan.lookup_estimate.estimate_lookup`) and, at the main reader, the expected
and reservation scenarios with the proposed cap C
(`continuity.plan.holdout_pricing.price_holdout`). No credential, no network, nothing
measured or written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from continuity.errors import UsageError
from continuity.holdout import HoldoutSource, holdout_binding, load_frozen, select_frozen
from continuity.lookup.fixed_budget import (
    FixedBudget,
    check_source_binding,
    load_fixed_budget,
    source_binding,
)
from continuity.plan.holdout_pricing import ReservationTerms, price_holdout, priced_slots
from continuity.plan.lookup_estimate import (
    HIGH_END_MODEL,
    OUTPUT_LIMIT_SOURCES,
    LookupEstimate,
    OutputLimitSource,
    Profile,
    configured_deadlines,
    estimate_lookup,
    fixed_slot_sizes,
    holdout_estimate,
)
from continuity.plan.lookup_slots import Allowances, EstimateRole, EstimateSource, LookupWorkload
from continuity.plan.pricing import Catalog, load_catalog, model_price, price_source
from continuity.store import Store

__all__ = ["HoldoutRequest", "check_output_limit", "holdout_lookup_estimate"]

# A holdout's slots are sized on what the sizing observed, not on the source's shape.
_INITIAL = (
    "the observed first-request bytes / 3 of the fixed-budget sizing (each role measured "
    "with its own soul and the pack's guidance, so no S1 or Rpack allowance), native floor "
    "150,000, pack floor cold + 12,000 (heuristic)"
)


@dataclass(frozen=True)
class HoldoutRequest:
    """A holdout estimate's inputs: the source, the preregistered selection (seed and
    per-group count, None: the spec's), the fixed-budget sizing and its raw sha256, and
    the explicit per-call output limit and its source (None: not given)."""

    source: HoldoutSource
    seed: int | str | None
    per_group: int | None
    budget_path: Path
    budget_sha256: str
    output_limit: int | None = None
    output_limit_source: str | None = None


def check_output_limit(
    limit: int | None, source: str | None, model: str, catalog: Catalog
) -> OutputLimitSource | None:
    """The output limit's source, checked: ``catalog_max`` must equal `model`'s catalog
    maximum output (when the catalog has one; without one, pricing is blocked).

    Raises:
        UsageError: ``lookup_output_limit_source_invalid`` (not ``catalog_max`` or
            ``enforced``), ``option_value_missing`` (one of the two without the other),
            ``lookup_output_limit_mismatch``.
    """
    if source and source not in OUTPUT_LIMIT_SOURCES:
        raise UsageError(
            f"{source[:40]!r}; the output limit's source is catalog_max or enforced",
            code="lookup_output_limit_source_invalid",
            location="--output-limit-source",
        )
    if bool(limit) != bool(source):
        missing = "--output-limit-source" if limit else "--output-limit"
        raise UsageError(
            "an output limit needs both --output-limit N and --output-limit-source",
            code="option_value_missing",
            location=missing,
        )
    if not limit or not source:
        return None
    chosen = next(s for s in OUTPUT_LIMIT_SOURCES if s == source)
    price = model_price(catalog, model)
    maximum = price.max_output if price is not None else None
    if chosen == "catalog_max" and maximum and limit != maximum:
        raise UsageError(
            f"--output-limit {limit:,} with catalog_max must equal {model}'s catalog maximum "
            f"output, {maximum:,}",
            code="lookup_output_limit_mismatch",
            location="--output-limit",
        )
    return chosen


def holdout_lookup_estimate(
    store: Store,
    request: HoldoutRequest,
    *,
    pricing: Path | None = None,
    screening: str | None = None,
    high_end: str | None = None,
    watchdog_seconds: float,
) -> LookupEstimate:
    """Estimate a holdout source from its fixed-budget sizing (no credential, no
    network; see the module doc).

    Raises:
        LookupError_: `load_fixed_budget`'s codes, ``lookup_policy_holdout_mismatch``.
        HoldoutError: `load_frozen`'s and `select_frozen`'s codes.
        UsageError: `check_output_limit`'s codes.
        PricingError: ``pricing_invalid``.
    """
    budget = load_fixed_budget(request.budget_path, request.budget_sha256)
    frozen = load_frozen(store, request.source)
    binding = holdout_binding(frozen, select_frozen(frozen, request.seed, request.per_group))
    check_source_binding(budget.holdout, source_binding(binding), str(request.budget_path))
    catalog = load_catalog(pricing)
    reader = budget.reader.reader
    limit = request.output_limit or None
    source = check_output_limit(limit, request.output_limit_source, reader, catalog)
    profiles: list[tuple[Profile, str]] = [
        ("main", reader),
        ("screening", screening or budget.reader.alternate),
        ("high-end", high_end or HIGH_END_MODEL),
    ]
    result = estimate_lookup(
        _holdout_workload(budget),
        fixed_slot_sizes(budget.slots),
        budget,
        policy_sha256=request.budget_sha256,
        allowances=Allowances(soul_bytes={}, guidance_bytes=0),
        models=[(p, m, model_price(catalog, m)) for p, m in profiles],
        deadlines=configured_deadlines(watchdog_seconds),
        prices=price_source(pricing),
    )
    terms = ReservationTerms(
        byte_budget=budget.bytes, rounds=budget.budget.rounds, output_limit=limit
    )
    priced = price_holdout(priced_slots(budget.slots), catalog, reader, terms)
    found = holdout_estimate(budget, request.budget_sha256.strip().lower(), priced, limit, source)
    assumptions = {**result.assumptions, "initial": _INITIAL}
    return msgspec.structs.replace(result, holdout=found, assumptions=assumptions)


def _holdout_workload(budget: FixedBudget) -> LookupWorkload:
    """A holdout's workload: its selected conversations, every probe, one repeat, the
    sizing's reader binding and roles, given on the command line (no registration)."""
    return LookupWorkload(
        suites=["holdout"],
        traces=list(budget.holdout.selected),
        probe_limit=None,
        repeats=1,
        reader_binding=budget.reader.binding,
        roles=[
            EstimateRole(name=r.name, arm=r.arm, code=r.code, soul_file=r.soul_file)
            for r in budget.roles
        ],
        source=EstimateSource(kind="workload-only"),
    )
