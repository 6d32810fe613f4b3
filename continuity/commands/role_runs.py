"""``doit compare_register``, ``doit compare_run`` and ``doit compare_aggregate``: the six
roles registered on two checkouts (R0, Rpack), run, and compared.

`compare_register`, `compare_run` and `compare_aggregate` are the entry points;
`rules/roles.py` declares their options and calls them with the options typed once
(`CompareRegisterRequest`, `CompareRunRequest`, `CompareAggregateRequest`). Each first
refuses a missing required option (``option_value_missing``, in the option table's
order), then hands the work to `continuity.roles`: registration (`continuity.roles.register`,
an external registration's holdout part `continuity.roles.register_holdout`), the role
children (`continuity.roles.run`) and the comparison (`continuity.roles.aggregate_render`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from continuity.errors import UsageError
from continuity.plan.request import HoldoutRequest
from continuity.requests import Request

if TYPE_CHECKING:
    from continuity.roles.register_holdout import HoldoutWorkload

__all__ = [
    "CompareAggregateRequest",
    "CompareRegisterRequest",
    "CompareRunRequest",
    "RegisteredRequest",
    "compare_aggregate",
    "compare_register",
    "compare_run",
]

# The external-only options of compare_register besides the selection's (by field name).
_EXTERNAL = ("lookup_policy", "lookup_policy_sha256", "output_limit_source", "catalog_cap_usd")


class CompareRegisterRequest(Request, frozen=True, kw_only=True):
    """``doit compare_register``: the two checkouts and their full SHAs, the output, the
    workload (suites, traces, probe limit; "" and 0: the defaults), and for an external
    registration the holdout source, its selection (``selection_seed`` -1 and
    ``per_group`` 0: not given), its fixed-budget sizing, the per-call output limit (0:
    none given) and its source, the estimate's cap and the pricing catalog."""

    r0: str = ""
    r0_revision: str = ""
    rpack: str = ""
    rpack_revision: str = ""
    output: str = ""
    suites: str = ""
    trace: str = ""
    probe_limit: int = 0
    manifest: str = ""
    manifest_sha256: str = ""
    statistical_spec: str = ""
    selection_seed: int = -1
    per_group: int = 0
    lookup_policy: str = ""
    lookup_policy_sha256: str = ""
    output_limit: int = 0
    output_limit_source: str = ""
    catalog_cap_usd: str = ""
    pricing: str = ""


class RegisteredRequest(Request, frozen=True, kw_only=True):
    """A registration (``registration.json`` of ``doit compare_register``), its raw
    sha256 and an output directory; the store is the one it was registered into (where
    an external registration's frozen holdout is too)."""

    registration: str = ""
    sha256: str = ""
    output: str = ""


class CompareRunRequest(RegisteredRequest, frozen=True, kw_only=True):
    """``doit compare_run``: the registration, its raw sha256 and a new output
    directory for the role launches."""


class CompareAggregateRequest(RegisteredRequest, frozen=True, kw_only=True):
    """``doit compare_aggregate``: the registration, its raw sha256 and the
    ``doit compare_run`` output directory it compares."""


def _require(task: str, request: Request, names: Sequence[str]) -> None:
    """Every option in `names` given (these tasks have no useful default).

    Raises:
        UsageError: ``option_value_missing`` at the first missing option.
    """
    for name in names:
        if not getattr(request, name):
            flag = f"--{name.replace('_', '-')}"
            raise UsageError(f"{task} needs {flag}", code="option_value_missing", location=flag)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _holdout(request: CompareRegisterRequest) -> HoldoutWorkload | None:
    """The holdout part of an external registration (None without a source).

    Raises:
        HoldoutError: ``holdout_source_incomplete`` (an external-only option without the
            triple), and the codes of `continuity.roles.register_holdout.holdout_workload`.
        UsageError: ``lookup_fixed_budget_required`` (a source without
            ``--lookup-policy``).
    """
    from pathlib import Path

    from continuity.holdout import source_from_options
    from continuity.plan.holdout_plan import external_options
    from continuity.roles.register_holdout import holdout_workload
    from continuity.store import Store

    source = HoldoutRequest(
        manifest=request.manifest,
        manifest_sha256=request.manifest_sha256,
        statistical_spec=request.statistical_spec,
        selection_seed=request.selection_seed,
        per_group=request.per_group,
    )
    given = [f"--{n.replace('_', '-')}" for n in _EXTERNAL if getattr(request, n)]
    if request.output_limit:
        given.append("--output-limit")
    found = source_from_options(
        request.manifest or None,
        request.manifest_sha256 or None,
        request.statistical_spec or None,
        external=[*external_options(source), *given],
    )
    if found is None:
        return None
    if not request.lookup_policy:
        raise UsageError(
            "an external registration binds the source's fixed-budget sizing: give "
            "--lookup-policy DIR/budget.json --lookup-policy-sha256 SHA",
            code="lookup_fixed_budget_required",
            location="--lookup-policy",
        )
    return holdout_workload(
        Store(request.store or None),
        source,
        (Path(request.lookup_policy), request.lookup_policy_sha256 or ""),
        (request.output_limit or None, request.output_limit_source or None),
        request.catalog_cap_usd,
        pricing=Path(request.pricing) if request.pricing else None,
    )


def compare_register(request: CompareRegisterRequest) -> str:
    """``doit compare_register``: check and register R0 and Rpack (clean full SHAs, a
    guidance-only difference, fresh builds); the summary names the registration, its
    sha256, its canonical digest and its store key."""
    from pathlib import Path

    from continuity.roles.register import register, workload
    from continuity.store import Store

    _require(
        "compare_register", request, ("r0", "r0_revision", "rpack", "rpack_revision", "output")
    )
    held = _holdout(request)
    work = workload(
        _names(request.suites),
        _names(request.trace),
        request.probe_limit or None,
        held,
    )
    done = register(
        Store(request.store or None),
        (Path(request.r0), request.r0_revision),
        (Path(request.rpack), request.rpack_revision),
        request.output,
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


def compare_run(request: CompareRunRequest) -> str:
    """``doit compare_run``: run the six registered roles, each in its own checkout's
    child; one line per launch, the registration digest and where the launches are.

    Raises:
        RoleError: ``role_launch_failed`` (after printing every launch's line) when a
            launch failed; the others are recorded.
    """
    from pathlib import Path

    from continuity.errors import RoleError
    from continuity.roles.run import compare_run as run_roles
    from continuity.roles.run import failed_launches
    from continuity.store import Store

    _require("compare_run", request, ("registration", "sha256", "output"))
    path, launches = run_roles(
        Path(request.registration),
        request.sha256,
        request.output,
        Store(request.store or None),
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


def compare_aggregate(request: CompareAggregateRequest) -> str:
    """``doit compare_aggregate``: verify a compare_run directory's role receipts and
    units and compare the roles; one line per role and per contrast, and where the
    comparison is."""
    from pathlib import Path

    from continuity.roles.aggregate_render import compare_aggregate as compare_roles
    from continuity.store import Store

    _require("compare_aggregate", request, ("registration", "sha256", "output"))
    report, path = compare_roles(
        Path(request.registration),
        request.sha256,
        Path(request.output),
        Store(request.store or None),
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
