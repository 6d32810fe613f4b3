"""`doit plan` and `doit dry_run`: the plan, its workload and its price (`doit estimate`
is `rules/estimate.py`).

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
    from continuity.plan.estimate import DryRun
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
    param(
        "models",
        str,
        "current",
        "default-model profile: current (models genai-prices prices; the reader "
        "openai:gpt-6.1-sol, anthropic:claude-sonnet-5-5 on --provider anthropic) | seed "
        "(the specification's openai-codex models)",
    ),
    param("reader", str, "", "reader provider:model (default: the --models profile's)"),
    param("effort", str, "low", "reader reasoning effort"),
    param("alternate", str, "", "alternate binding for scripted history (never called)"),
    param(
        "judge",
        str,
        "",
        "judge provider:model grading every answer, or default (the --models profile's "
        "judge); default: none",
    ),
    param("judge_effort", str, "low", "judge reasoning effort"),
    param(
        "provider",
        str,
        "scripted",
        "scripted | openai-chat | openai-responses | anthropic (real endpoints)",
    ),
    param("base_url", str, "", "endpoint base URL (default: the provider's public API)"),
    param(
        "credentials",
        str,
        "",
        'credentials file {"api_key": "..."} (not in the digest; a loopback endpoint needs none)',
    ),
    param(
        "context_window",
        IntOption("--context-window", 1, 100_000_000, code="plan_invalid"),
        0,
        "the model's context window in tokens: every planned call (input plus the output "
        "cap) must fit it (default: what the server reports, else the price data)",
    ),
    param(
        "max_output_tokens",
        IntOption("--max-output-tokens", 1, 1_000_000, code="plan_invalid"),
        0,
        "the output cap every real request sends (default 4096)",
    ),
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
    param(
        "agent",
        str,
        "",
        "an outside agent's adapter manifest (agent.toml): plan and run its units over "
        "CAP/0, arms native, restart, new_session (the manifest and the agent's files "
        "are bound into the plan and unit keys)",
    ),
    param(
        "no_sandbox",
        bool,
        False,
        "with --agent: run the adapter without the bubblewrap sandbox (it can then read "
        "the checkout, the output directory and this process's environment; the report "
        "says UNSANDBOXED); without it, a machine that cannot sandbox refuses the plan",
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
    context_window: int
    max_output_tokens: int
    models: str
    probe_mode: str
    policy: str
    policy_sha256: str
    lookup_reader: str
    pricing: str
    extraction_model: str
    require_request_cap: bool
    agent: str
    no_sandbox: bool
    manifest: str
    manifest_sha256: str
    statistical_spec: str
    selection_seed: int
    per_group: int


class PricedOptions(PlanOptions, total=False):
    """`doit dry_run` and `doit estimate`: a plan, its pricing and a cost limit."""

    cost_limit: float


class UnitsOptions(PlanOptions, total=False):
    """`doit units`: the plan, what of it to run, and (real mode) how."""

    real: bool
    confirm_plan: str
    repeat: str
    concurrency: int
    max_input_tokens: int
    cost_cap: str
    raise_cap: bool
    explain_cache: bool
    request_timeout: float
    trace: str
    jobs: int
    run: str
    lookup_role: str
    registration_digest: str
    capture_upkeep_output: str
    aggregate_only: bool


def plan_workload(options: PricedOptions) -> tuple[DryRun, Catalog, Workload]:
    from pathlib import Path

    from continuity.lookup.sizing import load_sizing
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
        policy = load_sizing(path, options.get("policy_sha256") if path else None)
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
    from continuity.plan.estimate import check_cost_limit, check_model_limits, record_dry_run
    from continuity.plan.estimate_format import format_dry_run

    result, catalog, _ = plan_workload(options)
    text, last = format_dry_run(result, catalog).rsplit("\n", 1)
    print(text)
    check_model_limits(result)
    check_cost_limit(result, options.get("cost_limit") or None)
    chosen = Selection(options)
    # A lookup plan is never confirmed (nothing is billed): its dry run is not recorded
    # as a confirmation in the store, only written for the user.
    path = record_dry_run(chosen.store, result, chosen.out, confirm=result.lookup is None)
    needs = _credentials_note(options, result.plan)
    return (
        f"{last}\n{needs}next: {next_command(options, result.plan, result.digest)}\n"
        f"dry run in {path}"
    )


def _credentials_note(options: Mapping[str, object], plan: Plan) -> str:
    """A line before ``next:`` when the run will need a credentials file the dry run was
    not given (a hosted endpoint; a server on this machine needs none)."""
    from continuity.providers.endpoint import is_loopback

    if plan.mode != "real" or options.get("credentials") or is_loopback(plan.endpoint.base_url):
        return ""
    return (
        f"credentials: {plan.endpoint.base_url} needs a key; add --credentials FILE "
        '(JSON {"api_key": "..."}) to the command below (it is not in the digest)\n'
    )


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


def task_plan() -> TaskSpec:
    """Print the plan record the options bind and its digest (no network, no credential)."""
    return {
        "actions": [task_action(_plan)],
        "params": [*PLAN_PARAMS, STORE, OUT],
        "verbosity": 2,
    }


def task_dry_run() -> TaskSpec:
    """Print a plan's workload, prices, confirmation digest and next command (no network).

    The workload, list prices and their source, the digest a real run confirms, and the
    exact command that runs the plan with the same options."""
    return {
        "actions": [task_action(_dry_run)],
        "params": [*PLAN_PARAMS, COST_LIMIT, STORE, OUT],
        "verbosity": 2,
    }
