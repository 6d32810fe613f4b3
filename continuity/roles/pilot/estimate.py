"""`doit estimate --registration PILOT --sha256 S`: a pilot registration's offline estimate.

`pilot_lookup_estimate` verifies the pilot registration
(`continuity.roles.pilot.registration.read_pilot`),
estimates the external registration it wraps exactly as ``doit estimate`` estimates that
registration (its holdout source, selection, fixed-budget sizing and output limit:
`continuity.runner.fixed_budget.estimate.holdout_lookup_estimate`, whose full-upfront
proposed cap C is unchanged), and adds the cap-gated section
(`continuity.plan.pilot_estimate`): E, Rmax, the descriptor's C, C - Rmax, C / E, the
full-upfront comparison (not the admission gate) and the cap-gated readiness
(`continuity.plan.readiness.cap_gated_readiness`). The ordinary readiness beside it is
unchanged. No credential is read and no provider is contacted.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.holdout import HoldoutSource
from continuity.plan.holdout_pricing import priced_slots
from continuity.plan.lookup_estimate import LookupEstimate
from continuity.plan.lookup_slots import EstimateSource
from continuity.plan.pilot_estimate import pilot_estimate
from continuity.plan.readiness import cap_gated_readiness
from continuity.roles.pilot.registration import read_pilot
from continuity.runner.fixed_budget.estimate import HoldoutRequest, holdout_lookup_estimate
from continuity.spend.descriptor import descriptor_digest
from continuity.store import Store

__all__ = ["pilot_lookup_estimate"]


def pilot_lookup_estimate(
    store: Store,
    path: Path,
    sha256: str,
    *,
    pricing: Path | None = None,
    screening: str | None = None,
    high_end: str | None = None,
    watchdog_seconds: float,
) -> LookupEstimate:
    """The estimate of the pilot registration at `path` (raw sha256 `sha256`), its frozen
    holdout read from `store`, priced with the catalog at `pricing`.

    Raises:
        RoleError, SpendError, LookupError_, PricingError: `read_pilot`'s codes.
        HoldoutError, LookupError_, UsageError: `holdout_lookup_estimate`'s.
    """
    verified = read_pilot(path, sha256, pricing=pricing)
    held, wrapped = verified.held, verified.pilot.registration
    descriptor = verified.pilot.descriptor
    request = HoldoutRequest(
        source=HoldoutSource(
            Path(held.manifest), held.manifest_sha256, Path(held.statistical_spec)
        ),
        seed=held.selection.seed,
        per_group=held.selection.per_group,
        budget_path=Path(held.sizing),
        budget_sha256=held.sizing_sha256,
        output_limit=held.output_limit,
        output_limit_source=held.output_limit_source,
    )
    result = holdout_lookup_estimate(
        store,
        request,
        pricing=pricing,
        screening=screening,
        high_end=high_end,
        watchdog_seconds=watchdog_seconds,
    )
    readiness = cap_gated_readiness(
        descriptor.assumptions.model, verified.price, descriptor.assumptions
    )
    pilot = pilot_estimate(
        priced_slots(verified.budget.slots),
        verified.budget.bytes,
        descriptor,
        verified.cap,
        readiness,
        (verified.sha256, wrapped.sha256, descriptor_digest(descriptor)),
    )
    source = EstimateSource(
        kind="registration", sha256=wrapped.sha256, registration_digest=wrapped.registration_digest
    )
    workload = msgspec.structs.replace(result.workload, source=source)
    return msgspec.structs.replace(result, workload=workload, pilot=pilot)
