"""``doit plan`` and ``doit dry_run``: a plan's record and digest, and its workload, price,
confirmation and next command (`doit estimate` is `continuity.commands.estimation`).

Neither reads a credential or opens a network connection. `doit dry_run` ends with the
command that runs the plan (`next_command`): the same plan options, so the same digest,
and for a real plan ``--real --confirm-plan DIGEST`` and an ``--out``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from continuity.commands.selection import Selection
from continuity.plan.request import HoldoutRequest, PlanRequest, PricedRequest
from continuity.requests import SuiteRequest

if TYPE_CHECKING:
    from continuity.plan.estimate import DryRun
    from continuity.plan.plan import Plan
    from continuity.plan.pricing import Catalog
    from continuity.plan.workload import Workload

__all__ = ["dry_run_plan", "next_command", "plan_workload", "show_plan"]

# The options `next_command` repeats, in the order it writes them: the suite and seeds,
# the other plan options, a holdout's source and selection, then the store (`--out` is
# chosen separately).
_NEXT_ORDER = (
    *SuiteRequest.__struct_fields__[-2:],
    *(n for n in PlanRequest.__struct_fields__ if n not in HoldoutRequest.__struct_fields__),
    *(n for n in HoldoutRequest.__struct_fields__ if n not in SuiteRequest.__struct_fields__),
    "store",
)


def plan_workload(request: PlanRequest) -> tuple[DryRun, Catalog, Workload]:
    """The plan the request binds, its workload and its priced dry run (no record)."""
    from pathlib import Path

    from continuity.lookup.sizing import load_sizing
    from continuity.plan.estimate import dry_run
    from continuity.plan.from_request import holdout_for_request, plan_from_request
    from continuity.plan.plan import LookupPlan
    from continuity.plan.pricing import load_catalog, price_source
    from continuity.plan.workload import load_plan_traces, lookup_sizing, workload

    holdout = holdout_for_request(request)
    plan = plan_from_request(request, holdout)
    pricing = request.pricing
    catalog = load_catalog(Path(pricing) if pricing else None)
    # A real plan carries its price source; an offline one is only told it.
    prices = plan.pricing or price_source(Path(pricing) if pricing else None)
    store = Selection(request).store
    traces = load_plan_traces(plan, holdout=(store, holdout) if holdout else None)
    load = workload(plan, traces)
    sizing = None
    if isinstance(plan, LookupPlan):
        path = Path(request.policy) if request.policy else None
        policy = load_sizing(path, request.policy_sha256 if path else None)
        sizing = lookup_sizing(plan, policy, traces)
    return dry_run(plan, load, catalog, sizing, prices=prices), catalog, load


def show_plan(request: PlanRequest) -> str:
    """``doit plan``: print the plan record, write it under ``<out>/plans/``; the digest."""
    from continuity.outputs import write_output
    from continuity.plan.from_request import plan_from_request
    from continuity.plan.plan import plan_digest

    plan = plan_from_request(request)
    digest = plan_digest(plan)
    path = Selection(request).out / "plans" / digest[:16] / "plan.json"
    write_output(path, msgspec.json.format(msgspec.json.encode(plan)) + b"\n")
    print(msgspec.json.format(msgspec.json.encode(plan)).decode())
    return f"plan digest: {digest}\nplan in {path}"


def dry_run_plan(request: PricedRequest) -> str:
    """``doit dry_run``: print the workload and prices, check the limits, record the
    dry run (a real plan's confirmation), and end with the next command."""
    from continuity.plan.estimate import check_cost_limit, check_model_limits, record_dry_run
    from continuity.plan.estimate_format import format_dry_run

    result, catalog, _ = plan_workload(request)
    text, last = format_dry_run(result, catalog).rsplit("\n", 1)
    print(text)
    check_model_limits(result)
    check_cost_limit(result, request.cost_limit or None)
    chosen = Selection(request)
    # A lookup plan is never confirmed (nothing is billed): its dry run is not recorded
    # as a confirmation in the store, only written for the user.
    path = record_dry_run(chosen.store, result, chosen.out, confirm=result.lookup is None)
    needs = _credentials_note(request, result.plan)
    return (
        f"{last}\n{needs}next: {next_command(request, result.plan, result.digest)}\n"
        f"dry run in {path}"
    )


def _credentials_note(request: PlanRequest, plan: Plan) -> str:
    """A line before ``next:`` when the run will need a credentials file the dry run was
    not given (a hosted endpoint; a server on this machine needs none)."""
    from continuity.providers.endpoint import is_loopback

    if plan.mode != "real" or request.credentials or is_loopback(plan.endpoint.base_url):
        return ""
    return (
        f"credentials: {plan.endpoint.base_url} needs a key; add --credentials FILE "
        '(JSON {"api_key": "..."}) to the command below (it is not in the digest)\n'
    )


def next_command(request: PlanRequest, plan: Plan, digest: str) -> str:
    """The command that runs `plan`: ``python3 -m doit units`` (from an installed wheel
    ``<python> -m continuity units``: `continuity.installation.task_command`) with every plan option
    the user gave a non-default value (so it binds the same digest), ``--store`` and
    ``--out`` if given; a real plan adds ``--real --confirm-plan DIGEST`` and needs an
    ``--out`` outside the checkout: the user's, when it is one, else
    ``~/continuity-runs/<digest prefix>`` (any such directory works)."""
    import shlex

    from continuity.installation import task_command

    words = [*task_command(), "units"]
    if plan.mode == "real":
        words += ["--real", "--confirm-plan", digest]
    defaults = PlanRequest()
    for name in _NEXT_ORDER:
        value = getattr(request, name)
        if value == getattr(defaults, name):
            continue
        flag = f"--{name.replace('_', '-')}"
        words += [flag] if isinstance(value, bool) else [flag, str(value)]
    out = _next_out(request.out, plan, digest)
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
