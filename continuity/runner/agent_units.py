"""An outside agent's units: ``doit units --agent agent.toml`` (CAP/0).

One unit per repeat x trace x arm, as for the reference arms, holding one sample per
planned probe (`continuity.agents.units`: each a fresh re-replay of the trace through
the adapter, its boundary crossed, the probe asked as the next owner turn). Its arm is
the outside arm's unit id (``agent-native``, ``agent-restart``, ``agent-new_session``,
``agent-compact``, ``agent-switch``, ``agent-continuity-store``,
``agent-continuity-pack-cold``: `continuity.agents.identity.unit_arm`), so an outside
agent's units never pass for the reference arms'. The store and pack arms take the
reference harness's retained evidence (`continuity.agents.retained`), built once per
trace, and their keys bind its checkpoint's key.

A unit is a store artifact keyed by `agent_unit_key`: its repeat, arm, probe ids and
probe protocol, the agent's fingerprint (manifest digest, the digest of its files and
of its allowlisted variables' values), the real binding of the reader the probe is
forwarded to (None offline), the trace's key and the code that drives the agent. A
rerun reuses every stored unit and builds only what is missing; changing the agent's
code, manifest or environment builds new units.

Every sample of a trace must carry the trace's first replay signature (else it is
``copy_unverified``): the first is the first sample's in plan order, read from a stored
unit when that unit is reused.

Each valid answer is graded as the reference arms' are (the scorer, the availability
from the needle states read in the probe request the proxy saw, the loss label); an
excluded sample is never scored. The unit files go to ``<run>/units/`` like every
other, so `doit aggregate` and `doit compare` read them; the adapters' logs go to
``<run>/agent-logs/``.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import msgspec
from msgspec import UNSET

from continuity.agents.drive import AgentRun, Reader
from continuity.agents.identity import AGENT_PROBE_PROTOCOL, AgentIdentity, outside_arm, unit_arm
from continuity.agents.manifest import Manifest
from continuity.agents.readers import OfflineReader, RealReader, SampleReader
from continuity.agents.retained import (
    STORE_ARMS,
    RetainedView,
    retained_checkpoint,
    retained_view,
)
from continuity.agents.units import evidence, run_sample, sample_status
from continuity.digest import KeySpec, code_digest, value_digest
from continuity.errors import ContinuityError
from continuity.messages import Usage
from continuity.plan.plan import Plan
from continuity.probes.scoring import locale_for
from continuity.progress import Tick
from continuity.providers.endpoint import CallReceipt
from continuity.runner.units.grading import score_result
from continuity.runner.units.record import ProbeResult, ProbeStatus, RealRun, UnitRecord, seal
from continuity.runner.units.store import materialise, store_unit
from continuity.runner.units.worker import real_binding_for
from continuity.store import Store
from continuity.traces.schema import Probe, Trace

__all__ = [
    "AGENT_UNIT_CODE",
    "AGENT_UNIT_SALT",
    "AgentBuild",
    "AgentUnitPlan",
    "agent_unit_key",
    "build_agent_units",
    "real_reader",
]

AGENT_UNIT_SALT = "agent-unit-v1"
AGENT_UNIT_CODE = (
    "continuity.agents",
    "continuity.servers",  # the proxy and its formats, the fixture, ConversationHistory
    "continuity.lookup",  # the store arm's meter, policy and scripted lookup
    "continuity.probes",  # needles, availability, the reference lookup, the probe turn
    "continuity.providers.scripted",  # the offline summary's text
    "continuity.arms",
    "continuity.runner.agent_units",
    "continuity.runner.units.record",
)


def agent_unit_key(
    repeat: int,
    trace_key: str,
    arm: str,
    agent: AgentIdentity,
    probe_ids: Sequence[str],
    binding: dict[str, Any] | None = None,
) -> str:
    """An outside agent's unit key (module doc); `arm` is the unit arm id. The store
    and pack arms' also binds the reference checkpoint their evidence comes from
    (`retained_checkpoint`), so verifying a unit from its fields gives the same key."""
    stored = arm in [unit_arm(a) for a in STORE_ARMS]
    retained = retained_checkpoint(trace_key) if stored else None
    params: dict[str, Any] = {
        "repeat": repeat,
        "arm": arm,
        "probes": list(probe_ids),
        "protocol": AGENT_PROBE_PROTOCOL,
        "agent": msgspec.to_builtins(agent),
    }
    if binding is not None:
        params["binding"] = binding
    if retained is not None:
        params["retained"] = retained
    return KeySpec(
        kind="agent-unit",
        salt=AGENT_UNIT_SALT,
        code=code_digest(AGENT_UNIT_CODE),
        params=params,
        inputs={"trace": trace_key},
    ).key()


def _arm_binding(binding: dict[str, Any] | None, arm: str) -> dict[str, Any] | None:
    """The real binding an `arm`'s units bind: the model a switch switches to is the
    switch arm's alone (naming one leaves every other arm's units as they were)."""
    if binding is None or arm == "switch" or "switch" not in binding:
        return binding
    return {name: part for name, part in binding.items() if name != "switch"}


class AgentUnitPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What `build_agent_units` runs: the agent, its arms (outside arm names), the
    repeats, the probe limit, the reader the probe goes to and its real binding."""

    manifest: Manifest
    agent: AgentIdentity
    arms: list[str]
    repeats: list[int]
    probe_limit: int | None
    binding: dict[str, Any] | None = None

    @classmethod
    def of(
        cls,
        plan: Plan,
        manifest: Manifest,
        repeats: Sequence[int] | None = None,
        binding: dict[str, Any] | None = None,
    ) -> AgentUnitPlan:
        """What an agent `plan` runs: its agent and arms, `repeats` (default all of the
        plan's), its probe limit and (real mode) the reader's `binding`."""
        assert plan.agent is not None
        return cls(
            manifest=manifest,
            agent=plan.agent,
            arms=[outside_arm(a) for a in plan.arms],
            repeats=list(repeats or range(1, plan.repeats + 1)),
            probe_limit=plan.probe_limit,
            binding=binding,
        )


def _result(
    trace: Trace,
    probe: Probe,
    index: int,
    run: AgentRun,
    first: str,
    calls: list[CallReceipt],
    post_processes: bool,
) -> ProbeResult:
    """The sample's result; a valid one graded as the reference arms' are
    (`score_result`: the outcome, the availability from the needle states the proxy saw,
    the loss label), an excluded one kept with its class and never scored."""
    status, reasons = sample_status(run, first, post_processes=post_processes)
    result = ProbeResult(
        probe_id=probe.probe_id,
        index=index,
        category=probe.category,
        design_role=probe.design_role,
        status=cast(ProbeStatus, status),
        reasons=reasons,
        answer=run.probe_reply,
        availability=run.availability,
        # the probe's own calls, and apart those of the agent's own compaction (summary)
        usage=sum((c.usage for c in calls if c.role != "summary"), Usage()),
        compaction_usage=sum((c.usage for c in calls if c.role == "summary"), Usage()),
        agent=evidence(run, calls),
    )
    if status != "valid":
        return result
    return score_result(result, probe, run.needle_states, locale=locale_for(trace.family))


class _Unit:
    """One unit being built: its frame, then its samples."""

    def __init__(self, plan: AgentUnitPlan, trace: Trace, key: str, arm: str, repeat: int):
        self.plan, self.trace, self.arm, self.repeat = plan, trace, arm, repeat
        self.probes = trace.probes[: plan.probe_limit]
        self.binding = _arm_binding(plan.binding, arm)
        self.key = agent_unit_key(
            repeat, key, unit_arm(arm), plan.agent, [p.probe_id for p in self.probes], self.binding
        )
        self.trace_key = key

    def record(self, results: list[ProbeResult]) -> UnitRecord:
        return seal(
            UnitRecord(
                key=self.key,
                repeat=self.repeat,
                family=self.trace.family,
                trace_id=self.trace.trace_id,
                trace_key=self.trace_key,
                arm=unit_arm(self.arm),
                checkpoint="",
                probe_ids=[p.probe_id for p in self.probes],
                probes=results,
                judge=[],
                binding=self.binding,
                probe_protocol=AGENT_PROBE_PROTOCOL,
                complete=True,
                eligible_terminal=True,
                agent=self.plan.agent,
            )
        )


def _sample(
    plan: AgentUnitPlan,
    unit: _Unit,
    probe: Probe,
    run_dir: Path,
    reader: Reader,
    protected: tuple[Path, ...],
    retained: RetainedView | None = None,
) -> AgentRun:
    """One sample in a scratch folder; the adapter's log is kept, its state is not."""
    name = f"r{unit.repeat}-{unit.trace.trace_id}-{unit.arm}-{probe.probe_id}"
    # The adapter sees its workspace path: an opaque one, never the arm or the probe.
    work = run_dir / "agent-work" / value_digest((unit.key, probe.probe_id))[:16]
    shutil.rmtree(work, ignore_errors=True)
    try:
        sandboxed = plan.agent.sandbox != "none"
        return run_sample(
            plan.manifest,
            unit.trace,
            unit.arm,
            probe,
            work,
            reader,
            sandboxed=sandboxed,
            protected=protected,
            retained=retained,
        )
    finally:
        if (work / "adapter.log").is_file():
            shutil.move(work / "adapter.log", run_dir / "agent-logs" / f"{name}.log")
        shutil.rmtree(work, ignore_errors=True)  # the agent's state: not evidence


def real_reader(real: RealRun, store: Store, repeat: int) -> SampleReader:
    """A real sample's reader: the plan's, and the model its switch arm switches to."""
    binding = real_binding_for(real, store, repeat)
    assert binding is not None
    switch = real.switch and msgspec.structs.replace(binding, endpoint=real.switch)
    return RealReader(binding, switch or None)


def _first_signature(record: UnitRecord) -> str:
    """The first signature of a stored unit's samples whose replay did not fail."""
    return next(
        (
            p.agent.signature
            for p in record.probes
            if p.agent is not UNSET and p.status != "replay_failed"
        ),
        "",
    )


class AgentBuild(msgspec.Struct, frozen=True, kw_only=True):
    """What `build_agent_units` did: the finished units (materialised), their folder,
    how many it built and, when a reader call failed (real mode), that error and how
    many units were planned (the run stopped there; the unit was not sealed)."""

    records: list[UnitRecord]
    folder: Path
    built: int
    planned: int
    error: ContinuityError | None = None


def _plan_units(plan: AgentUnitPlan, traces: Sequence[tuple[str, Trace]]) -> list[_Unit]:
    """Every unit of the plan in the order they are built: by repeat, then trace, then
    arm."""
    return [
        _Unit(plan, trace, key, arm, repeat)
        for repeat in plan.repeats
        for key, trace in traces
        for arm in plan.arms
    ]


class _Tally:
    """The samples done across threads, and the progress line they drive."""

    def __init__(self, total: int, progress: Tick | None) -> None:
        self.total, self.done, self._progress = total, 0, progress
        self._lock = threading.Lock()

    def add(self, count: int, item: str, status: str) -> None:
        with self._lock:
            self.done += count
            if self._progress is not None:
                self._progress(self.done, self.total, item, status)


class _Trace(msgspec.Struct, kw_only=True):
    """What one trace's units came to: records by unit key, and a reader's error."""

    records: dict[str, UnitRecord] = msgspec.field(default_factory=dict)
    built: int = 0
    error: ContinuityError | None = None


def _build_trace(
    units: Sequence[_Unit],
    store: Store,
    build: _Build,
    stop: threading.Event,
) -> _Trace:
    """Build (or reuse) one trace's units in plan order: its first signature is the
    first sample's. Stops before a sample once `stop` is set (another trace failed)."""
    done = _Trace()
    first = ""
    retained: RetainedView | None = None
    for unit in units:
        stored = store.load_output(unit.key)
        if stored is not None:
            record = msgspec.json.decode(stored, type=UnitRecord)
            first = first or _first_signature(record)
            build.tally.add(len(unit.probes), unit.trace.trace_id, f"{unit.arm} cached")
            done.records[unit.key] = materialise(store, build.folder, record)
            continue
        results, replayed, pids = [], [], []
        for index, probe in enumerate(unit.probes):
            if stop.is_set():
                return done
            reader = build.readers(unit.repeat)
            if unit.arm in STORE_ARMS and retained is None:  # once a trace, when needed
                folder = build.run_dir / "agent-work" / f"retained-{unit.trace_key[:16]}"
                retained = retained_view(store, unit.trace_key, unit.trace, folder)
            try:
                run = _sample(
                    build.plan, unit, probe, build.run_dir, reader, build.hidden, retained
                )
            except ContinuityError:  # the agent's turn failed: because its reader did?
                if reader.error is None:
                    raise
            if reader.error is not None:  # never sealed: the rerun asks it again
                done.error = reader.error
                return done
            if not first and not [c for c in run.codes if c != "steer_degraded"]:
                first = run.signature  # a clean replay's
            pids.append(run.crossing.pids)
            post = build.plan.manifest.post_processes
            calls = reader.calls()
            results.append(
                _result(unit.trace, probe, index, run, first or run.signature, calls, post)
            )
            replayed += reader.replayed()
            build.tally.add(
                1, unit.trace.trace_id, f"{unit.arm} {probe.probe_id} {results[-1].status}"
            )
        record = store_unit(store, unit.record(results), agent_replayed=replayed, agent_pids=pids)
        if build.stored is not None:  # a cluster worker publishes it (agent_cluster)
            build.stored(record)
        done.built += 1
        done.records[unit.key] = materialise(store, build.folder, record)
    return done


def _start(
    plan: AgentUnitPlan,
    traces: Sequence[tuple[str, Trace]],
    run_dir: Path,
    progress: Tick | None,
) -> tuple[Path, list[_Unit], dict[str, list[_Unit]], _Tally]:
    """A build's start, here or on a cluster: the run's units and logs folders made,
    every unit in plan order, the units by trace key, and the progress tally."""
    folder = run_dir / "units"
    folder.mkdir(parents=True, exist_ok=True)
    (run_dir / "agent-logs").mkdir(parents=True, exist_ok=True)
    units = _plan_units(plan, traces)
    by_trace: dict[str, list[_Unit]] = {}
    for unit in units:
        by_trace.setdefault(unit.trace_key, []).append(unit)
    return folder, units, by_trace, _Tally(sum(len(u.probes) for u in units), progress)


class _Build(msgspec.Struct, frozen=True, kw_only=True):
    """What every trace's build shares."""

    plan: AgentUnitPlan
    run_dir: Path
    folder: Path
    readers: Callable[[int], SampleReader]
    hidden: tuple[Path, ...]
    tally: _Tally
    stored: Callable[[UnitRecord], None] | None = None  # told of each unit built


def build_agent_units(
    store: Store,
    plan: AgentUnitPlan,
    traces: Sequence[tuple[str, Trace]],
    run_dir: Path,
    readers: Callable[[int], SampleReader] = lambda repeat: OfflineReader(),
    progress: Tick | None = None,
    protected: Sequence[Path] = (),
    workers: int = 1,
) -> AgentBuild:
    """Build (or reuse) every unit of `traces` (their keys and traces) into
    ``<run_dir>/units/``, each sample's probe answered by a fresh ``readers(repeat)``.
    The sandbox hides the store and `protected` (the credentials file) besides its own
    list (`continuity.agents.sandbox.protected_paths`).

    With ``workers`` above 1, that many traces are built at once, each in a thread of
    its own (a sample mostly waits on the adapter's processes); a trace's units are
    always built in plan order, so its first signature is the same, and so are the
    units. A reader's error or a typed error stops every trace before its next sample."""
    folder, units, by_trace, tally = _start(plan, traces, run_dir, progress)
    hidden = (store.root, *map(Path, protected))
    build = _Build(
        plan=plan, run_dir=run_dir, folder=folder, readers=readers, hidden=hidden, tally=tally
    )
    stop = threading.Event()

    def one(group: list[_Unit]) -> _Trace:
        try:
            done = _build_trace(group, store, build, stop)
        except BaseException:
            stop.set()
            raise
        if done.error is not None:
            stop.set()
        return done

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="agent") as pool:
        futures = [pool.submit(one, group) for group in by_trace.values()]
        built = [future.result() for future in futures]
    shutil.rmtree(run_dir / "agent-work", ignore_errors=True)
    records = {key: r for b in built for key, r in b.records.items()}
    return AgentBuild(
        records=[records[u.key] for u in units if u.key in records],
        folder=folder,
        built=sum(b.built for b in built),
        planned=len(units),
        error=next((b.error for b in built if b.error is not None), None),
    )
