"""A real (paid) run: guards, endpoint bindings, the invocation ledger, then the units.

Every guard in `continuity.plan.guards` runs before anything else, so a refused run
reads no credential, writes nothing and opens no connection. A run writes into its
output directory (outside the checkout): ``plan.json``, ``traces/``, ``units/`` and,
after ``doit aggregate --run-dir``, the reports. Its ledger (``.ledger/``) and model
slots (``.slots/``) are kept there too; the call cache lives in the store.

A real run waits on the model far more than it computes, so by default every
checkpoint of the selection proceeds at once (`continuity.runner.parallel`): up to
`real_jobs` runner threads, with at most ``concurrency`` calls in flight per model (the
slots). ``jobs`` overrides the thread count.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from continuity.outputs import write_output
from continuity.plan.guards import check_real_mode
from continuity.plan.plan import Plan, plan_digest
from continuity.progress import Tick
from continuity.providers.endpoint import EndpointSpec
from continuity.runner.ledger_run import LedgerRun
from continuity.runner.manifest import write_run_manifest
from continuity.runner.parallel import available_memory, real_jobs
from continuity.runner.units import RealRun, UnitRecord, build_units
from continuity.store import Store

__all__ = ["DEFAULT_MAX_OBSERVED_INPUT_TOKENS", "RealResult", "endpoint_for", "run_real"]

# limits.max_observed_input_tokens_per_invocation, unless --max-input-tokens says otherwise.
DEFAULT_MAX_OBSERVED_INPUT_TOKENS = 50_000_000


class RealResult(msgspec.Struct, frozen=True):
    """The units of the selection, where they are, how many were built, the cache
    explain log (if asked for) and the runner threads the run was allowed."""

    records: list[UnitRecord]
    folder: str
    built: int
    explain_log: str | None
    jobs: int = 1


def endpoint_for(
    plan: Plan,
    model: str,
    effort: str | None,
    credentials: str,
    *,
    concurrency: int,
    slots_dir: Path,
) -> EndpointSpec:
    """The wire binding of one plan model (``provider:model``: the model part is sent)."""
    return msgspec.convert(
        {
            "kind": plan.endpoint.kind,
            "base_url": plan.endpoint.base_url,
            "model": model.split(":", 1)[1],
            "credentials_path": credentials,
            "effort": None if effort in (None, "", "none") else effort,
            "concurrency": concurrency,
            "slots_dir": str(slots_dir),
            "catalog_ref": model,
        },
        EndpointSpec,
    )


def run_real(
    plan: Plan,
    store: Store,
    *,
    confirm: str | None,
    credentials: str | None,
    output: str | None,
    traces: str | None = None,
    only_repeats: Sequence[int] | None = None,
    jobs: int | None = None,
    concurrency: int = 4,
    max_observed_input_tokens: int = DEFAULT_MAX_OBSERVED_INPUT_TOKENS,
    explain_cache: bool = False,
    checkout: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: Tick | None = None,
    capture: str | None = None,
    pricing: str | None = None,
    upkeep_timeout: float = 900.0,
) -> RealResult:
    """Guard, then run the selected part of a confirmed plan against its endpoint.

    `jobs` runner threads (None: `real_jobs` for `concurrency` and the plan's models)
    run the units, one thread per checkpoint at a time.

    Raises:
        RealModeError: a guard refused (see `continuity.plan.guards`).
        RunIncomplete: some units did not finish (``run_stopped``/``run_incomplete``).
    """
    out, _ = check_real_mode(
        plan,
        confirm=confirm,
        credentials=credentials,
        output=output,
        store=store,
        checkout=checkout,
        environ=environ,
    )
    assert credentials is not None
    real = _real_run(
        plan,
        out,
        os.path.abspath(credentials),
        concurrency=concurrency,
        explain_cache=explain_cache,
    )
    ledger = _ledger_run(plan, real, capture=capture, pricing=pricing, checkout=checkout)
    if ledger is not None:  # how long a stage child may take before its ack is lost
        ledger = msgspec.structs.replace(ledger, timeout=upkeep_timeout)
    _write_plan(plan, out)
    if jobs is None:
        models = 2 if plan.judge else 1
        jobs = real_jobs(concurrency, models, memory=available_memory(), cpus=os.cpu_count())
    try:
        records, folder, built = build_units(
            store,
            plan.suite,
            plan.seeds,
            arms=",".join(plan.arms),
            repeats=plan.repeats,
            traces=traces,
            probe_limit=plan.probe_limit,
            run_dir=out,
            progress=progress,
            jobs=jobs,
            only_repeats=only_repeats,
            real=real,
            max_observed_input_tokens=max_observed_input_tokens,
            traces_root=out,
            ledger=ledger,
        )
    finally:
        _root_under_plan(store, plan_digest(plan), out)
        write_run_manifest(out, plan)  # run.json: the report header and doit runs read it
    return RealResult(records, str(folder), built, real.explain_log, jobs)


def _real_run(
    plan: Plan, out: Path, credentials: str, *, concurrency: int, explain_cache: bool
) -> RealRun:
    """This invocation's endpoints (the reader, and the judge when the plan has one),
    its own ledger under ``<out>/.ledger/`` and, with `explain_cache`, a fresh call-key
    explain log."""
    slots = out / ".slots"
    reader = endpoint_for(
        plan, plan.reader, plan.reader_effort, credentials, concurrency=concurrency, slots_dir=slots
    )
    judge = (
        endpoint_for(
            plan,
            plan.judge,
            plan.judge_effort,
            credentials,
            concurrency=concurrency,
            slots_dir=slots,
        )
        if plan.judge
        else None
    )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    explain_log = str(out / "cache-explain.jsonl") if explain_cache else None
    if explain_log is not None and os.path.exists(explain_log):
        os.unlink(explain_log)  # one invocation's account, not an ever-growing log
    return RealRun(
        reader=reader,
        judge=judge,
        ledger=str(out / ".ledger" / f"{stamp}-{os.getpid()}.sqlite3"),
        explain_log=explain_log,
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
    from continuity.plan.pricing import load_catalog, model_price
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


def _write_plan(plan: Plan, out: Path) -> None:
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
