"""An outside agent's units on a Dask cluster: ``doit units --agent agent.toml
--executor dask`` (offline, or ``--real``).

One task is one trace's units, the group `build_agent_units` gives one thread: its
units in plan order, so the trace's first replay signature, and with it every unit, is
the same as locally. A worker runs the group with the local code path
(`continuity.runner.agent_units._build_trace`): each sample a fresh re-replay of the
trace through the adapter, in its own processes and, by default, its own sandbox.

The worker must hold the agent the client planned: the manifest at the same path, the
same files, the same allowlisted environment. Before it runs anything it works out the
agent's identity itself (`continuity.agents.identity.identity`) and refuses another
(``cluster_code_mismatch``); the client also checks every unit's key against the one it
planned. The adapters' logs come back with the task's result and go to
``<run>/agent-logs/`` as locally.

Where the workers keep the store is `continuity.runner.cluster`'s rule: the run's store
on a shared filesystem, or, with ``--shared-store``, caches of their own. Then the
client publishes each trace first (the store and pack arms build the reference
checkpoint their evidence comes from), each worker publishes each unit once it is
stored, and the client fetches them. A real run's cost-cap account and ledger are in
the shared store (`continuity.runner.cost_account.run_accounts`), so a reader call is
held there before it is sent, whichever worker sends it.

Resuming is the store's: a trace whose every unit a store holds is reused here without
a task. A reader's error on one worker (real mode) comes back as the build's error and
cancels the tasks not yet started; a task already running finishes its trace (locally,
every trace stops before its next sample), its calls still held in the run's account
and admitted by its ledger.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from continuity.agents.identity import identity
from continuity.agents.readers import OfflineReader, SampleReader
from continuity.digest import value_digest
from continuity.errors import ContinuityError, UsageError
from continuity.progress import Tick
from continuity.runner.agent_units import (
    AgentBuild,
    AgentUnitPlan,
    _Build,
    _build_trace,
    _start,
    _Tally,
    _Unit,
    real_reader,
)
from continuity.runner.cluster import (
    Cluster,
    client_of,
    completed,
    pull_unit,
    real_on_this_machine,
    task_result,
    worker_store,
)
from continuity.runner.units.record import RealRun, UnitRecord
from continuity.runner.units.store import materialise
from continuity.store import SharedStore, Store, open_backend
from continuity.traces.schema import Trace

__all__ = ["AgentOutcome", "AgentTask", "build_agent_units_on_cluster", "run_agent_group"]


class AgentTask(msgspec.Struct, frozen=True, kw_only=True):
    """One Dask task: one trace's units, and where to build them."""

    store_root: str  # the run's store ("" with a shared store)
    shared: str  # the shared store's URL ("" without one)
    plan: AgentUnitPlan
    trace_key: str
    trace: Trace
    protected: list[str]  # what the sandbox hides besides the store (the credentials)
    real: RealRun | None = None


class AgentOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What a task came to: its units (encoded records, plan order), how many it built,
    the adapters' logs by file name, and a reader's error (code, message, location)."""

    records: list[bytes]
    built: int
    logs: dict[str, bytes]
    error: tuple[str, str, str] | None = None


def run_agent_group(task: AgentTask) -> bytes:
    """A worker's task (module doc); its `AgentOutcome`, encoded.

    Raises:
        UsageError: ``cluster_code_mismatch`` (this worker's agent is another).
    """
    store, shared = worker_store(task.store_root, task.shared)
    sandboxed = task.plan.agent.sandbox != "none"
    here = identity(task.plan.manifest, sandboxed=sandboxed)
    if here != task.plan.agent:
        raise UsageError(
            f"this worker's agent {task.plan.manifest.name} is not the one the client "
            f"planned (files {here.sources[:12]} against {task.plan.agent.sources[:12]}, "
            f"environment {here.env[:12]} against {task.plan.agent.env[:12]}): install "
            "the same agent, at the same path, with the same variables, on every worker",
            code="cluster_code_mismatch",
            location=task.plan.manifest.folder or task.plan.manifest.name,
        )
    base = store.root.parent
    run_dir = base / f"agent-run-{value_digest((task.trace_key, task.plan.agent.manifest))[:16]}"
    folder, units, _, tally = _start(task.plan, [(task.trace_key, task.trace)], run_dir, None)
    if shared is not None:
        shared.pull_action(task.trace_key)
        for unit in units:
            pull_unit(shared, unit.key)
    real = (
        task.real if shared is None or task.real is None else real_on_this_machine(task.real, base)
    )
    build = _Build(
        plan=task.plan,
        run_dir=run_dir,
        folder=folder,
        readers=_readers(real, store),
        hidden=(store.root, *map(Path, task.protected)),
        tally=tally,
        stored=_publisher(shared),
    )
    done = _build_trace(units, store, build, threading.Event())
    logs = {p.name: p.read_bytes() for p in sorted((run_dir / "agent-logs").glob("*.log"))}
    error = done.error
    return msgspec.msgpack.encode(
        AgentOutcome(
            records=[
                msgspec.json.encode(done.records[u.key]) for u in units if u.key in done.records
            ],
            built=done.built,
            logs=logs,
            error=None if error is None else (error.code, error.message, error.location),
        )
    )


def _publisher(shared: SharedStore | None) -> Callable[[UnitRecord], None] | None:
    """What a worker does with each unit it stored: publish it (the entry last)."""
    if shared is None:
        return None

    def publish(record: UnitRecord) -> None:
        shared.push_action(record.key)

    return publish


def _readers(real: RealRun | None, store: Store) -> Callable[[int], SampleReader]:
    """Each sample's reader: offline the scripted one, real the plan's endpoints."""
    if real is None:
        return lambda repeat: OfflineReader()
    return lambda repeat: real_reader(real, store, repeat)


def build_agent_units_on_cluster(
    store: Store,
    plan: AgentUnitPlan,
    traces: Sequence[tuple[str, Trace]],
    run_dir: Path,
    *,
    cluster: Cluster,
    real: RealRun | None = None,
    progress: Tick | None = None,
    protected: Sequence[Path] = (),
) -> AgentBuild:
    """`build_agent_units`, each trace's units a task on `cluster` (module doc).

    Raises:
        UsageError: ``executor_unavailable``, ``scheduler_unreachable``,
            ``cluster_task_failed``, ``cluster_code_mismatch``.
    """
    folder, units, by_trace, tally = _start(plan, traces, run_dir, progress)
    shared = SharedStore(store, open_backend(cluster.shared)) if cluster.shared else None
    if shared is not None:  # rooted before any task: a gc meanwhile keeps all of it
        keys = {unit.key for unit in units} | set(by_trace)
        shared.record_plan("units --agent --executor dask", actions=sorted(keys))
    records: dict[str, UnitRecord] = {}
    outcome = _Outcome()
    held = _Build(plan=plan, run_dir=run_dir, folder=folder,
                  readers=lambda repeat: OfflineReader(), hidden=(), tally=tally)  # fmt: skip
    todo = {}
    for key, group in by_trace.items():
        if all(_held(store, shared, unit.key) for unit in group):  # reused, no task
            records.update(_build_trace(group, store, held, threading.Event()).records)
        else:
            todo[key] = group
    if todo:
        _submit(store, plan, traces, todo, cluster, shared, real, protected, tally, outcome)
    for record in outcome.records:
        records[record.key] = materialise(store, folder, record)
    for name, data in outcome.logs.items():
        (run_dir / "agent-logs" / name).write_bytes(data)
    return AgentBuild(
        records=[records[u.key] for u in units if u.key in records],
        folder=folder,
        built=outcome.built,
        planned=len(units),
        error=outcome.error,
    )


class _Outcome:
    """What the tasks came to, gathered on the client."""

    def __init__(self) -> None:
        self.records: list[UnitRecord] = []
        self.logs: dict[str, bytes] = {}
        self.built = 0
        self.error: ContinuityError | None = None


def _held(store: Store, shared: SharedStore | None, key: str) -> bool:
    return store.load_output(key) is not None or (shared is not None and pull_unit(shared, key))


def _submit(
    store: Store,
    plan: AgentUnitPlan,
    traces: Sequence[tuple[str, Trace]],
    todo: dict[str, list[_Unit]],
    cluster: Cluster,
    shared: SharedStore | None,
    real: RealRun | None,
    protected: Sequence[Path],
    tally: _Tally,
    outcome: _Outcome,
) -> None:
    """Send each trace of `todo` as a task; take each result as it comes, its units
    checked against the keys planned here and fetched from the shared store."""
    by_key = dict(traces)
    if shared is not None:
        for key in todo:
            shared.push_action(key)  # the trace, before any task
    with client_of(cluster) as client:
        from distributed import as_completed  # importable: client_of checked

        futures = {}
        for key, group in todo.items():
            task = AgentTask(
                store_root="" if shared is not None else str(store.root),
                shared=shared.backend.url if shared is not None else "",
                plan=plan,
                trace_key=key,
                trace=by_key[key],
                protected=[str(p) for p in protected],
                real=real,
            )
            futures[client.submit(run_agent_group, task, pure=False)] = group
        for future in completed(as_completed(futures, loop=client.loop)):  # type: ignore[no-untyped-call]
            done = msgspec.msgpack.decode(task_result(future), type=AgentOutcome)
            _take(futures[future], done, shared, tally, outcome)
            if outcome.error is not None:  # as locally: no trace starts another sample
                client.cancel(list(futures))
                return


def _take(
    group: list[_Unit],
    done: AgentOutcome,
    shared: SharedStore | None,
    tally: _Tally,
    outcome: _Outcome,
) -> None:
    planned = {unit.key: unit for unit in group}
    for data in done.records:
        record = msgspec.json.decode(data, type=UnitRecord)
        unit = planned.get(record.key)
        if unit is None:
            raise UsageError(
                f"a worker built r{record.repeat} {record.trace_id} {record.arm} as "
                f"{record.key[:16]}, which this client did not plan: the workers run other "
                "code than this client (install the same version)",
                code="cluster_code_mismatch",
                location="--scheduler",
            )
        if shared is not None:
            pull_unit(shared, record.key)
        outcome.records.append(record)
        tally.add(len(unit.probes), unit.trace.trace_id, f"{unit.arm} done")
    outcome.built += done.built
    outcome.logs.update(done.logs)
    if done.error is not None and outcome.error is None:
        code, message, location = done.error
        outcome.error = ContinuityError(message, code=code, location=location)
