"""`doit plan` and `doit dry_run`: the plan options (`PLAN_PARAMS`, typed as
`continuity.plan.request.PlanRequest`) and one call each
(`continuity.commands.planning`)."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import (
    MAX_PROBE_LIMIT,
    MAX_REPEATS,
    OUT,
    OUTPUT_CAP,
    STORE,
    FloatOption,
    IntOption,
    Param,
    TaskSpec,
    param,
)
from rules.traces import SEEDS, SUITE

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
        OUTPUT_CAP,
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
        "CAP/0, arms native, restart, new_session by default; compact, switch, "
        "continuity-store and continuity-pack-cold when named (the manifest and the "
        "agent's files are bound into the plan and unit keys)",
    ),
    param(
        "no_sandbox",
        bool,
        False,
        "with --agent: run the adapter without the bubblewrap sandbox (it can then read "
        "the checkout, the output directory and this process's environment; the report "
        "says UNSANDBOXED); without it, a machine that cannot sandbox refuses the plan",
    ),
    param(
        "switch_model",
        str,
        "",
        "with --agent and the switch arm in a real plan: the provider:model the agent "
        "switches to, which answers after the switch (the plan's reader, to measure the "
        "agent's context rebuild alone; it is sent the reader's --effort); bound into "
        "the plan, priced, and keyed into the switch arm's units only",
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


def _plan(**options: Any) -> str:
    from continuity.commands.planning import show_plan
    from continuity.plan.request import PlanRequest

    return show_plan(PlanRequest.of(options))


def _dry_run(**options: Any) -> str:
    from continuity.commands.planning import dry_run_plan
    from continuity.plan.request import PricedRequest

    return dry_run_plan(PricedRequest.of(options))


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
