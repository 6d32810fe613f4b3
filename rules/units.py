"""`doit units`: its options (typed as `continuity.commands.units_request.UnitsRequest`),
and one call (`continuity.commands.units.run_units`)."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from continuity.runner.real_request import DEFAULT_MAX_OBSERVED_INPUT_TOKENS
from rules.params import (
    MAX_CONCURRENCY,
    MAX_JOBS,
    MAX_REPEATS,
    OUT,
    STORE,
    FloatOption,
    IntOption,
    Param,
    SeedsOption,
    TaskSpec,
    param,
)
from rules.plan import PLAN_PARAMS
from rules.traces import TRACE

RUN = param("run", str, "offline", "run name: units and reports go to <out>/runs/<run>/")


def _units(**options: Any) -> str:
    from continuity.commands.units import run_units
    from continuity.commands.units_request import UnitsRequest

    return run_units(UnitsRequest.of(options))


UNITS_PARAMS: list[Param] = [
    *PLAN_PARAMS,
    param("real", bool, False, "run against the plan's real endpoint (paid)"),
    param("confirm_plan", str, "", "real mode: the digest printed by doit dry_run"),
    param(
        "repeat",
        SeedsOption("--repeat", code="repeat_unknown", maximum=MAX_REPEATS),
        "",
        "only these repeats, e.g. 2 or 1-2 (execution only)",
    ),
    param(
        "concurrency",
        IntOption("--concurrency", 1, MAX_CONCURRENCY),
        4,
        "real mode: concurrent calls per model (the model slots)",
    ),
    param(
        "max_input_tokens",
        IntOption("--max-input-tokens", 1, 10**12),
        0,
        "real mode: the most input tokens the run's calls may report, all together "
        f"(default {DEFAULT_MAX_OBSERVED_INPUT_TOKENS:,}); past it no new call is admitted",
    ),
    param(
        "cost_cap",
        str,
        "",
        "real mode: a hard cap in USD (whole cents) on the run's list-price spend; "
        "every request is held at its maximum price before it is sent",
    ),
    param(
        "raise_cap",
        bool,
        False,
        "real mode: let --cost-cap change the cap a resumed run's account holds "
        "(recorded in the account); without it another cap is cost_cap_mismatch",
    ),
    param("explain_cache", bool, False, "real mode: print what went into every call-cache key"),
    param(
        "request_timeout",
        FloatOption("--request-timeout", 1.0, inclusive=True),
        0.0,
        "real mode: seconds to wait for the server's next bytes, the first ones "
        "included (default 1800, for a slow local prefill); a request that times "
        "out is never re-sent by the client (execution only)",
    ),
    TRACE,
    param(
        "jobs",
        IntOption("--jobs", 1, MAX_JOBS),
        0,
        "runner threads: offline, traces in parallel (default: up to 2 cores); "
        "real, checkpoints in parallel (default: one per model slot, within 2 per core)",
    ),
    RUN,
    param(
        "executor",
        str,
        "local",
        "where units run: local (this process's runner threads) or dask (each group a "
        "dask.distributed task: --scheduler's cluster, else a LocalCluster of --workers "
        "processes on 127.0.0.1); units and keys are the same either way",
    ),
    param("scheduler", str, "", "--executor dask: the scheduler's address (tcp://HOST:PORT)"),
    param(
        "workers",
        IntOption("--workers", 1, MAX_JOBS),
        0,
        "--executor dask without --scheduler: LocalCluster worker processes (default: as --jobs)",
    ),
    param(
        "shared_store",
        str,
        "",
        "--executor dask: a store every worker reaches (a directory, or "
        "s3://bucket/prefix with boto's own credentials); workers build into caches of "
        "their own and publish there, and a --real run's cost-cap account and ledger live "
        "there; default: the run's --store, on a shared filesystem",
    ),
    param(
        "lookup_role",
        str,
        "",
        "lookup mode: run one comparison role (native, pack, pack-only, soul-only, "
        "shipping, native-soul): its arm and frozen soul; writes <run>/role-receipt.json",
    ),
    param(
        "registration_digest",
        str,
        "",
        "with --lookup-role: the registration's canonical digest, bound into the receipt",
    ),
    param(
        "aggregate_only",
        bool,
        False,
        "aggregate the units already in the run and execute nothing (no unit, "
        "preparation or model call; real mode: the --out directory)",
    ),
    param(
        "capture_upkeep_output",
        str,
        "",
        "ledger arm, fictional traces only: save each extraction's raw completion, "
        "validation code and merged ledger under DIR/upkeep-output/ (an absolute "
        "directory outside the checkout; existing files are refused)",
    ),
    STORE,
    OUT,
]


def task_units() -> TaskSpec:
    """Run probe units (repeat x trace x arm): fork, cross the boundary, ask every probe."""
    return {
        "actions": [task_action(_units)],
        "params": UNITS_PARAMS,
        "verbosity": 2,
    }
