"""``doit units``: probe units (repeat x trace x arm), from its request to the summary.

`run_units` is the command's one entry point; `rules/units.py` declares its options and
calls it with them typed once (`UnitsRequest`). It chooses the mode once:
``--aggregate-only`` (aggregate what the run holds), ``--agent`` (an outside agent's
units, `continuity.commands.agent_units`), ``--real`` (a confirmed plan against its
endpoint, `continuity.runner.real`), a lookup role (``--lookup-role``), or offline (the
plan's units with scripted models). Every mode builds the `Plan` first, with the same
validation as ``doit plan``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from continuity.arms import probe_mode_named
from continuity.commands.selection import Selection
from continuity.commands.units_request import (
    UnitsRequest,
    cluster_of,
    parse_repeats,
    real_request,
)
from continuity.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from continuity.plan.holdout_plan import HoldoutChoice
    from continuity.plan.plan import LookupPlan, Plan
    from continuity.roles.table import Role
    from continuity.runner.ledger_run import LedgerRun
    from continuity.runner.lookup_run import LookupRun
    from continuity.runner.units.record import UnitRecord
    from continuity.store import Store
    from continuity.traces.suites import SuiteItem

__all__ = ["run_units", "units_summary"]


def _aggregate_only(request: UnitsRequest) -> str:
    """``--aggregate-only``: check the plan as a run would (the ledger section too),
    then aggregate the units already in the run; never execute a unit, a preparation
    or a model call."""
    from pathlib import Path

    from continuity.plan.from_request import plan_from_request
    from continuity.plan.guards import default_checkout
    from continuity.plan.pricing import default_catalog_path
    from continuity.report.freshness import aggregate_stamped
    from continuity.runner.ledger_run import ledger_run_for

    plan = plan_from_request(request, trace=request.trace)
    ledger_run_for(plan, capture=None, checkout=default_checkout())
    chosen = Selection(request)
    if request.real:
        run_dir = Path(request.out).absolute() if request.out else chosen.out
    else:
        run = request.run
        if plan.agent is not None and run == "offline":  # an agent's default run
            run = f"agent-{plan.agent.adapter}"
        run_dir = chosen.out / "runs" / run
    pricing = request.pricing
    catalog = Path(pricing) if pricing else default_catalog_path()
    results, paths, read = aggregate_stamped(chosen.store, run_dir, catalog)
    return (
        f"units: --aggregate-only ran nothing; {results.units} units aggregated "
        f"({read} read); report at {paths['report']}"
    )


def run_units(request: UnitsRequest) -> str:
    """``doit units``: the mode the options choose (aggregate only, an outside agent,
    real, a lookup role, or offline), run to its end; returns the summary line."""
    if request.aggregate_only:
        return _aggregate_only(request)
    if request.agent:
        from continuity.commands.agent_units import agent_units

        if not request.real:
            _offline_only(request)
        return agent_units(request, parse_repeats(request), units_summary)
    if request.real:
        return _real_units(request)
    _offline_only(request)
    from continuity.plan.from_request import holdout_for_request, plan_from_request
    from continuity.plan.plan import LookupPlan
    from continuity.runner.manifest import utc_stamp, write_run_manifest

    started = utc_stamp()
    role = _role(request)
    if role is not None:  # the role fixes the arm (a conflicting --arms is refused)
        from continuity.roles.receipt import role_arms

        request = msgspec.structs.replace(request, arms=role_arms(role, request.arms))
    holdout = holdout_for_request(
        request, trace=request.trace
    )  # verified against the store's freeze
    plan = plan_from_request(request, holdout)  # the same validation as the plan tasks
    if role is not None and isinstance(plan, LookupPlan):
        from continuity.roles.receipt import role_plan

        plan = role_plan(plan, role)  # the role's frozen soul, never a moving default
    lookup = _lookup_run(plan, request) if isinstance(plan, LookupPlan) else None
    chosen = Selection(request)
    run = request.run
    run_name = "lookup" if lookup is not None and run == "offline" else run
    run_dir = chosen.out / "runs" / run_name
    if role is not None and isinstance(plan, LookupPlan):
        return _role_units(role, plan, chosen.store, run_dir, request, lookup, started, holdout)
    records, folder, built = _build(
        request,
        plan,
        chosen.store,
        run_dir,
        lookup,
        f"units {plan.suite}",
        _ledger(plan, request),
        _holdout_items(holdout),
    )
    write_run_manifest(run_dir, plan, started=started)  # the report header's source
    return units_summary(records, folder, built)


def _offline_only(request: UnitsRequest) -> None:
    """Refuse the real-mode options of an offline run (never dropped silently).

    Raises:
        UsageError: ``real_flag_required``.
    """

    for name, text in (
        ("cost_cap", "--cost-cap caps a paid run"),
        ("raise_cap", "--raise-cap changes a paid run's cap"),
        ("request_timeout", "--request-timeout waits on a real server"),
    ):
        if getattr(request, name):
            raise UsageError(
                f"{text}: it applies only with --real",
                code="real_flag_required",
                location=f"--{name.replace('_', '-')}",
            )
    if (request.provider or "scripted") != "scripted":
        raise UsageError(
            "a real --provider runs only with --real (after doit dry_run)",
            code="real_flag_required",
            location="--provider",
        )


def _holdout_items(holdout: HoldoutChoice | None) -> list[SuiteItem] | None:
    """The suite items of a holdout's selected traces (None for a built-in suite)."""
    from continuity.traces.suites import SuiteItem

    if holdout is None:
        return None
    return [SuiteItem(t.trace_id, t.key, t.digest, t.size, "cached") for t in holdout.traces]


def _ledger(plan: Plan, request: UnitsRequest) -> LedgerRun | None:
    """The ledger arm's run binding (offline), its plan section checked first."""
    from continuity.plan.guards import default_checkout
    from continuity.runner.ledger_run import ledger_run_for

    return ledger_run_for(
        plan, capture=request.capture_upkeep_output or None, checkout=default_checkout()
    )


def _build(
    request: UnitsRequest,
    plan: Plan,
    store: Store,
    run_dir: Path,
    lookup: LookupRun | None,
    label: str,
    ledger: LedgerRun | None = None,
    items: list[SuiteItem] | None = None,
) -> tuple[list[UnitRecord], Path, int]:
    """Build the plan's units in `store` into `run_dir` (`build_units`) with a progress
    line: what
    is measured comes from `plan` (as in a real run), what part of it runs now
    (``--trace``, ``--only-repeats``, ``--jobs``) from the options; `items`: a holdout's
    selected traces."""
    from continuity.progress import progress
    from continuity.runner.samples import DEFAULT_JOBS
    from continuity.runner.units.build import build_units
    from continuity.runner.units.execution import Execution

    with progress(label) as tick:
        return build_units(
            store,
            plan.suite,
            plan.seeds,
            arms=",".join(plan.arms),
            repeats=plan.repeats,
            traces=request.trace or None,
            probe_limit=plan.probe_limit,
            run_dir=run_dir,
            progress=tick,
            jobs=request.jobs or DEFAULT_JOBS,
            only_repeats=parse_repeats(request),
            execution=Execution(lookup=lookup, ledger=ledger, judge=plan.judge),
            items=items,
            cluster=cluster_of(request),
        )


def _role(request: UnitsRequest) -> Role | None:
    """The ``--lookup-role`` asked for (lookup mode only), its registration digest
    checked; None without one."""
    import re

    from continuity.roles.table import role_named

    name = request.lookup_role
    digest = request.registration_digest
    if not name:
        if digest:
            raise UsageError(
                "--registration-digest binds a role run; add --lookup-role",
                code="plan_invalid",
                location="--registration-digest",
            )
        return None
    role = role_named(name)
    if probe_mode_named(request.probe_mode) != "lookup-allowed-v1":
        raise UsageError(
            "--lookup-role runs a lookup role; add --probe-mode lookup-allowed-v1",
            code="plan_invalid",
            location="--lookup-role",
        )
    if digest and not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise UsageError(
            "--registration-digest must be a registration's canonical digest (64 hex)",
            code="option_invalid",
            location="--registration-digest",
        )
    return role


def _role_units(
    role: Role,
    plan: LookupPlan,
    store: Store,
    run_dir: Path,
    request: UnitsRequest,
    lookup: LookupRun | None,
    started: str,
    holdout: HoldoutChoice | None = None,
) -> str:
    """Run the role's lookup units as an ordinary lookup run would (its options already
    name the role's arm), then write its receipt whether they finished or failed (a
    failure keeps its code and is re-raised)."""
    from continuity.errors import ContinuityError
    from continuity.roles.receipt import role_receipt, write_role_receipt
    from continuity.runner.manifest import write_run_manifest

    label = f"units {plan.suite} (role {role.name})"
    outcome = "failed"  # an uncoded failure or an interrupt still leaves a receipt
    try:
        records, folder, built = _build(
            request, plan, store, run_dir, lookup, label, items=_holdout_items(holdout)
        )
        outcome = "complete"
    except ContinuityError as exc:
        outcome = exc.code
        raise
    finally:
        write_run_manifest(run_dir, plan, started=started)
        receipt = role_receipt(
            run_dir,
            role,
            plan,
            outcome=outcome,
            registration_digest=request.registration_digest or None,
        )
        path = write_role_receipt(run_dir, receipt)
    return units_summary(records, folder, built) + f"; role {role.name} receipt in {path}"


def _lookup_run(plan: LookupPlan, request: UnitsRequest) -> LookupRun:
    from pathlib import Path

    from continuity.lookup.sizing import load_sizing
    from continuity.runner.lookup_run import LookupRun

    policy = request.policy
    path = Path(policy) if policy else None
    return LookupRun(
        policy=load_sizing(path, request.policy_sha256 if path else None).policy,
        policy_sha256=plan.policy_sha256,
        reader_binding=plan.reader_binding,
        soul_sha256=plan.soul_sha256,
        soul_core_sha256=plan.soul_core_sha256,
        role=request.lookup_role or None,
    )


def units_summary(records: Sequence[UnitRecord], folder: Path | str, built: int) -> str:
    excluded = sum(1 for r in records for p in r.probes if p.status != "valid")
    return (
        f"units: {len(records)} units ({built} run, {len(records) - built} from the store), "
        f"{sum(len(r.probes) for r in records)} probe samples, {excluded} excluded; "
        f"units in {folder}"
    )


def _real_units(request: UnitsRequest) -> str:
    from continuity.errors import RealModeError
    from continuity.plan.from_request import plan_from_request
    from continuity.plan.guards import refuse_under_ci
    from continuity.progress import progress
    from continuity.runner.real import run_real
    from continuity.runner.units.store import calls_made
    from continuity.store import Store

    if probe_mode_named(request.probe_mode) != "recall-only":
        raise RealModeError(
            "lookup-allowed-v1 is offline preparation only; --real is refused before any "
            "credential or provider work",
            code="lookup_real_refused",
            location="--probe-mode",
        )
    refuse_under_ci()  # before the options are even read
    plan = plan_from_request(request, trace=request.trace)
    settings = real_request(request)
    store = Store(request.store or None)
    with progress(f"units {plan.suite} (real: {plan.endpoint.kind})") as tick:
        result = run_real(plan, store, settings, progress=tick)
    if result.explain_log:
        _print_explain(result.explain_log)
    calls = [c for r in result.records for p in r.probes if p.evidence for c in p.evidence.calls]
    # Which calls were replayed is kept beside each unit (its action entry), not in it.
    fresh = calls_made(store, result.records, (c.key for c in calls))
    spend = f"\n{result.spend.line()}" if result.spend is not None else ""
    return (
        units_summary(result.records, result.folder, result.built)
        + f"; {len(calls)} model calls ({fresh} made, {len(calls) - fresh} from the call cache"
        + (
            "; on the Dask cluster)"
            if settings.cluster is not None
            else f"; up to {result.jobs} checkpoints at a time)"
        )
        + spend
    )


def _print_explain(path: str) -> None:
    from continuity.providers.cache import explain_lines

    for line in explain_lines(path):
        print(line, flush=True)
