"""The unit worker call: what a unit's probes need to run, and the worker process that
runs them.

The runner hands the worker one `UnitRequest` and reads one `UnitWorkerResult`, decoded
into that struct and checked against the request: one `ProbeOutcome` per requested
probe, in request order. Anything else is a coded ``child_failed``. The worker is a
child forked from the runner thread's zygote (`continuity.zygote`, target
`continuity.sampling.worker.serve_unit`): a fresh process per unit, without an interpreter
start. The request travels over the zygote's stdin, never through a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.errors import CheckpointError
from continuity.providers.endpoint import RealBinding
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.runner.lookup_run import LookupRun
from continuity.runner.units.record import RealRun
from continuity.store import Store
from continuity.zygote import ZygotePool, call_in_child

if TYPE_CHECKING:
    from continuity.harness.checkpoints import CheckpointResult
    from continuity.sampling.worker import ProbeOutcome, ProbeSpec, UnitRequest

__all__ = [
    "WORKER_TARGET",
    "decode_worker_reply",
    "real_binding_for",
    "run_worker",
    "worker_request",
]


def real_binding_for(real: RealRun | None, store: Store, repeat: int) -> RealBinding | None:
    """What a probe process (and a real mid-trace summary) needs to call the endpoint."""
    if real is None:
        return None
    return RealBinding(
        endpoint=real.reader,
        store_root=str(store.root),
        repeat=repeat,
        ledger=real.ledger,
        explain_log=real.explain_log,
    )


def worker_request(
    store: Store,
    checkpoint: CheckpointResult,
    arm: str,
    specs: list[ProbeSpec],
    *,
    dump_requests: Path | None,
    real: RealBinding | None,
    lookup: LookupRun | None,
    models: tuple[str, str] | None = None,
) -> UnitRequest:
    """The worker's request: run `specs` on fresh copies of the checkpoint's snapshot;
    `models` (reader, alternate) replace the configured pair (the ledger arm's plan)."""
    from continuity.sampling.worker import UnitRequest

    return UnitRequest(
        store_root=str(store.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=arm,
        probes=specs,
        dump_requests=str(dump_requests) if dump_requests else None,
        real=real,
        watchdog_seconds=lookup.watchdog_seconds if lookup is not None else None,
        models=models,
    )


def decode_worker_reply(request: UnitRequest, out: bytes) -> list[ProbeOutcome]:
    """The worker's outcomes, decoded from its stdout into `UnitWorkerResult`.

    Raises:
        CheckpointError: ``child_failed`` when the reply is not a `UnitWorkerResult`, or
            its outcomes are not one per requested probe, in request order.
    """
    from continuity.sampling.worker import UnitWorkerResult

    try:
        outcomes = msgspec.json.decode(out, type=UnitWorkerResult).outcomes
    except msgspec.MsgspecError as exc:
        raise CheckpointError(
            f"unit worker printed no result: {exc}", code="child_failed"
        ) from None
    asked = [spec.index for spec in request.probes]
    answered = [outcome.index for outcome in outcomes]
    if answered != asked:
        raise CheckpointError(
            f"unit worker answered probes {answered}; it was asked for {asked}",
            code="child_failed",
        )
    return outcomes


WORKER_TARGET = "continuity.sampling.worker:serve_unit"


def run_worker(
    request: UnitRequest, timeout: float, zygotes: ZygotePool | None = None
) -> list[ProbeOutcome]:
    """Run the unit worker on `request` and return its outcomes, one per probe: forked
    from this thread's zygote in `zygotes`, or (none given) from a zygote of its own.

    Raises:
        CheckpointError: ``child_failed`` when the worker dies, returns no result (or
            not one outcome per requested probe), or runs past `timeout` (it is
            killed); what the worker raised otherwise, with its code.
    """
    payload = msgspec.json.encode(request)
    if zygotes is None:
        out = call_in_child(ZYGOTE_PRELOAD, WORKER_TARGET, payload, timeout, "unit worker")
    else:
        out = zygotes.call(WORKER_TARGET, payload, timeout, "unit worker")
    return decode_worker_reply(request, out)
