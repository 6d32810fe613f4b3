"""Units on a Dask cluster: ``doit units --executor dask [--scheduler URL] [--shared-store URL]``.

The run's graph stays doit's; only the units go to ``dask.distributed``. Each group of
units the local runner would give one thread (offline a trace, real a checkpoint:
`continuity.runner.parallel.checkpoint_group`) is one Dask task, run by
`run_group` in a worker process of the installed package, exactly as the local runner
runs it: `run_unit` for each unit in order, every replay and unit worker a fresh child
of a zygote, every probe a fresh process on a fresh copy of its checkpoint. Nothing of
the executor enters a plan, a key or a unit, so a unit built on a worker is the unit
built locally, byte for byte.

Where the workers keep the store:

- **No shared store** (a ``LocalCluster``, or workers sharing this machine's
  filesystem): they build into the run's store itself, as the local runner's threads
  do (the store's writes are atomic and idempotent across processes).
- **``--shared-store URL``** (a directory or ``s3://bucket/prefix``,
  `continuity.store.backends`): each worker builds into a cache of its own, fetching
  each unit's trace from the shared store first and publishing each finished unit
  after (`continuity.store.shared`: objects create-if-absent, the entry last). The
  client publishes the traces before it sends any task, and fetches every finished
  unit into its own store, from which the run's unit files are written as locally.
  Before it sends a task the client records the run's plan in the shared store (its
  units and their traces), and adds the units' reader contexts at the end: ``doit gc
  --shared-store`` keeps all of it.

Resuming is the store's: the client first works out every unit's key from the plan
(`continuity.runner.units.run.planned_unit`) and sends only the units neither its store
nor the shared store holds. A worker killed mid-unit leaves nothing visible (a unit's
entry is written last, in one step); Dask runs its task again on another worker, which
builds what is missing and reuses what was published. A lost scheduler fails the command;
running it again resumes from the store.

Without ``--scheduler`` a ``LocalCluster`` of ``--workers`` processes (default: the
``--jobs`` the local runner would use) on 127.0.0.1 runs the tasks. Errors:
``executor_unavailable`` (dask.distributed is not installed), ``scheduler_unreachable``
(no scheduler answers at ``--scheduler`` within 30 s, or the address is not one),
``cluster_task_failed`` (a task was lost: its workers kept dying, or the scheduler went
away; the units finished so far are kept), ``cluster_code_mismatch`` (a worker built a
unit under another key than the client planned: it runs other code), ``object_missing``
(a worker cannot find a unit's trace in the shared store).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgspec

from continuity.digest import digest_bytes
from continuity.errors import ContinuityError, ObjectMissing, UsageError
from continuity.progress import Tick
from continuity.providers.attempts import ATTEMPT_LOG
from continuity.providers.endpoint import EndpointSpec
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.runner.units.execution import Execution
from continuity.runner.units.plan import UnitPlan
from continuity.runner.units.record import RealRun, UnitRecord, UnitStatus
from continuity.runner.units.run import planned_unit, run_unit
from continuity.runner.units.store import context_refs
from continuity.store import SharedStore, Store, open_backend
from continuity.zygote import ZygotePool

__all__ = [
    "Cluster",
    "GroupTask",
    "client_of",
    "completed",
    "pull_unit",
    "real_on_this_machine",
    "run_group",
    "run_on_cluster",
    "task_result",
    "worker_store",
]


@dataclass(frozen=True, kw_only=True)
class Cluster:
    """Where units run: the scheduler's address ("" for a ``LocalCluster`` of
    `workers` processes) and the shared store's URL ("": the run's store path)."""

    scheduler: str = ""
    workers: int = 2
    shared: str = ""
    timeout: float = 30.0


class GroupTask(msgspec.Struct, frozen=True, kw_only=True):
    """One Dask task: a group's units, in order, and where to build them."""

    store_root: str  # the run's store ("" with a shared store)
    shared: str  # the shared store's URL ("" without one)
    plans: list[UnitPlan]
    probe_limit: int | None


def worker_store(store_root: str, shared: str) -> tuple[Store, SharedStore | None]:
    """The store a task builds into: the run's (`store_root`), or this worker's cache of
    the `shared` store (one folder per worker process and shared store)."""
    if not shared:
        return Store(store_root), None
    try:
        from distributed import get_worker

        base = Path(get_worker().local_directory)
    except (ImportError, ValueError):  # run outside a worker (tests call it directly)
        base = Path(tempfile.gettempdir()) / f"continuity-worker-{os.getpid()}"
    cache = Store(base / f"store-{digest_bytes(shared.encode())[:16]}")
    return cache, SharedStore(cache, open_backend(shared))


def _spec_here(spec: EndpointSpec, base: Path) -> EndpointSpec:
    slots, log = str(base / "slots"), str(base / ATTEMPT_LOG)
    return msgspec.structs.replace(spec, slots_dir=slots, attempt_log=log)


def real_on_this_machine(real: RealRun, base: Path) -> RealRun:
    """A real invocation with its per-machine files (the call slots, the attempt log)
    under `base`, this worker's folder, and no explain log: the client's ``--out`` is
    not on this machine. The run's ledger and cost-cap account are in the shared store
    (`continuity.runner.cost_account.run_accounts`); none of these paths is in a key."""
    return msgspec.structs.replace(
        real,
        reader=_spec_here(real.reader, base),
        judge=real.judge and _spec_here(real.judge, base),
        switch=real.switch and _spec_here(real.switch, base),
        explain_log=None,
    )


def _on_this_machine(execution: Execution, base: Path) -> Execution:
    """`execution` with `real_on_this_machine`'s paths, the ledger arm's extractor too."""
    if execution.real is None:
        return execution
    ledger = execution.ledger
    if ledger is not None and ledger.extractor is not None:
        ledger = msgspec.structs.replace(ledger, extractor=_spec_here(ledger.extractor, base))
    real = real_on_this_machine(execution.real, base)
    return dataclasses.replace(execution, real=real, ledger=ledger)


def run_group(task: GroupTask, execution: Execution) -> list[tuple[bytes, str]]:
    """A worker's task (module doc): each unit of the group built (or reused) in order;
    each as its encoded record and status (published first with a shared store)."""
    store, shared = worker_store(task.store_root, task.shared)
    if shared is not None:
        execution = _on_this_machine(execution, store.root.parent)
    done: list[tuple[bytes, str]] = []
    with ZygotePool(ZYGOTE_PRELOAD, start=1) as pool:
        for plan in task.plans:
            if shared is not None:
                if store.get_action(plan.item.key) is None and not shared.pull_action(
                    plan.item.key
                ):
                    raise ObjectMissing(
                        f"this worker finds no trace {plan.item.trace_id} in the shared store",
                        location=task.shared,
                    )
                pull_unit(shared, _key(store, plan, task.probe_limit, execution))
            record, status = run_unit(
                store,
                plan.trace,
                plan.item,
                plan.arm,
                repeat=plan.repeat,
                probe_limit=task.probe_limit,
                execution=execution,
                zygotes=pool,
            )
            if shared is not None and status == "built":
                for context in context_refs([record]):  # named inside the unit's blob:
                    shared.push_object(context)  # published before the unit's entry
                shared.push_action(record.key)
            done.append((msgspec.json.encode(record), status))
    return done


def pull_unit(shared: SharedStore, key: str) -> bool:
    """Fetch unit `key` and the reader contexts its samples name (False: not shared, or
    shared without all of its objects: building it again publishes the missing ones,
    and the entry already there is whole again)."""
    try:
        entry = shared.pull_action(key)
        if entry is None:
            return False
        record = msgspec.json.decode(shared.local.get_blob(entry.output.digest), type=UnitRecord)
        for context in context_refs([record]):
            shared.pull_object(context)
    except ObjectMissing:
        return False
    return True


def _key(store: Store, plan: UnitPlan, probe_limit: int | None, execution: Execution) -> str:
    return planned_unit(
        store, plan.trace, plan.item, plan.arm, plan.repeat, probe_limit, execution
    ).key


@contextlib.contextmanager
def client_of(cluster: Cluster) -> Iterator[Any]:
    """A Dask client of `cluster`'s scheduler, or of a loopback ``LocalCluster``.

    Raises:
        UsageError: ``executor_unavailable``, ``scheduler_unreachable``.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--executor dask needs dask.distributed: python3 -m pip install "
            "'dask[distributed]>=2024.12' (or the project's cluster extra)",
            code="executor_unavailable",
            location="--executor",
        ) from None
    with contextlib.ExitStack() as stack:
        if cluster.scheduler:
            try:
                client = stack.enter_context(
                    Client(cluster.scheduler, timeout=cluster.timeout, set_as_default=False)
                )
            except (OSError, ValueError, TypeError) as exc:  # unreachable; not an address
                raise UsageError(
                    f"no Dask scheduler answered at {cluster.scheduler}: {exc}",
                    code="scheduler_unreachable",
                    location="--scheduler",
                ) from None
        else:
            local = stack.enter_context(
                LocalCluster(
                    n_workers=max(1, cluster.workers),
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    # every HTTP server on an ephemeral loopback port, never 8787
                    dashboard_address="127.0.0.1:0",
                    worker_dashboard_address="127.0.0.1:0",
                )
            )
            client = stack.enter_context(Client(local, set_as_default=False))
        yield client


def _pending(
    store: Store,
    plans: Sequence[UnitPlan],
    probe_limit: int | None,
    execution: Execution,
    shared: SharedStore | None,
) -> tuple[list[str], dict[int, str]]:
    """Every plan's unit key, and the plans whose unit neither this store nor the
    shared store holds, each with its key; the shared store's are fetched into this
    store on the way."""
    keys, todo = [], {}
    for index, plan in enumerate(plans):
        key = _key(store, plan, probe_limit, execution)
        keys.append(key)
        if store.get_action(key) is None and (shared is None or not pull_unit(shared, key)):
            todo[index] = key
    return keys, todo


def run_on_cluster(
    store: Store,
    plans: Sequence[UnitPlan],
    *,
    group_of: Callable[[UnitPlan], str],
    probe_limit: int | None,
    execution: Execution,
    cluster: Cluster,
    progress: Tick | None = None,
) -> list[tuple[UnitRecord, UnitStatus]]:
    """Every planned unit, built on `cluster` (module doc), in plan order; units the
    stores already hold are reused here without a task.

    Raises:
        UsageError: ``executor_unavailable``, ``scheduler_unreachable``.
    """
    shared = SharedStore(store, open_backend(cluster.shared)) if cluster.shared else None
    keys, todo = _pending(store, plans, probe_limit, execution, shared)
    plan_ref = None
    if shared is not None:  # rooted before any task, so a gc meanwhile keeps the traces
        traces = {p.item.key for p in plans}
        plan_ref = shared.record_plan("units --executor dask", actions=sorted({*keys, *traces}))
    outcomes: list[tuple[UnitRecord, UnitStatus] | None] = [None] * len(plans)
    finished = 0

    def note(index: int, record: UnitRecord, status: UnitStatus) -> None:
        nonlocal finished
        outcomes[index] = (record, status)
        finished += 1
        if progress is not None:
            plan = plans[index]
            where = f"r{plan.repeat} {plan.item.trace_id} {plan.arm.id}"
            progress(finished, len(plans), where, status)

    for index in sorted(set(range(len(plans))) - todo.keys()):  # held: reused, no task
        record, status = run_unit(store, plans[index].trace, plans[index].item,
                                  plans[index].arm, repeat=plans[index].repeat,
                                  probe_limit=probe_limit, execution=execution)  # fmt: skip
        note(index, record, status)
    groups: dict[str, list[int]] = {}
    for index in sorted(todo):
        groups.setdefault(group_of(plans[index]), []).append(index)
    if groups:
        _submit(store, plans, groups, todo, probe_limit, execution, cluster, shared, note)
    done = [outcome for outcome in outcomes if outcome is not None]
    if shared is not None and plan_ref is not None:  # and the reader contexts, at the end
        contexts = context_refs([record for record, status in done if status != "incomplete"])
        shared.swap_ref(
            plan_ref, lambda ref: ref and msgspec.structs.replace(ref, objects=contexts)
        )
    return done


def _submit(
    store: Store,
    plans: Sequence[UnitPlan],
    groups: dict[str, list[int]],
    planned: dict[int, str],
    probe_limit: int | None,
    execution: Execution,
    cluster: Cluster,
    shared: SharedStore | None,
    note: Callable[[int, UnitRecord, UnitStatus], None],
) -> None:
    """Send each group as a task and take each result as it comes, its units checked
    against their `planned` keys (module doc)."""
    if shared is not None:
        for key in {plans[i].item.key for indexes in groups.values() for i in indexes}:
            shared.push_action(key)  # the traces, each once
    with client_of(cluster) as client:
        from distributed import as_completed  # importable: client_of checked

        futures = {}
        for indexes in groups.values():
            task = GroupTask(
                store_root="" if shared is not None else str(store.root),
                shared=shared.backend.url if shared is not None else "",  # absolute
                plans=[plans[i] for i in indexes],
                probe_limit=probe_limit,
            )
            futures[client.submit(run_group, task, execution, pure=False)] = indexes
        for future in completed(as_completed(futures, loop=client.loop)):
            results = cast(list[tuple[bytes, str]], task_result(future))
            for index, (data, status) in zip(futures[future], results, strict=True):
                record = msgspec.json.decode(data, type=UnitRecord)
                if record.key != planned[index]:
                    raise UsageError(
                        f"a worker built r{record.repeat} {record.trace_id} {record.arm} as "
                        f"{record.key[:16]}, planned here as {planned[index][:16]}: the workers "
                        "run other code than this client (install the same version)",
                        code="cluster_code_mismatch",
                        location="--scheduler",
                    )
                if shared is not None and status != "incomplete":
                    pull_unit(shared, record.key)
                note(index, record, cast(UnitStatus, status))


def completed(futures: Iterator[Any]) -> Iterator[Any]:
    """The tasks as they finish; the client losing the scheduler meanwhile as
    ``cluster_task_failed`` (`_lost`)."""
    while True:
        try:
            future = next(futures)
        except StopIteration:
            return
        except Exception as exc:  # CommClosedError, TimeoutError...: open-ended
            raise _lost(exc) from None
        yield future


def _lost(exc: BaseException) -> UsageError:
    return UsageError(
        f"a group of units was lost ({type(exc).__name__}: {exc}); the units finished "
        "so far are kept: run the same command again to resume",
        code="cluster_task_failed",
        location="--scheduler",
    )


def task_result(future: Any) -> Any:
    """A task's result; a task Dask lost (its workers kept dying, the scheduler went
    away) as ``cluster_task_failed``. A typed error the task raised is raised as is.

    Raises:
        UsageError: ``cluster_task_failed``.
    """
    try:
        return future.result()
    except ContinuityError:
        raise
    except Exception as exc:  # KilledWorker, CancelledError, CommClosedError...: open-ended
        raise _lost(exc) from None
