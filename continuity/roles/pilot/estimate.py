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
unchanged. No provider is contacted, and no credential is read unless an attestation is
offered.

With `AttestationFiles` (``--authorization FILE --authorization-sha256 S
--pilot-output ROOT --pilot-credentials FILE``) the pilot's authorization is offered to
the cap-gated readiness (`continuity.plan.attestation`): its bytes are read as ``doit
compare_pilot`` reads them and checked against the bindings that route would validate
for this registration, the new output root and the credentials file
(`continuity.roles.pilot.run.attestation_inputs`); the credentials file is read for its
account only. A valid one promotes the assumed output cap and input envelope to ready; a
refused one leaves the readiness awaiting authorization with the refusal's code. Nothing
is consumed and nothing runs: readiness is a diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from continuity.holdout import HoldoutSource
from continuity.plan.attestation import Attestation
from continuity.plan.holdout_pricing import priced_slots
from continuity.plan.lookup_estimate import LookupEstimate
from continuity.plan.lookup_slots import EstimateSource
from continuity.plan.pilot_estimate import pilot_estimate
from continuity.plan.readiness import cap_gated_readiness
from continuity.roles.pilot.registration import VerifiedPilot, read_pilot
from continuity.roles.pilot.run import attestation_inputs
from continuity.runner.fixed_budget.estimate import HoldoutRequest, holdout_lookup_estimate
from continuity.spend.descriptor import descriptor_digest
from continuity.store import Store

__all__ = ["AttestationFiles", "pilot_lookup_estimate"]


@dataclass(frozen=True)
class AttestationFiles:
    """The authorization offered to the cap-gated readiness: its file and the raw sha256
    stated for it, the new output root and the credentials file it binds."""

    authorization: Path
    sha256: str
    output: Path
    credentials: Path


def _attestation(verified: VerifiedPilot, files: AttestationFiles) -> Attestation:
    raw, expected = attestation_inputs(
        verified, files.authorization, files.output, files.credentials
    )
    return Attestation(
        raw=raw, sha256=files.sha256, expected=expected, descriptor=verified.pilot.descriptor
    )


def pilot_lookup_estimate(
    store: Store,
    path: Path,
    sha256: str,
    *,
    pricing: Path | None = None,
    screening: str | None = None,
    high_end: str | None = None,
    watchdog_seconds: float,
    attestation: AttestationFiles | None = None,
) -> LookupEstimate:
    """The estimate of the pilot registration at `path` (raw sha256 `sha256`), its frozen
    holdout read from `store`, priced with the catalog at `pricing`; `attestation`, when
    given, is offered to the cap-gated readiness (module doc).

    Raises:
        RoleError, SpendError, LookupError_, PricingError: `read_pilot`'s codes.
        RoleError, SpendError: `attestation_inputs`' (the output root, an unreadable
            authorization).
        HoldoutError, LookupError_, UsageError: `holdout_lookup_estimate`'s.
    """
    verified = read_pilot(path, sha256, pricing=pricing)
    offered = None if attestation is None else _attestation(verified, attestation)
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
        descriptor.assumptions.model, verified.price, descriptor.assumptions, offered
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
