"""An external registration: the six roles on a frozen holdout source (registration v2).

The rule: "For estimate and compare registration, pass the same source/selection plus
--lookup-policy budget.json --lookup-policy-sha256 SHA256, --output-limit N
--output-limit-source catalog_max|enforced. Compare register also requires
--catalog-cap-usd C, exactly reproducing the estimate. External registrations use v2;
v1 default registration shape and legacy plan digests remain unchanged."

`holdout_workload` checks all of that before anything is built: the source and its
selection against the store's freeze (`continuity.plan.holdout_plan.holdout_choice`),
the fixed-budget sizing against that selection and this checkout's classifier
(`continuity.runner.fixed_budget.estimate.holdout_lookup_estimate`, the estimate's own
code, which also checks the output limit), and the given cap against the estimate's
proposed cap C, to the cent. The `HoldoutWorkload` it returns is bound into the
registration (schema ``continuity-lookup-registration-v2``), and every role child runs
``--suite holdout`` with the source, the selection and the sizing as its policy.

Codes: ``role_catalog_cap_required`` (no ``--catalog-cap-usd``),
``role_catalog_cap_invalid`` (not a decimal amount of whole cents),
``role_catalog_cap_mismatch`` (not the estimate's C, or the estimate's pricing is
blocked), besides those of the source, selection, sizing and output limit.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from pathlib import Path

import msgspec

from continuity.errors import RoleError
from continuity.holdout import HoldoutSource
from continuity.holdout.schema import HoldoutBinding
from continuity.plan.request import HoldoutRequest
from continuity.store import Store

__all__ = [
    "HoldoutWorkload",
    "check_sizing_build",
    "held_request",
    "holdout_workload",
    "parse_cap",
]


class HoldoutWorkload(msgspec.Struct, frozen=True, kw_only=True):
    """What an external registration binds besides the v1 workload: the source triple
    (absolute paths), the verified selection, the fixed-budget sizing (absolute path and
    raw sha256), the per-call output limit and its source, and the catalog cap."""

    manifest: str
    manifest_sha256: str
    statistical_spec: str
    selection: HoldoutBinding
    sizing: str
    sizing_sha256: str
    output_limit: int
    output_limit_source: str
    catalog_cap_usd: str


def held_request(held: HoldoutWorkload) -> HoldoutRequest:
    """The holdout request that selects `held`'s traces again
    (`continuity.plan.holdout_plan.holdout_choice`; the store is the caller's)."""
    from continuity.plan.holdout_plan import HOLDOUT_SUITE

    return HoldoutRequest(
        suite=HOLDOUT_SUITE,
        manifest=held.manifest,
        manifest_sha256=held.manifest_sha256,
        statistical_spec=held.statistical_spec,
        selection_seed=held.selection.seed,
        per_group=held.selection.per_group,
    )


def check_sizing_build(held: HoldoutWorkload, rpack_revision: str) -> None:
    """The sizing was measured by clean code at Rpack's registered revision (every role
    is measured with this checkout's renderer, which carries the guidance: Rpack's).

    Raises:
        RoleError: ``role_sizing_dirty`` (measured from a work tree that differed from
            its commit, or outside git), ``role_sizing_revision_mismatch`` (another
            commit).
        LookupError_: `load_fixed_budget`'s codes.
    """
    from continuity.lookup.fixed_budget import load_fixed_budget

    code = load_fixed_budget(Path(held.sizing), held.sizing_sha256).code
    if code.dirty is not False:
        raise RoleError(
            "the sizing was measured from a work tree that differed from its commit (or "
            "outside git); measure it again from the clean Rpack checkout",
            code="role_sizing_dirty",
            location=held.sizing,
        )
    if code.commit != rpack_revision:
        raise RoleError(
            f"the sizing was measured at {code.commit[:12]}, Rpack is {rpack_revision[:12]}; "
            "measure it again at the registered revision",
            code="role_sizing_revision_mismatch",
            location=held.sizing,
        )


def parse_cap(text: str | None) -> Decimal:
    """``--catalog-cap-usd`` as an exact amount of whole cents.

    Raises:
        RoleError: ``role_catalog_cap_required``, ``role_catalog_cap_invalid``.
    """
    if not (text or "").strip():
        raise RoleError(
            "an external registration binds the estimate's proposed cap: give "
            "--catalog-cap-usd C as doit estimate printed it",
            code="role_catalog_cap_required",
            location="--catalog-cap-usd",
        )
    try:
        amount = Decimal(str(text).strip())
    except InvalidOperation:
        amount = Decimal("NaN")
    if not amount.is_finite() or amount <= 0 or amount != amount.quantize(Decimal("0.01")):
        raise RoleError(
            f"{str(text)[:40]!r} is not a positive amount of whole cents",
            code="role_catalog_cap_invalid",
            location="--catalog-cap-usd",
        )
    return amount


def holdout_workload(
    store: Store,
    source: HoldoutRequest,
    sizing: tuple[Path, str],
    output_limit: tuple[int | None, str | None],
    catalog_cap: str | None,
    *,
    pricing: Path | None = None,
) -> HoldoutWorkload:
    """The holdout part of an external registration, every binding checked (module doc).

    `source` names the source and selection (``manifest``, ``manifest_sha256``,
    ``statistical_spec``, ``selection_seed``, ``per_group``; its suite is taken to be
    ``holdout``); `pricing` the catalog the estimate was priced with (default the
    checked-in one).

    Raises:
        HoldoutError, LookupError_, UsageError, PricingError: the source's, selection's,
            sizing's and output limit's codes; RoleError: ``role_catalog_cap_*``.
    """
    from continuity.plan.holdout_plan import HOLDOUT_SUITE, holdout_choice
    from continuity.runner.fixed_budget.estimate import (
        HoldoutRequest as EstimateRequest,
    )
    from continuity.runner.fixed_budget.estimate import holdout_lookup_estimate
    from continuity.runner.lookup_run import LookupRun

    cap = parse_cap(catalog_cap)
    choice = holdout_choice(
        store, msgspec.structs.replace(source, suite=HOLDOUT_SUITE), lookup=True
    )
    assert choice is not None
    binding = choice.binding
    request = EstimateRequest(
        source=HoldoutSource(Path(choice.manifest), binding.manifest_sha256, Path(choice.spec)),
        seed=binding.seed,
        per_group=binding.per_group,
        budget_path=sizing[0],
        budget_sha256=sizing[1],
        output_limit=output_limit[0],
        output_limit_source=output_limit[1],
    )
    (watchdog,) = (
        f.default for f in msgspec.structs.fields(LookupRun) if f.name == "watchdog_seconds"
    )
    estimate = holdout_lookup_estimate(
        store, request, pricing=pricing, watchdog_seconds=float(watchdog)
    )
    assert estimate.holdout is not None
    priced = estimate.holdout.pricing
    if priced.status != "priced" or priced.cap_usd is None:
        raise RoleError(
            "the estimate's numerical approval is blocked "
            f"({'; '.join(priced.reasons)[:200]}): there is no cap to register",
            code="role_catalog_cap_mismatch",
            location="--catalog-cap-usd",
        )
    if priced.cap_usd != cap:
        raise RoleError(
            f"--catalog-cap-usd {cap} is not the estimate's proposed cap C = "
            f"{priced.cap_usd} (doit estimate with the same source, selection, sizing and "
            "output limit prints it)",
            code="role_catalog_cap_mismatch",
            location="--catalog-cap-usd",
        )
    limit, limit_source = output_limit
    assert limit is not None and limit_source is not None  # the estimate priced it
    return HoldoutWorkload(
        manifest=str(Path(choice.manifest).absolute()),
        manifest_sha256=binding.manifest_sha256,
        statistical_spec=str(Path(choice.spec).absolute()),
        selection=binding,
        sizing=str(sizing[0].absolute()),
        sizing_sha256=sizing[1],
        output_limit=limit,
        output_limit_source=limit_source,
        catalog_cap_usd=str(cap),
    )
