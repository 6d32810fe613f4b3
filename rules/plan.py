"""`doit plan`, `doit dry_run` and `doit estimate`: the plan, its workload and its price.

None of them reads a credential or opens a network connection. `doit dry_run` ends with
the command that runs the plan (`next_command`): the same plan options, so the same
digest, and for a real plan ``--real --confirm-plan DIGEST`` and an ``--out``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Unpack

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import (
    MAX_PROBE_LIMIT,
    MAX_REPEATS,
    OUT,
    STORE,
    FloatOption,
    IntOption,
    Param,
    Selection,
    SelectionOptions,
    TaskSpec,
    param,
)
from rules.traces import SEEDS, SUITE

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.holdout import HoldoutSource
    from continuity.plan.estimate import DryRun
    from continuity.plan.lookup_slots import LookupWorkload
    from continuity.plan.plan import Plan
    from continuity.plan.pricing import Catalog
    from continuity.plan.workload import Workload

ARMS = param("arms", str, "all", "arm ids (comma-separated) or all")
REPEATS = param(
    "repeats",
    IntOption("--repeats", 1, MAX_REPEATS, code="plan_invalid"),
    1,
    f"repeats per trace and arm (1 to {MAX_REPEATS})",
)
PROBE_LIMIT = param(
    "probe_limit",
    IntOption("--probe-limit", 1, MAX_PROBE_LIMIT, code="plan_invalid"),
    0,
    "only the first N probes of each trace (N >= 1; default: every probe)",
)
PRICING = param(
    "pricing",
    str,
    "",
    "pricing catalog; it overrides genai-prices for the models it lists (default "
    "fixtures/pricing/catalog.json; a real plan binds its digest)",
)
# The fields a plan digest binds (with SUITE, SEEDS, ARMS, REPEATS and PROBE_LIMIT).
PLAN_PARAMS: list[Param] = [
    SUITE,
    SEEDS,
    ARMS,
    REPEATS,
    PROBE_LIMIT,
    param("reader", str, "", "reader provider:model (default openai-codex:gpt-6-luna)"),
    param("effort", str, "low", "reader reasoning effort"),
    param("alternate", str, "", "alternate binding for scripted history (never called)"),
    param("judge", str, "", "judge provider:model grading every answer (default: none)"),
    param("judge_effort", str, "low", "judge reasoning effort"),
    param(
        "provider",
        str,
        "scripted",
        "scripted | openai-chat | openai-responses | anthropic (real endpoints)",
    ),
    param("base_url", str, "", "endpoint base URL (default: the provider's public API)"),
    param("credentials", str, "", "credentials file (only a fingerprint of its path is planned)"),
    param("probe_mode", str, "recall-only", "recall-only | lookup-allowed-v1 (offline only)"),
    param("policy", str, "", "lookup: a sizing policy file (default: the frozen one in fixtures/)"),
    param("policy_sha256", str, "", "lookup: the sha256 of --policy's bytes (required with it)"),
    param("lookup_reader", str, "", "lookup: scripted reader, default (Sol) | alternate (Luna)"),
    PRICING,
    param(
        "extraction_model",
        str,
        "",
        "ledger arm: the extractor provider:model (default: the reader; never an automatic "
        "cheaper model)",
    ),
    param(
        "require_request_cap",
        bool,
        False,
        "ledger arm: skip, before dispatch, any extractor that cannot enforce its output cap",
    ),
    # --suite holdout: the frozen external source and its preregistered selection.
    *SOURCE_PARAMS,
    *SELECTION_PARAMS,
]
COST_LIMIT = param(
    "cost_limit",
    FloatOption("--cost-limit", 0.0, inclusive=False, code="cost_limit_invalid"),
    0.0,
    "refuse to confirm a plan whose upper bound exceeds this many USD (finite, > 0)",
)


class PlanOptions(SelectionOptions, total=False):
    """The plan parameters (`PLAN_PARAMS`, read by `plan_from_options`), and the store
    and output directory of the tasks that take them."""

    arms: str
    repeats: int
    probe_limit: int
    reader: str
    effort: str
    alternate: str
    judge: str
    judge_effort: str
    provider: str
    base_url: str
    credentials: str
    probe_mode: str
    policy: str
    policy_sha256: str
    lookup_reader: str
    pricing: str
    extraction_model: str
    require_request_cap: bool
    manifest: str
    manifest_sha256: str
    statistical_spec: str
    selection_seed: int
    per_group: int


class PricedOptions(PlanOptions, total=False):
    """`doit dry_run` and `doit estimate`: a plan, its pricing and a cost limit."""

    cost_limit: float


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


def _workload(options: PricedOptions) -> tuple[DryRun, Catalog, Workload]:
    from pathlib import Path

    from continuity.lookup.policy import load_policy
    from continuity.plan.estimate import dry_run
    from continuity.plan.plan import LookupPlan, holdout_for_options, plan_from_options
    from continuity.plan.pricing import load_catalog, price_source
    from continuity.plan.workload import load_plan_traces, lookup_sizing, workload

    holdout = holdout_for_options(options)
    plan = plan_from_options(options, holdout)
    pricing = options.get("pricing")
    catalog = load_catalog(Path(pricing) if pricing else None)
    # A real plan carries its price source; an offline one is only told it.
    prices = plan.pricing or price_source(Path(pricing) if pricing else None)
    store = Selection(options).store
    traces = load_plan_traces(plan, holdout=(store, holdout) if holdout else None)
    load = workload(plan, traces)
    sizing = None
    if isinstance(plan, LookupPlan):
        policy_path = options.get("policy")
        path = Path(policy_path) if policy_path else None
        policy = load_policy(path, options.get("policy_sha256") if path else None)
        sizing = lookup_sizing(plan, policy, traces)
    return dry_run(plan, load, catalog, sizing, prices=prices), catalog, load


def _plan(**options: Unpack[PlanOptions]) -> str:
    import msgspec

    from continuity.outputs import write_output
    from continuity.plan.plan import plan_digest, plan_from_options

    plan = plan_from_options(options)
    digest = plan_digest(plan)
    path = Selection(options).out / "plans" / digest[:16] / "plan.json"
    write_output(path, msgspec.json.format(msgspec.json.encode(plan)) + b"\n")
    print(msgspec.json.format(msgspec.json.encode(plan)).decode())
    return f"plan digest: {digest}\nplan in {path}"


def _dry_run(**options: Unpack[PricedOptions]) -> str:
    from continuity.plan.estimate import (
        check_cost_limit,
        check_model_limits,
        format_dry_run,
        record_dry_run,
    )

    result, catalog, _ = _workload(options)
    text, last = format_dry_run(result, catalog).rsplit("\n", 1)
    print(text)
    check_model_limits(result)
    check_cost_limit(result, options.get("cost_limit") or None)
    chosen = Selection(options)
    # A lookup plan is never confirmed (nothing is billed): its dry run is not recorded
    # as a confirmation in the store, only written for the user.
    path = record_dry_run(chosen.store, result, chosen.out, confirm=result.lookup is None)
    return f"{last}\nnext: {next_command(options, result.plan, result.digest)}\ndry run in {path}"


def next_command(options: Mapping[str, object], plan: Plan, digest: str) -> str:
    """The command that runs `plan`: ``python3 -m doit units`` with every plan option
    the user gave a non-default value (so it binds the same digest), ``--store`` and
    ``--out`` if given; a real plan adds ``--real --confirm-plan DIGEST`` and needs an
    ``--out`` outside the checkout: the user's, when it is one, else
    ``~/continuity-runs/<digest prefix>`` (any such directory works)."""
    import shlex

    words = ["python3", "-m", "doit", "units"]
    if plan.mode == "real":
        words += ["--real", "--confirm-plan", digest]
    for spec in [*PLAN_PARAMS, STORE]:
        value = options.get(spec["name"], spec["default"])
        if value == spec["default"]:
            continue
        words += (
            [f"--{spec['long']}"] if spec["type"] is bool else [f"--{spec['long']}", str(value)]
        )
    out = _next_out(str(options.get("out") or ""), plan, digest)
    if out:
        words += ["--out", out]
    return shlex.join(words)


def _next_out(given: str, plan: Plan, digest: str) -> str:
    """The ``--out`` of the next command: the user's (offline, or real and outside the
    checkout), else for a real plan a directory in the home folder; offline without one
    the default output directory (no option)."""
    import os
    from pathlib import Path

    from continuity.plan.guards import default_checkout

    if plan.mode != "real":
        return given
    if given:
        resolved = Path(given).expanduser().resolve()
        if not resolved.is_relative_to(default_checkout().resolve()):
            return given
    return os.path.expanduser(f"~/continuity-runs/{digest[:16]}")


def _estimate(**options: Unpack[EstimateOptions]) -> str | None:
    from continuity.errors import UsageError
    from continuity.plan.estimate import (
        DEFAULT_HIGH_END,
        DEFAULT_SCREENING,
        check_cost_limit,
        estimate,
        format_estimate,
    )

    if options.get("real"):  # before any option is used or any file is read
        raise UsageError(
            "the estimator never runs a real plan; use doit dry_run",
            code="estimate_real_refused",
            location="--real",
        )
    if options.get("probe_mode") == "lookup-allowed-v1":
        return _lookup_estimate(options)
    _refuse_given(options, _LOOKUP_ONLY, "applies to --probe-mode lookup-allowed-v1 only")
    result, catalog, load = _workload(options)
    profiles = estimate(
        result.plan,
        load,
        catalog,
        screening=options.get("screening_model") or DEFAULT_SCREENING,
        high_end=options.get("high_end_model") or DEFAULT_HIGH_END,
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

    _refuse_given(
        options,
        _LOOKUP_UNREAD,
        "the lookup estimate does not read it: its corpus is --suites, --trace and "
        "--probe-limit, its roles and repeats are the registration's",
    )
    source = _holdout_source(options)
    if source is not None:
        return _holdout_estimate(options, source)
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
            `continuity.runner.fixed_budget_estimate.holdout_lookup_estimate`.
    """
    from pathlib import Path

    import msgspec

    from continuity.errors import UsageError
    from continuity.plan.lookup_report import format_lookup_estimate, write_lookup_estimate
    from continuity.runner.fixed_budget_estimate import HoldoutRequest, holdout_lookup_estimate
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


def task_plan() -> TaskSpec:
    """Print the plan record the options bind and its digest (no network, no credential)."""
    return {"actions": [task_action(_plan)], "params": [*PLAN_PARAMS, OUT], "verbosity": 2}


def task_dry_run() -> TaskSpec:
    """Print a plan's workload, prices, confirmation digest and next command (no network).

    The workload, list prices and their source, the digest a real run confirms, and the
    exact command that runs the plan with the same options."""
    return {
        "actions": [task_action(_dry_run)],
        "params": [*PLAN_PARAMS, COST_LIMIT, STORE, OUT],
        "verbosity": 2,
    }


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
    --output-limit N --output-limit-source catalog_max|enforced.
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
            "screening profile model (default openai-codex:gpt-6-mini; lookup: the "
            "reader binding's other model)",
        ),
        param("high_end_model", str, "", "high-end sensitivity model (anthropic:claude-opus-5-5)"),
        param("real", bool, False, "refused: the estimator never runs a plan"),
        param("suites", str, "", "lookup: corpus suites (default original,hard,hard-distractors)"),
        param("trace", str, "", "lookup: only these trace ids (comma-separated)"),
        param("registration", str, "", "lookup: a registration.json of doit compare_register"),
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
