"""`doit compare_register`, `doit compare_run` and `doit compare_aggregate`: their options
(typed as the requests of `continuity.commands.role_runs`), and one call each."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import MAX_PROBE_LIMIT, STORE, IntOption, TaskSpec, param
from rules.plan import PRICING


def _register(**options: Any) -> str:
    from continuity.commands.role_runs import CompareRegisterRequest, compare_register

    return compare_register(CompareRegisterRequest.of(options))


def task_compare_register() -> TaskSpec:
    """Register R0 and Rpack: clean full SHAs, a guidance-only difference, fresh builds."""
    return {
        "actions": [task_action(_register)],
        "params": [
            param("r0", str, "", "the R0 checkout (without the pack's retrieval guidance)"),
            param("r0_revision", str, "", "R0's full 40-hex commit SHA (its HEAD)"),
            param("rpack", str, "", "the Rpack checkout (with the guidance)"),
            param("rpack_revision", str, "", "Rpack's full 40-hex commit SHA (its HEAD)"),
            param("output", str, "", "a new absolute directory outside both checkouts"),
            param("suites", str, "", "corpus suites (default original,hard,hard-distractors)"),
            param("trace", str, "", "only these trace ids (comma-separated; restricts)"),
            param(
                "probe_limit",
                IntOption("--probe-limit", 1, MAX_PROBE_LIMIT),
                0,
                "only the first N probes of each trace (default all; restricts)",
            ),
            *SOURCE_PARAMS,
            *SELECTION_PARAMS,
            param(
                "lookup_policy",
                str,
                "",
                "external: the budget.json of doit lookup_budget --fixed-budget-sha256",
            ),
            param("lookup_policy_sha256", str, "", "external: the raw sha256 of --lookup-policy"),
            param(
                "output_limit",
                IntOption("--output-limit", 1, 10**9, code="lookup_output_limit_invalid"),
                0,
                "external: the per-call output limit in tokens the estimate priced",
            ),
            param(
                "output_limit_source", str, "", "external: catalog_max | enforced (as estimated)"
            ),
            param(
                "catalog_cap_usd",
                str,
                "",
                "external: the estimate's proposed cap C, to the cent (doit estimate prints it)",
            ),
            PRICING,
            STORE,
        ],
        "verbosity": 2,
    }


def _run(**options: Any) -> str:
    from continuity.commands.role_runs import CompareRunRequest, compare_run

    return compare_run(CompareRunRequest.of(options))


# compare_run and compare_aggregate both start from a registration and its raw sha256.
REGISTRATION_PARAMS = (
    param("registration", str, "", "registration.json written by doit compare_register"),
    param("sha256", str, "", "the registration file's raw sha256 (as register printed)"),
)


def task_compare_run() -> TaskSpec:
    """Run the six registered roles, each in its own checkout's child, into a new directory."""
    return {
        "actions": [task_action(_run)],
        "params": [
            *REGISTRATION_PARAMS,
            param("output", str, "", "a new absolute directory outside both checkouts"),
            STORE,
        ],
        "verbosity": 2,
    }


def _aggregate(**options: Any) -> str:
    from continuity.commands.role_runs import CompareAggregateRequest, compare_aggregate

    return compare_aggregate(CompareAggregateRequest.of(options))


def task_compare_aggregate() -> TaskSpec:
    """Verify the role receipts and units of a compare_run directory and compare the roles."""
    return {
        "actions": [task_action(_aggregate)],
        "params": [
            *REGISTRATION_PARAMS,
            param("output", str, "", "the doit compare_run output directory"),
            STORE,
        ],
        "verbosity": 2,
    }
