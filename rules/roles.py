"""`doit compare_register`: register two checkouts (R0, Rpack) for the six roles."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict, Unpack

from continuity.graph import task_action
from rules.holdout import SELECTION_PARAMS, SOURCE_PARAMS
from rules.params import MAX_PROBE_LIMIT, STORE, IntOption, TaskSpec, param
from rules.plan import PRICING

if TYPE_CHECKING:
    from continuity.roles.register_holdout import HoldoutWorkload


class RegisterOptions(TypedDict, total=False):
    """`doit compare_register`: the two checkouts, their SHAs, the output, the workload,
    and for an external registration the holdout source, its selection, its fixed-budget
    sizing, the per-call output limit and the estimate's cap."""

    r0: str
    r0_revision: str
    rpack: str
    rpack_revision: str
    output: str
    suites: str
    trace: str
    probe_limit: int
    store: str
    manifest: str
    manifest_sha256: str
    statistical_spec: str
    selection_seed: int
    per_group: int
    lookup_policy: str
    lookup_policy_sha256: str
    output_limit: int
    output_limit_source: str
    catalog_cap_usd: str
    pricing: str


_EXTERNAL = ("lookup_policy", "lookup_policy_sha256", "output_limit_source", "catalog_cap_usd")


def _holdout(options: RegisterOptions) -> HoldoutWorkload | None:
    """The holdout part of an external registration (None without a source).

    Raises:
        HoldoutError: ``holdout_source_incomplete`` (an external-only option without the
            triple), and the codes of `continuity.roles.register_holdout.holdout_workload`.
    """
    from pathlib import Path

    from continuity.errors import UsageError
    from continuity.holdout import source_from_options
    from continuity.plan.holdout_plan import external_options
    from continuity.roles.register_holdout import holdout_workload
    from continuity.store import Store

    given = [f"--{n.replace('_', '-')}" for n in _EXTERNAL if options.get(n)]
    if options.get("output_limit"):
        given.append("--output-limit")
    source = source_from_options(
        options.get("manifest") or None,
        options.get("manifest_sha256") or None,
        options.get("statistical_spec") or None,
        external=[*external_options(options), *given],
    )
    if source is None:
        return None
    if not options.get("lookup_policy"):
        raise UsageError(
            "an external registration binds the source's fixed-budget sizing: give "
            "--lookup-policy DIR/budget.json --lookup-policy-sha256 SHA",
            code="lookup_fixed_budget_required",
            location="--lookup-policy",
        )
    return holdout_workload(
        Store(options.get("store") or None),
        {
            k: options.get(k)
            for k in (
                "manifest",
                "manifest_sha256",
                "statistical_spec",
                "selection_seed",
                "per_group",
            )
        },
        (Path(options["lookup_policy"]), options.get("lookup_policy_sha256") or ""),
        (options.get("output_limit") or None, options.get("output_limit_source") or None),
        options.get("catalog_cap_usd"),
        pricing=Path(options["pricing"]) if options.get("pricing") else None,
    )


def _require(task: str, options: Mapping[str, object], names: tuple[str, ...]) -> None:
    """Every option in `names` given (these tasks have no useful default).

    Raises:
        UsageError: ``option_value_missing`` at the first missing option.
    """
    from continuity.errors import UsageError

    for name in names:
        if not options.get(name):
            flag = f"--{name.replace('_', '-')}"
            raise UsageError(f"{task} needs {flag}", code="option_value_missing", location=flag)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _register(**options: Unpack[RegisterOptions]) -> str:
    from pathlib import Path

    from continuity.roles.register import register, workload
    from continuity.store import Store

    _require(
        "compare_register", options, ("r0", "r0_revision", "rpack", "rpack_revision", "output")
    )
    held = _holdout(options)
    work = workload(
        _names(options.get("suites") or ""),
        _names(options.get("trace") or ""),
        int(options.get("probe_limit") or 0) or None,
        held,
    )
    done = register(
        Store(options.get("store") or None),
        (Path(options["r0"]), options["r0_revision"]),
        (Path(options["rpack"]), options["rpack_revision"]),
        options["output"],
        work,
    )
    builds = ", ".join(
        f"{name} {receipt.seconds:.1f} s ({len(receipt.files)} files)"
        for name, receipt in done.registration.builds.items()
    )
    scope = "restricted workload" if work.restricted else "full workload"
    if held is not None:
        scope = (
            f"external registration (v2): {len(held.selection.selected)} selected families "
            f"of a frozen holdout, catalog cap {held.catalog_cap_usd} USD; {scope}"
        )
    return (
        f"compare_register: {len(done.registration.differing)} differing guidance paths; "
        f"{scope}; builds {builds}\n"
        f"sha256 {done.sha256}\n"
        f"registration_digest {done.registration_digest}\n"
        f"store key {done.key}\n"
        f"registration in {done.path}"
    )


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


class RunOptions(TypedDict, total=False):
    """`doit compare_run` and `doit compare_aggregate`: the registration, its raw sha256,
    the output directory, and the store it was registered into (where an external
    registration's frozen holdout is too)."""

    registration: str
    sha256: str
    output: str
    store: str


def _run(**options: Unpack[RunOptions]) -> str:
    from pathlib import Path

    from continuity.errors import RoleError
    from continuity.roles.run import compare_run, failed_launches
    from continuity.store import Store

    _require("compare_run", options, ("registration", "sha256", "output"))
    path, launches = compare_run(
        Path(options["registration"]),
        options["sha256"],
        options["output"],
        Store(options.get("store") or None),
    )
    failed = failed_launches(launches)
    lines = [
        f"{launch.role} {launch.suite}: exit {launch.exit_code}"
        + (f" ({launch.reason})" if launch.reason else "")
        for launch in launches.launches
    ]
    if failed:
        print("\n".join(lines), flush=True)
        raise RoleError(
            f"{len(failed)} of {len(launches.launches)} role launches failed "
            f"(first: {failed[0].role} {failed[0].suite}); the others are recorded",
            code="role_launch_failed",
            location=str(path),
        )
    return "\n".join(
        [*lines, f"registration_digest {launches.registration_digest}", f"launches in {path}"]
    )


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


def _aggregate(**options: Unpack[RunOptions]) -> str:
    from pathlib import Path

    from continuity.roles.aggregate_render import compare_aggregate
    from continuity.store import Store

    _require("compare_aggregate", options, ("registration", "sha256", "output"))
    report, path = compare_aggregate(
        Path(options["registration"]),
        options["sha256"],
        Path(options["output"]),
        Store(options.get("store") or None),
    )
    lines = [
        f"{role.role}: {role.status}"
        + "".join(
            f"; {s.suite} missing ({s.missing_reason})" for s in role.launches if s.missing_reason
        )
        for role in report.roles
    ]
    lines += [
        f"{c.a} - {c.b}: {c.paired_completed} paired of {c.planned} planned, "
        f"discordant {c.a_only}/{c.b_only}"
        for c in report.contrasts
    ]
    return "\n".join([*lines, f"comparison in {path} (and compare.md, compare.html)"])


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
