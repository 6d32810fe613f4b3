"""A real (paid) run: guards, endpoint bindings, the invocation ledger, then the units.

Every guard in `continuity.plan.guards` runs before anything else, so a refused run
reads no credential, writes nothing and opens no connection. A run writes into its
output directory (outside the checkout): ``plan.json``, ``traces/``, ``units/`` and,
after ``doit aggregate --run-dir``, the reports. Its ledger (``.ledger/``) and model
slots (``.slots/``) are kept there too; the call cache lives in the store.

With a cost cap (``--cost-cap USD``) the run's account is ``.spend/cost-cap.sqlite3``
(in the shared store, when the units go to a cluster over one: `continuity.runner.
cost_account.run_accounts`, and the invocation's ledger with it):
every attempt of every real request is held there before it is sent and settled from
its usage (`continuity.providers.costcap`); ``spend.json`` has its totals after each
invocation. An invocation that resumes a capped run keeps the stored cap (another
``--cost-cap`` is ``cost_cap_mismatch`` unless ``--raise-cap`` changes it, recorded in
the account: `continuity.runner.cost_account`), and starts with every hold a killed
invocation left retained.

A real run waits on the model far more than it computes, so by default every
checkpoint of the selection proceeds at once (`continuity.runner.parallel`): up to
`real_jobs` runner threads, with at most ``concurrency`` calls in flight per model (the
slots). ``jobs`` overrides the thread count.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import msgspec

from continuity.outputs import write_output
from continuity.plan.guards import check_real_mode
from continuity.plan.plan import Plan, plan_digest
from continuity.plan.pricing import load_catalog, model_price
from continuity.progress import Tick
from continuity.providers.attempts import ATTEMPT_LOG
from continuity.providers.costcap import CapTotals
from continuity.providers.endpoint import EndpointSpec
from continuity.runner.cost_account import (
    open_cost_account,
    parse_cost_cap,
    run_accounts,
    spend_totals,
)
from continuity.runner.ledger_run import LedgerRun
from continuity.runner.manifest import write_run_manifest
from continuity.runner.parallel import available_memory, real_jobs
from continuity.runner.real_request import (
    DEFAULT_MAX_OBSERVED_INPUT_TOKENS,
    DEFAULT_REQUEST_TIMEOUT,
    RealRequest,
)
from continuity.runner.units.build import RealRun, UnitRecord, build_units
from continuity.runner.units.execution import Execution
from continuity.runner.windows import check_context_windows
from continuity.store import Store, open_backend

__all__ = [
    "DEFAULT_MAX_OBSERVED_INPUT_TOKENS",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_REQUEST_TIMEOUT",
    "RealRequest",
    "RealResult",
    "close_real_run",
    "endpoint_for",
    "open_real_run",
    "parse_cost_cap",
    "run_real",
    "write_plan",
]

# The output cap of a plan that names none (--max-output-tokens).
DEFAULT_MAX_OUTPUT_TOKENS = 4096


class RealResult(msgspec.Struct, frozen=True):
    """The units of the selection, where they are, how many were built, the cache
    explain log (if asked for) and the runner threads the run was allowed."""

    records: list[UnitRecord]
    folder: str
    built: int
    explain_log: str | None
    jobs: int = 1
    spend: CapTotals | None = None  # the cost-cap account after this invocation


def endpoint_for(
    plan: Plan,
    model: str,
    effort: str | None,
    credentials: str,
    *,
    concurrency: int,
    slots_dir: Path,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    attempt_log: Path | None = None,
) -> EndpointSpec:
    """The wire binding of one plan model (``provider:model``: the model part is sent),
    with the plan's output cap."""
    return msgspec.convert(
        {
            "kind": plan.endpoint.kind,
            "base_url": plan.endpoint.base_url,
            "model": model.split(":", 1)[1],
            "credentials_path": credentials,
            "effort": None if effort in (None, "", "none") else effort,
            "max_output_tokens": plan.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS,
            "concurrency": concurrency,
            "slots_dir": str(slots_dir),
            "timeout": request_timeout,
            "catalog_ref": model,
            "attempt_log": str(attempt_log) if attempt_log is not None else None,
        },
        EndpointSpec,
    )


def run_real(
    plan: Plan, store: Store, request: RealRequest, *, progress: Tick | None = None
) -> RealResult:
    """Guard, then run the part of a confirmed plan `request` selects against its
    endpoint.

    `request.jobs` runner threads (None: `real_jobs` for its concurrency and the plan's
    models) run the units, one thread per checkpoint at a time. `request.cost_cap` caps
    the run's spend; `request.raise_cap` may change the stored cap: see the module doc.

    Raises:
        RealModeError: a guard refused (see `continuity.plan.guards`);
            ``cost_cap_invalid`` (checked first), ``cost_cap_price_unknown``,
            ``cost_cap_mismatch``.
        RunIncomplete: some units did not finish (``run_stopped``/``run_incomplete``).
    """
    out, real, account = open_real_run(plan, store, request)
    ledger = _ledger_run(
        plan, real, capture=request.capture, pricing=request.pricing, checkout=request.checkout
    )
    if ledger is not None:  # how long a stage child may take before its ack is lost
        ledger = msgspec.structs.replace(ledger, timeout=request.upkeep_timeout)
    write_plan(plan, out)
    jobs = request.jobs
    if jobs is None:
        models = 2 if plan.judge else 1
        memory = available_memory()
        jobs = real_jobs(request.concurrency, models, memory=memory, cpus=os.cpu_count())
    try:
        records, folder, built = build_units(
            store,
            plan.suite,
            plan.seeds,
            arms=",".join(plan.arms),
            repeats=plan.repeats,
            traces=request.traces,
            probe_limit=plan.probe_limit,
            run_dir=out,
            progress=progress,
            jobs=jobs,
            only_repeats=request.only_repeats,
            execution=Execution(real=real, ledger=ledger),
            max_observed_input_tokens=request.max_observed_input_tokens,
            traces_root=out,
            cluster=request.cluster,
        )
    finally:
        spend = close_real_run(store, plan, out, account)
    return RealResult(records, str(folder), built, real.explain_log, jobs, spend)


def open_real_run(
    plan: Plan, store: Store, request: RealRequest
) -> tuple[Path, RealRun, str | None]:
    """Guard (`continuity.plan.guards.check_real_mode`), then open this invocation: its
    output directory, its endpoints and ledger path (held in the cost-cap account when
    there is one) and the account. The caller writes ``plan.json`` (`write_plan`) once
    its own checks pass.

    Raises:
        RealModeError: a guard refused; ``cost_cap_invalid`` (checked first),
            ``cost_cap_price_unknown``, ``cost_cap_mismatch`` (`continuity.runner.
            cost_account`); ``context_window_exceeded`` when a planned call
            does not fit the smallest window known (the server's included), before any
            model call.
    """
    cap = parse_cost_cap(request.cost_cap, raise_cap=request.raise_cap)
    credentials, pricing = request.credentials, request.pricing
    out, dry = check_real_mode(
        plan,
        confirm=request.confirm,
        credentials=credentials,
        output=request.output,
        store=store,
        checkout=request.checkout,
        environ=request.environ,
    )
    check_context_windows(plan, dry, load_catalog(Path(pricing) if pricing else None))
    invocation = f"{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%f')}-{os.getpid()}"
    cluster = request.cluster
    shared = (
        run_accounts(plan, out, open_backend(cluster.shared).url)
        if cluster and cluster.shared
        else ""
    )
    account = open_cost_account(
        plan, out, cap, invocation, pricing, store, raise_cap=request.raise_cap, shared=shared
    )
    real = _real_run(
        plan,
        out,
        os.path.abspath(credentials) if credentials else "",
        request.concurrency,
        request.explain_cache,
        request.request_timeout,
        shared=shared,
    )
    return out, _capped(real, account, invocation), account


def close_real_run(store: Store, plan: Plan, out: Path, account: str | None) -> CapTotals | None:
    """Root the plan's finished units under its digest, append the invocation to
    ``run.json`` (the report header and doit runs read it) and total the spend."""
    _root_under_plan(store, plan_digest(plan), out)
    write_run_manifest(out, plan)
    return spend_totals(account, out)


def _real_run(
    plan: Plan,
    out: Path,
    credentials: str,
    concurrency: int,
    explain_cache: bool,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    *,
    shared: str = "",
) -> RealRun:
    """This invocation's endpoints (the reader, the judge when the plan has one, and the
    model an outside agent's switch arm switches to when it names one),
    its own ledger under ``<out>/.ledger/`` (under the run's `shared` accounts prefix
    when it has one), the run's attempt log and, with `explain_cache`, a fresh call-key
    explain log."""
    knobs: dict[str, Any] = {
        "concurrency": concurrency,
        "slots_dir": out / ".slots",
        "request_timeout": request_timeout,
        "attempt_log": out / ATTEMPT_LOG,
    }
    reader = endpoint_for(plan, plan.reader, plan.reader_effort, credentials, **knobs)
    judge = (
        endpoint_for(plan, plan.judge, plan.judge_effort, credentials, **knobs)
        if plan.judge
        else None
    )
    switch = (
        endpoint_for(plan, plan.switch_model, plan.reader_effort, credentials, **knobs)
        if plan.switch_model
        else None
    )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    explain_log = str(out / "cache-explain.jsonl") if explain_cache else None
    if explain_log is not None and os.path.exists(explain_log):
        os.unlink(explain_log)  # one invocation's account, not an ever-growing log
    ledger = f"{stamp}-{os.getpid()}"
    return RealRun(
        reader=reader,
        judge=judge,
        ledger=f"{shared}/ledger-{ledger}.json"
        if shared
        else str(out / ".ledger" / f"{ledger}.sqlite3"),
        explain_log=explain_log,
        switch=switch,
    )


def _capped(real: RealRun, account: str | None, invocation: str) -> RealRun:
    """`real` with every endpoint holding its attempts in the cost-cap `account` (the
    ledger extractor's endpoint is derived from the reader's, so it holds there too)."""
    if account is None:
        return real
    capped = {"cost_account": account, "cost_invocation": invocation}
    judge = real.judge and msgspec.structs.replace(real.judge, **capped)
    switch = real.switch and msgspec.structs.replace(real.switch, **capped)
    return msgspec.structs.replace(
        real, reader=msgspec.structs.replace(real.reader, **capped), judge=judge, switch=switch
    )


def _ledger_run(
    plan: Plan,
    real: RealRun,
    *,
    capture: str | None,
    pricing: str | None,
    checkout: Path | None,
) -> LedgerRun | None:
    """The ledger arm's binding: its plan section checked before anything runs, the
    extractor on the plan's endpoint (the reader's, unless the plan names another
    extraction model) and that model's context window from the catalog."""
    from continuity.plan.guards import default_checkout
    from continuity.runner.ledger_run import ledger_run_for

    if plan.ledger is None:
        return ledger_run_for(plan, capture=capture, checkout=checkout or default_checkout())
    model = plan.ledger.extraction_model
    extractor = msgspec.structs.replace(
        real.reader, model=model.split(":", 1)[1], catalog_ref=model
    )
    price = model_price(load_catalog(Path(pricing) if pricing else None), model)
    return ledger_run_for(
        plan,
        capture=capture,
        checkout=checkout or default_checkout(),
        extractor=extractor,
        context_window=price.context_window if price is not None else None,
    )


def write_plan(plan: Plan, out: Path) -> None:
    """Write the confirmed plan and its digest to ``<out>/plan.json``."""
    document: dict[str, Any] = {"digest": plan_digest(plan), "plan": msgspec.to_builtins(plan)}
    write_output(out / "plan.json", msgspec.json.format(msgspec.json.encode(document)) + b"\n")


def _root_under_plan(store: Store, digest: str, out: Path) -> None:
    """Point ``refs/confirmed/<digest>`` at the confirmed dry run and every unit
    this plan has finished so far (chunks accumulate), so the plan digest roots its
    artifacts and `doit gc` keeps them."""
    name = f"confirmed/{digest}"
    previous = store.get_ref(name)
    keys = set(previous.actions if previous else ()) | {digest}
    for path in (out / "units").glob("*.json"):
        try:
            keys.add(msgspec.json.decode(path.read_bytes(), type=UnitRecord).key)
        except (OSError, msgspec.MsgspecError):
            continue  # the aggregate reports a bad unit file; the ref just skips it
    store.set_ref(name, actions=sorted(keys), meta={"output": str(out)})
