"""`doit estimate`: its options and one call (`continuity.commands.estimation.estimate`):
a plan's cost under labelled assumptions, each profile priced alone."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, STORE, IntOption, Param, TaskSpec, param
from rules.plan import COST_LIMIT, PLAN_PARAMS


def _estimate(**options: Any) -> str | None:
    from continuity.commands.estimation import EstimateRequest, estimate

    return estimate(EstimateRequest.of(options))


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
    full-upfront comparison (not the admission gate) and the cap-gated readiness;
    --authorization FILE --authorization-sha256 S --pilot-output ROOT --pilot-credentials
    FILE offers that readiness the pilot's authorization (validated, never consumed: a
    valid one makes it ready, a refused one shows its code; only the credentials file's
    account is read). Lookup results: <out>/estimates/lookup-<blake3 prefix>.json.
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
        param(
            "authorization",
            str,
            "",
            "pilot: an authorization offered to the cap-gated readiness (validated, never "
            "consumed)",
        ),
        param("authorization_sha256", str, "", "pilot: the raw sha256 of --authorization"),
        param(
            "pilot_output",
            str,
            "",
            "pilot: the new output root the authorization binds (doit compare_pilot --output)",
        ),
        param(
            "pilot_credentials",
            str,
            "",
            "pilot: the credentials file the authorization binds (only its account is read)",
        ),
        STORE,
        OUT,
    ]
