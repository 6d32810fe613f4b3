"""``doit estimate``: a plan's cost under labelled assumptions, each profile priced alone.

Recall-only it prices the plan's workload (`continuity.commands.planning.plan_workload`);
in lookup mode the six roles' slots, from a workload-only corpus, a verified compare
registration, or a frozen holdout source with its fixed-budget sizing; a pilot
registration adds its cap-gated part to the estimate of the external registration it
wraps, and ``--authorization`` (with ``--authorization-sha256``, ``--pilot-output`` and
``--pilot-credentials``) offers that part's readiness the pilot's authorization, which
can promote it to ready (`continuity.roles.pilot.estimate`). It opens no network
connection and reads no credential, except the account of ``--pilot-credentials`` when
an authorization is offered; ``--real`` is refused before anything is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from continuity.plan.request import HoldoutRequest, PricedRequest
from continuity.requests import Request, SuiteRequest

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from continuity.holdout import HoldoutSource
    from continuity.plan.lookup_estimate import LookupEstimate
    from continuity.plan.lookup_slots import LookupWorkload
    from continuity.roles.pilot.estimate import AttestationFiles

__all__ = ["EstimateRequest", "estimate"]


class EstimateRequest(PricedRequest, frozen=True, kw_only=True):
    """``doit estimate``: the plan and its cost limit, the sensitivity profiles (and
    ``--real``, refused); in lookup mode a workload-only corpus or a compare registration
    and its raw sha256, or a holdout source with its fixed-budget sizing and the per-call
    output limit ("" and 0: not given)."""

    screening_model: str = ""
    high_end_model: str = ""
    real: bool = False
    suites: str = ""
    trace: str = ""
    registration: str = ""
    sha256: str = ""
    lookup_policy: str = ""
    lookup_policy_sha256: str = ""
    output_limit: int = 0
    output_limit_source: str = ""
    authorization: str = ""
    authorization_sha256: str = ""
    pilot_output: str = ""
    pilot_credentials: str = ""


# Estimate options of lookup mode only; with a registration, the options it fixes; the
# plan options lookup mode reads (any other given is refused, never ignored). A holdout
# source (the triple and the selection) is read in lookup mode; its external-only
# options need the triple, and its fixed-budget sizing fixes the workload.
_HOLDOUT_ONLY = frozenset(
    {"lookup_policy", "lookup_policy_sha256", "output_limit", "output_limit_source"}
)
# The pilot's authorization offered to its cap-gated readiness (a pilot registration only).
_ATTESTED = ("authorization", "authorization_sha256", "pilot_output", "pilot_credentials")
_LOOKUP_ONLY = frozenset({"suites", "trace", "registration", "sha256", *_ATTESTED}) | _HOLDOUT_ONLY
_REGISTERED = frozenset(
    {"suites", "trace", "probe_limit", "lookup_reader", "policy", "policy_sha256"}
)
_HOLDOUT_FIXED = _REGISTERED | {"registration", "sha256"}
_SOURCE = frozenset(HoldoutRequest.__struct_fields__) - frozenset(SuiteRequest.__struct_fields__)
_LOOKUP_UNREAD = (
    frozenset(PricedRequest.__struct_fields__)
    - frozenset(Request.__struct_fields__)
    - _REGISTERED
    - {"probe_mode", "pricing", *_SOURCE}
)


def estimate(request: EstimateRequest) -> str | None:
    """``doit estimate``: print the estimate; in lookup mode where its JSON is (recall-only
    prints everything and returns None).

    Raises:
        UsageError: ``estimate_real_refused`` (``--real``, before anything is read),
            ``plan_invalid`` (an option of the other mode), and the plan's and the
            estimate's codes.
    """
    from continuity.arms import probe_mode_named
    from continuity.commands.planning import plan_workload
    from continuity.errors import UsageError
    from continuity.plan.estimate import check_cost_limit
    from continuity.plan.estimate import estimate as estimate_profiles
    from continuity.plan.estimate_format import format_estimate
    from continuity.plan.models import model_profile

    if request.real:  # before any option is used or any file is read
        raise UsageError(
            "the estimator never runs a real plan; use doit dry_run",
            code="estimate_real_refused",
            location="--real",
        )
    if probe_mode_named(request.probe_mode) == "lookup-allowed-v1":
        return _lookup_estimate(request)
    _refuse_given(request, _LOOKUP_ONLY, "applies to --probe-mode lookup-allowed-v1 only")
    result, catalog, load = plan_workload(request)
    profile = model_profile(request.models or None)
    profiles = estimate_profiles(
        result.plan,
        load,
        catalog,
        screening=request.screening_model or profile.screening,
        high_end=request.high_end_model or profile.high_end,
    )
    print(format_estimate(result, profiles))
    check_cost_limit(profiles[0], request.cost_limit or None)
    return None


def _refuse_given(request: EstimateRequest, names: frozenset[str], why: str) -> None:
    """Refuse the first of `names` (in option order) given a non-default value.

    Raises:
        UsageError: ``plan_invalid`` at that option.
    """
    from continuity.errors import UsageError

    defaults = EstimateRequest()
    # The fields are in option order for every option refused here: the plan's, then
    # the estimate's own (only the store, the output and the source come earlier).
    for name in EstimateRequest.__struct_fields__:
        if name in names and getattr(request, name) != getattr(defaults, name):
            raise UsageError(why, code="plan_invalid", location=f"--{name.replace('_', '-')}")


def _watchdog_seconds() -> float:
    """The lookup run's default watchdog (`LookupRun.watchdog_seconds`)."""
    from continuity.runner.lookup_run import LookupRun

    (watchdog,) = (
        f.default for f in msgspec.structs.fields(LookupRun) if f.name == "watchdog_seconds"
    )
    return float(watchdog)


def _lookup_estimate(request: EstimateRequest) -> str:
    """Lookup cost sensitivity over a registration or a workload-only corpus; the JSON
    goes to ``<out>/estimates/``."""
    from pathlib import Path

    from continuity.commands.selection import Selection
    from continuity.plan.lookup_report import (
        format_lookup_estimate,
        lookup_estimate,
        write_lookup_estimate,
    )

    if request.manifest or request.manifest_sha256 or request.statistical_spec:
        if request.trace:  # as every plan command refuses it on a holdout
            from continuity.holdout import refuse_explicit_traces

            refuse_explicit_traces("--trace")
        if request.suite == "holdout":  # the source says so already
            request = msgspec.structs.replace(request, suite="")
    _refuse_given(
        request,
        _LOOKUP_UNREAD,
        "the lookup estimate does not read it: its corpus is --suites, --trace and "
        "--probe-limit, its roles and repeats are the registration's",
    )
    source = _holdout_source(request)
    piloted = None if source is not None else _pilot_estimate(request)
    if piloted is not None:  # a pilot registration: its external one, and the cap-gated part
        return piloted
    _refuse_given(
        request,
        frozenset(_ATTESTED),
        "an authorization attests a pilot registration (doit pilot_register) only",
    )
    if source is not None:
        return _holdout_estimate(request, source)
    registered = _registered_holdout(request)
    if registered is not None:  # an external registration: its source, sizing and limit
        return _holdout_estimate(*registered)
    work, policy_path, policy_hash = _lookup_workload(request)
    pricing = request.pricing
    result = lookup_estimate(
        work,
        pricing=Path(pricing) if pricing else None,
        policy_path=policy_path,
        policy_hash=policy_hash,
        screening=request.screening_model or None,
        high_end=request.high_end_model or None,
        watchdog_seconds=_watchdog_seconds(),
    )
    print(format_lookup_estimate(result))
    return f"estimate in {write_lookup_estimate(result, Selection(request).out)}"


def _registered_holdout(
    request: EstimateRequest,
) -> tuple[EstimateRequest, HoldoutSource] | None:
    """An external registration's (v2) source and the request it fixes (its selection,
    sizing and output limit, the registration itself no longer given), verified by the
    registration's raw sha256; None for a v1 registration or none.

    Raises:
        UsageError: ``plan_invalid`` (an option the registration fixes).
        RoleError: ``role_registration_sha256_mismatch``, ``role_registration_invalid``.
    """
    from pathlib import Path

    from msgspec import UNSET

    from continuity.holdout import HoldoutSource
    from continuity.roles.run import read_registration

    registration, sha256 = request.registration, request.sha256
    if not (registration and sha256):
        return None
    found, _, _ = read_registration(Path(registration), sha256)
    held = found.workload.holdout
    if held is UNSET:
        return None
    _refuse_given(request, _REGISTERED, "the registration fixes the workload and policy")
    fixed = msgspec.structs.replace(
        request,
        registration="",
        sha256="",
        selection_seed=held.selection.seed,
        per_group=held.selection.per_group,
        lookup_policy=held.sizing,
        lookup_policy_sha256=held.sizing_sha256,
        output_limit=held.output_limit,
        output_limit_source=held.output_limit_source,
    )
    source = HoldoutSource(Path(held.manifest), held.manifest_sha256, Path(held.statistical_spec))
    return fixed, source


def _attestation_files(request: EstimateRequest) -> AttestationFiles | None:
    """The authorization offered to the pilot's cap-gated readiness (None: none).

    Raises:
        UsageError: ``option_value_missing`` (some of the four options, not all).
    """
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.roles.pilot.estimate import AttestationFiles

    given = [getattr(request, name) for name in _ATTESTED]
    if not any(given):
        return None
    for name, value in zip(_ATTESTED, given, strict=True):
        if not value:
            raise UsageError(
                "an authorization is offered with --authorization, --authorization-sha256, "
                "--pilot-output and --pilot-credentials",
                code="option_value_missing",
                location=f"--{name.replace('_', '-')}",
            )
    return AttestationFiles(
        authorization=Path(request.authorization),
        sha256=request.authorization_sha256,
        output=Path(request.pilot_output),
        credentials=Path(request.pilot_credentials),
    )


def _pilot_estimate(request: EstimateRequest) -> str | None:
    """A pilot registration's estimate (`continuity.roles.pilot.estimate`), its JSON in
    ``<out>/estimates/``; None when the registration is not a pilot one (or none).

    Raises:
        UsageError: ``plan_invalid`` (an option the registration fixes),
            ``option_value_missing`` (an incomplete attestation).
        RoleError, SpendError: the pilot registration's codes
            (`continuity.roles.pilot.registration`) and the offered authorization's
            (`continuity.roles.pilot.run.attestation_inputs`).
    """
    from pathlib import Path

    from continuity.roles.pilot.estimate import pilot_lookup_estimate
    from continuity.roles.run import is_pilot_registration, registration_bytes

    registration, sha256 = request.registration, request.sha256
    if not (registration and sha256):
        return None
    data, _ = registration_bytes(Path(registration), sha256)
    if not is_pilot_registration(data):
        return None
    _refuse_given(request, _REGISTERED, "the pilot registration fixes the workload and policy")
    files = _attestation_files(request)
    return _priced_lookup(
        request,
        lambda store, **prices: pilot_lookup_estimate(
            store, Path(registration), sha256, attestation=files, **prices
        ),
    )


def _holdout_source(request: EstimateRequest) -> HoldoutSource | None:
    """The holdout source the lookup estimate's request names (None: none).

    Raises:
        HoldoutError: ``holdout_source_incomplete`` (a partial triple, or an external-only
            option without it: --selection-seed, --per-group, --lookup-policy and its
            sha256, --output-limit and its source), ``holdout_manifest_sha256_invalid``.
    """
    from continuity.holdout import source_from_options
    from continuity.plan.holdout_plan import external_options

    given = [
        f"--{name.replace('_', '-')}" for name in sorted(_HOLDOUT_ONLY) if getattr(request, name)
    ]
    return source_from_options(
        request.manifest or None,
        request.manifest_sha256 or None,
        request.statistical_spec or None,
        external=[*external_options(request), *given],
    )


def _holdout_estimate(request: EstimateRequest, source: HoldoutSource) -> str:
    """A holdout source priced from its fixed-budget sizing; the JSON goes to
    ``<out>/estimates/``.

    Raises:
        UsageError: ``plan_invalid`` (an option the sizing fixes),
            ``lookup_fixed_budget_required`` (no ``--lookup-policy``), and the codes of
            `continuity.runner.fixed_budget.estimate.holdout_lookup_estimate`.
    """
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.runner.fixed_budget.estimate import HoldoutRequest as PricedHoldout
    from continuity.runner.fixed_budget.estimate import holdout_lookup_estimate

    _refuse_given(
        request,
        _HOLDOUT_FIXED,
        "a holdout source's workload, roles and budget are its fixed-budget sizing's "
        "(--lookup-policy)",
    )
    budget = request.lookup_policy
    if not budget:
        raise UsageError(
            "a holdout source is priced from its fixed-budget sizing: give --lookup-policy "
            "DIR/budget.json --lookup-policy-sha256 SHA (doit lookup_budget "
            "--fixed-budget-sha256 writes it)",
            code="lookup_fixed_budget_required",
            location="--lookup-policy",
        )
    seed = request.selection_seed
    priced = PricedHoldout(
        source=source,
        seed=None if seed == -1 else seed,
        per_group=request.per_group or None,
        budget_path=Path(budget),
        budget_sha256=request.lookup_policy_sha256,
        output_limit=request.output_limit or None,
        output_limit_source=request.output_limit_source or None,
    )
    return _priced_lookup(
        request, lambda store, **prices: holdout_lookup_estimate(store, priced, **prices)
    )


def _priced_lookup(request: EstimateRequest, estimate: Callable[..., LookupEstimate]) -> str:
    """Run a pilot's or a holdout's lookup estimate (`estimate(store, pricing=...,
    screening=..., high_end=..., watchdog_seconds=...)`), print it, write it; the line
    saying where."""
    from pathlib import Path

    from continuity.commands.selection import Selection
    from continuity.plan.lookup_report import format_lookup_estimate, write_lookup_estimate

    watchdog = _watchdog_seconds()
    pricing, chosen = request.pricing, Selection(request)
    result = estimate(
        chosen.store,
        pricing=Path(pricing) if pricing else None,
        screening=request.screening_model or None,
        high_end=request.high_end_model or None,
        watchdog_seconds=watchdog,
    )
    print(format_lookup_estimate(result))
    return f"estimate in {write_lookup_estimate(result, chosen.out)}"


def _lookup_workload(request: EstimateRequest) -> tuple[LookupWorkload, Path | None, str | None]:
    """The workload, policy path and policy sha256: from a verified registration (which
    fixes them) or from the request.

    Raises:
        UsageError: ``option_value_missing`` (a registration without its sha256, or the
            reverse), ``plan_invalid`` (an option the registration fixes).
        RoleError: ``role_registration_sha256_mismatch``, ``role_registration_invalid``.
    """
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.plan.lookup_report import registered_policy, registered_workload
    from continuity.plan.lookup_slots import EstimateSource
    from continuity.roles.register import workload
    from continuity.roles.run import read_registration
    from continuity.roles.table import ROLES

    registration, sha256 = request.registration, request.sha256
    if registration or sha256:
        if not (registration and sha256):
            raise UsageError(
                "a registration needs both --registration and --sha256",
                code="option_value_missing",
                location="--sha256" if registration else "--registration",
            )
        _refuse_given(request, _REGISTERED, "the registration fixes the workload and policy")
        found, digest, raw = read_registration(Path(registration), sha256)
        source = EstimateSource(kind="registration", sha256=raw, registration_digest=digest)
        work = registered_workload(found.workload, found.roles, source)
        return (work, *registered_policy(found.r0.path, found.digests.budget))
    names = [n.strip() for n in request.suites.split(",") if n.strip()]
    traces = [n.strip() for n in request.trace.split(",") if n.strip()]
    corpus = workload(names, traces, request.probe_limit or None)
    policy = request.policy
    work = registered_workload(
        corpus,
        ROLES,
        EstimateSource(kind="workload-only"),
        binding=request.lookup_reader or None,
    )
    return work, Path(policy) if policy else None, request.policy_sha256 if policy else None
