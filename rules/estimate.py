"""`doit estimate`: a plan's cost under labelled assumptions, each profile priced alone.

Recall-only it prices the plan's workload (`rules.plan`'s); in lookup mode the six
roles' slots, from a workload-only corpus, a verified compare registration, or a frozen
holdout source with its fixed-budget sizing; a pilot registration (`rules.pilot`) adds
its cap-gated part to the estimate of the external registration it wraps. It reads no
credential and opens no network connection; ``--real`` is refused before anything is
read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Unpack

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import OUT, STORE, IntOption, Param, Selection, TaskSpec, param
from rules.plan import COST_LIMIT, PLAN_PARAMS, PricedOptions, plan_workload

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.holdout import HoldoutSource
    from continuity.plan.lookup_slots import LookupWorkload


class EstimateOptions(PricedOptions, total=False):
    """`doit estimate`: the sensitivity profiles (and ``--real``, refused); in lookup
    mode a workload-only corpus or a compare registration and its raw sha256, or a
    holdout source with its fixed-budget sizing and the per-call output limit."""

    screening_model: str
    high_end_model: str
    real: bool
    suites: str
    trace: str
    registration: str
    sha256: str
    lookup_policy: str
    lookup_policy_sha256: str
    output_limit: int
    output_limit_source: str
    store: str


def _estimate(**options: Unpack[EstimateOptions]) -> str | None:
    from continuity.arms import probe_mode_named
    from continuity.errors import UsageError
    from continuity.plan.estimate import check_cost_limit, estimate
    from continuity.plan.estimate_format import format_estimate
    from continuity.plan.models import model_profile

    if options.get("real"):  # before any option is used or any file is read
        raise UsageError(
            "the estimator never runs a real plan; use doit dry_run",
            code="estimate_real_refused",
            location="--real",
        )
    if probe_mode_named(options.get("probe_mode")) == "lookup-allowed-v1":
        return _lookup_estimate(options)
    _refuse_given(options, _LOOKUP_ONLY, "applies to --probe-mode lookup-allowed-v1 only")
    result, catalog, load = plan_workload(options)
    profile = model_profile(options.get("models") or None)
    profiles = estimate(
        result.plan,
        load,
        catalog,
        screening=options.get("screening_model") or profile.screening,
        high_end=options.get("high_end_model") or profile.high_end,
    )
    print(format_estimate(result, profiles))
    check_cost_limit(profiles[0], options.get("cost_limit") or None)
    return None


# Estimate options of lookup mode only; with a registration, the options it fixes; the
# plan options lookup mode reads (any other given is refused, never ignored). A holdout
# source (the triple and the selection) is read in lookup mode; its external-only
# options need the triple, and its fixed-budget sizing fixes the workload.
_HOLDOUT_ONLY = frozenset(
    {"lookup_policy", "lookup_policy_sha256", "output_limit", "output_limit_source"}
)
_LOOKUP_ONLY = frozenset({"suites", "trace", "registration", "sha256"}) | _HOLDOUT_ONLY
_REGISTERED = frozenset(
    {"suites", "trace", "probe_limit", "lookup_reader", "policy", "policy_sha256"}
)
_HOLDOUT_FIXED = _REGISTERED | {"registration", "sha256"}
_LOOKUP_UNREAD = frozenset(
    spec["name"] for spec in [*PLAN_PARAMS, COST_LIMIT] if spec["name"] not in _REGISTERED
) - {"probe_mode", "pricing", *(spec["name"] for spec in [*SOURCE_PARAMS, *SELECTION_PARAMS])}


def _refuse_given(options: Mapping[str, object], names: frozenset[str], why: str) -> None:
    """Refuse the first of `names` (in option order) given a non-default value.

    Raises:
        UsageError: ``plan_invalid`` at that option.
    """
    from continuity.errors import UsageError

    for spec in _estimate_params():
        name, default = spec["name"], spec["default"]
        if name in names and options.get(name, default) != default:
            raise UsageError(why, code="plan_invalid", location=f"--{spec['long']}")


def _lookup_estimate(options: EstimateOptions) -> str:
    """Lookup cost sensitivity over a registration or a workload-only corpus; the JSON
    goes to ``<out>/estimates/``."""
    from pathlib import Path

    import msgspec

    from continuity.plan.lookup_report import (
        format_lookup_estimate,
        lookup_estimate,
        write_lookup_estimate,
    )
    from continuity.runner.lookup_run import LookupRun

    if any(options.get(k) for k in ("manifest", "manifest_sha256", "statistical_spec")):
        if options.get("trace"):  # as every plan command refuses it on a holdout
            from continuity.holdout import refuse_explicit_traces

            refuse_explicit_traces("--trace")
        if options.get("suite") == "holdout":  # the source says so already
            options = {**options, "suite": ""}
    _refuse_given(
        options,
        _LOOKUP_UNREAD,
        "the lookup estimate does not read it: its corpus is --suites, --trace and "
        "--probe-limit, its roles and repeats are the registration's",
    )
    source = _holdout_source(options)
    if source is not None:
        return _holdout_estimate(options, source)
    piloted = _pilot_estimate(options)
    if piloted is not None:  # a pilot registration: its external one, and the cap-gated part
        return piloted
    registered = _registered_holdout(options)
    if registered is not None:  # an external registration: its source, sizing and limit
        return _holdout_estimate(*registered)
    work, policy_path, policy_hash = _lookup_workload(options)
    pricing = options.get("pricing")
    (watchdog,) = (
        f.default for f in msgspec.structs.fields(LookupRun) if f.name == "watchdog_seconds"
    )
    result = lookup_estimate(
        work,
        pricing=Path(pricing) if pricing else None,
        policy_path=policy_path,
        policy_hash=policy_hash,
        screening=options.get("screening_model") or None,
        high_end=options.get("high_end_model") or None,
        watchdog_seconds=float(watchdog),
    )
    print(format_lookup_estimate(result))
    return f"estimate in {write_lookup_estimate(result, Selection(options).out)}"


def _registered_holdout(
    options: EstimateOptions,
) -> tuple[EstimateOptions, HoldoutSource] | None:
    """An external registration's (v2) source and the options it fixes (its selection,
    sizing and output limit), verified by the registration's raw sha256; None for a v1
    registration or none.

    Raises:
        UsageError: ``plan_invalid`` (an option the registration fixes).
        RoleError: ``role_registration_sha256_mismatch``, ``role_registration_invalid``.
    """
    from pathlib import Path

    from msgspec import UNSET

    from continuity.holdout import HoldoutSource
    from continuity.roles.run import read_registration

    registration, sha256 = options.get("registration"), options.get("sha256")
    if not (registration and sha256):
        return None
    found, _, _ = read_registration(Path(registration), sha256)
    held = found.workload.holdout
    if held is UNSET:
        return None
    _refuse_given(options, _REGISTERED, "the registration fixes the workload and policy")
    fixed: EstimateOptions = {
        **{k: v for k, v in options.items() if k not in ("registration", "sha256")},  # type: ignore[typeddict-item]
        "selection_seed": held.selection.seed,
        "per_group": held.selection.per_group,
        "lookup_policy": held.sizing,
        "lookup_policy_sha256": held.sizing_sha256,
        "output_limit": held.output_limit,
        "output_limit_source": held.output_limit_source,
    }
    source = HoldoutSource(Path(held.manifest), held.manifest_sha256, Path(held.statistical_spec))
    return fixed, source


def _pilot_estimate(options: EstimateOptions) -> str | None:
    """A pilot registration's estimate (`continuity.roles.pilot.estimate`), its JSON in
    ``<out>/estimates/``; None when the registration is not a pilot one (or none).

    Raises:
        UsageError: ``plan_invalid`` (an option the registration fixes).
        RoleError, SpendError: the pilot registration's codes
            (`continuity.roles.pilot.registration`).
    """
    from pathlib import Path

    import msgspec

    from continuity.plan.lookup_report import format_lookup_estimate, write_lookup_estimate
    from continuity.roles.pilot.estimate import pilot_lookup_estimate
    from continuity.roles.run import is_pilot_registration, registration_bytes
    from continuity.runner.lookup_run import LookupRun

    registration, sha256 = options.get("registration"), options.get("sha256")
    if not (registration and sha256):
        return None
    data, _ = registration_bytes(Path(registration), sha256)
    if not is_pilot_registration(data):
        return None
    _refuse_given(options, _REGISTERED, "the pilot registration fixes the workload and policy")
    (watchdog,) = (
        f.default for f in msgspec.structs.fields(LookupRun) if f.name == "watchdog_seconds"
    )
    pricing, chosen = options.get("pricing"), Selection(options)
    result = pilot_lookup_estimate(
        chosen.store,
        Path(registration),
        sha256,
        pricing=Path(pricing) if pricing else None,
        screening=options.get("screening_model") or None,
        high_end=options.get("high_end_model") or None,
        watchdog_seconds=float(watchdog),
    )
    print(format_lookup_estimate(result))
    return f"estimate in {write_lookup_estimate(result, chosen.out)}"


def _holdout_source(options: EstimateOptions) -> HoldoutSource | None:
    """The holdout source the lookup estimate's options name (None: none).

    Raises:
        HoldoutError: ``holdout_source_incomplete`` (a partial triple, or an external-only
            option without it: --selection-seed, --per-group, --lookup-policy and its
            sha256, --output-limit and its source), ``holdout_manifest_sha256_invalid``.
    """
    from continuity.holdout import source_from_options
    from continuity.plan.holdout_plan import external_options

    given = [f"--{name.replace('_', '-')}" for name in sorted(_HOLDOUT_ONLY) if options.get(name)]
    return source_from_options(
        options.get("manifest") or None,
        options.get("manifest_sha256") or None,
        options.get("statistical_spec") or None,
        external=[*external_options(options), *given],
    )


def _holdout_estimate(options: EstimateOptions, source: HoldoutSource) -> str:
    """A holdout source priced from its fixed-budget sizing; the JSON goes to
    ``<out>/estimates/``.

    Raises:
        UsageError: ``plan_invalid`` (an option the sizing fixes),
            ``lookup_fixed_budget_required`` (no ``--lookup-policy``), and the codes of
            `continuity.runner.fixed_budget.estimate.holdout_lookup_estimate`.
    """
    from pathlib import Path

    import msgspec

    from continuity.errors import UsageError
    from continuity.plan.lookup_report import format_lookup_estimate, write_lookup_estimate
    from continuity.runner.fixed_budget.estimate import HoldoutRequest, holdout_lookup_estimate
    from continuity.runner.lookup_run import LookupRun

    _refuse_given(
        options,
        _HOLDOUT_FIXED,
        "a holdout source's workload, roles and budget are its fixed-budget sizing's "
        "(--lookup-policy)",
    )
    budget = options.get("lookup_policy")
    if not budget:
        raise UsageError(
            "a holdout source is priced from its fixed-budget sizing: give --lookup-policy "
            "DIR/budget.json --lookup-policy-sha256 SHA (doit lookup_budget "
            "--fixed-budget-sha256 writes it)",
            code="lookup_fixed_budget_required",
            location="--lookup-policy",
        )
    seed, per_group = options.get("selection_seed", -1), options.get("per_group") or None
    request = HoldoutRequest(
        source=source,
        seed=None if seed == -1 else seed,
        per_group=per_group,
        budget_path=Path(budget),
        budget_sha256=options.get("lookup_policy_sha256") or "",
        output_limit=options.get("output_limit") or None,
        output_limit_source=options.get("output_limit_source") or None,
    )
    pricing = options.get("pricing")
    (watchdog,) = (
        f.default for f in msgspec.structs.fields(LookupRun) if f.name == "watchdog_seconds"
    )
    chosen = Selection(options)
    result = holdout_lookup_estimate(
        chosen.store,
        request,
        pricing=Path(pricing) if pricing else None,
        screening=options.get("screening_model") or None,
        high_end=options.get("high_end_model") or None,
        watchdog_seconds=float(watchdog),
    )
    print(format_lookup_estimate(result))
    return f"estimate in {write_lookup_estimate(result, chosen.out)}"


def _lookup_workload(options: EstimateOptions) -> tuple[LookupWorkload, Path | None, str | None]:
    """The workload, policy path and policy sha256: from a verified registration (which
    fixes them) or from the options.

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

    registration, sha256 = options.get("registration"), options.get("sha256")
    if registration or sha256:
        if not (registration and sha256):
            raise UsageError(
                "a registration needs both --registration and --sha256",
                code="option_value_missing",
                location="--sha256" if registration else "--registration",
            )
        _refuse_given(options, _REGISTERED, "the registration fixes the workload and policy")
        found, digest, raw = read_registration(Path(registration), sha256)
        source = EstimateSource(kind="registration", sha256=raw, registration_digest=digest)
        work = registered_workload(found.workload, found.roles, source)
        return (work, *registered_policy(found.r0.path, found.digests.budget))
    names = [n.strip() for n in (options.get("suites") or "").split(",") if n.strip()]
    traces = [n.strip() for n in (options.get("trace") or "").split(",") if n.strip()]
    corpus = workload(names, traces, options.get("probe_limit") or None)
    policy = options.get("policy")
    work = registered_workload(
        corpus,
        ROLES,
        EstimateSource(kind="workload-only"),
        binding=options.get("lookup_reader") or None,
    )
    return work, Path(policy) if policy else None, options.get("policy_sha256") if policy else None


def task_estimate() -> TaskSpec:
    """Estimate a plan's cost under labelled assumptions, each profile priced alone.

    Recall-only: the plan's workload at 0/50/90 % cache. --probe-mode lookup-allowed-v1:
    the six roles' slots (--suites/--trace/--probe-limit, or --registration --sha256) at
    0/2/8 lookups, none/half/full returned bytes and 0/50/90 % cache, with the main
    reader's readiness and the deadlines; --real is refused before anything is read.
    With a holdout source (--manifest, --manifest-sha256, --statistical-spec,
    --selection-seed N [--per-group K]) the slots are its fixed-budget sizing's
    (--lookup-policy DIR/budget.json --lookup-policy-sha256 SHA), and the expected and
    reservation scenarios and the proposed cap C are priced at the main reader with
    --output-limit N --output-limit-source catalog_max|enforced. A pilot registration
    (doit pilot_register) adds its cap-gated part: E, Rmax, C, C - Rmax, C / E, the
    full-upfront comparison (not the admission gate) and the cap-gated readiness.
    Lookup results: <out>/estimates/lookup-<blake3 prefix>.json.
    """
    return {
        "actions": [task_action(_estimate)],
        "params": _estimate_params(),
        "verbosity": 2,
    }


def _estimate_params() -> list[Param]:
    """`doit estimate`'s options (the plan's, the profiles', lookup mode's, ``--out``)."""
    return [
        *PLAN_PARAMS,
        COST_LIMIT,
        param(
            "screening_model",
            str,
            "",
            "screening profile model (default: the --models profile's, openai:gpt-6-luna; "
            "lookup: the reader binding's other model)",
        ),
        param(
            "high_end_model",
            str,
            "",
            "high-end sensitivity model (default: the --models profile's, "
            "anthropic:claude-opus-5-5)",
        ),
        param("real", bool, False, "refused: the estimator never runs a plan"),
        param("suites", str, "", "lookup: corpus suites (default original,hard,hard-distractors)"),
        param("trace", str, "", "lookup: only these trace ids (comma-separated)"),
        param(
            "registration",
            str,
            "",
            "lookup: a registration.json of doit compare_register, or a pilot registration "
            "of doit pilot_register",
        ),
        param("sha256", str, "", "lookup: the registration file's raw sha256"),
        param(
            "lookup_policy",
            str,
            "",
            "lookup, holdout: the budget.json of doit lookup_budget --fixed-budget-sha256",
        ),
        param(
            "lookup_policy_sha256", str, "", "lookup, holdout: the raw sha256 of --lookup-policy"
        ),
        param(
            "output_limit",
            IntOption("--output-limit", 1, 10**9, code="lookup_output_limit_invalid"),
            0,
            "lookup, holdout: the explicit per-call output limit in tokens (default: none, which "
            "blocks numerical approval)",
        ),
        param(
            "output_limit_source",
            str,
            "",
            "lookup, holdout: catalog_max (the selected model's catalog maximum output) | "
            "enforced (needs separate execution proof)",
        ),
        STORE,
        OUT,
    ]
