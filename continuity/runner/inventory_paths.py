"""Reference-path measurements keyed in the store: one action per path.

A job is one trace x arm and the probes of it whose reference paths are wanted (its
annotated probes, for the sizing inventory). `measure_paths` computes every path's key
before anything runs, reuses each path whose action entry exists and verifies, and
measures the rest: one unit worker per job that still misses a path, on the arm's
(lookup-namespaced) checkpoint, which is built only then. A job whose paths are all
stored builds no checkpoint and starts no worker. Each measured path is written as its
own action (the record blob first, then the entry, both atomic), as soon as its worker
returns, so a killed measurement resumes at the first job it had not finished.

A path's key binds the trace key, the checkpoint key (the arm's replay of that trace on
the binding's models), the arm, the probe, the soul digests (raw and core), the reader
binding's models, the lookup and probe protocol versions, and the code digest of
`PATH_CODE`. The record holds what the child observed (its `PathReceipt` and the first
request's size), not a class or a trace estimate: those are applied when the inventory is
assembled and when a policy is read, so changing them never re-measures a path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

import msgspec

from continuity.arms import Arm, replay_config_for
from continuity.digest import KeySpec, code_digest
from continuity.errors import ContinuityError
from continuity.harness.keys import HARNESS_CODE, checkpoint_key
from continuity.lookup.budget import BYTE_CAP, CALL_CAP
from continuity.lookup.policy import LOOKUP_PROTOCOL
from continuity.lookup.receipts import LookupBinding, PathReceipt, SourceRef
from continuity.lookup.soul import Soul
from continuity.lookup.sources import sources_for
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.runner.children import ZYGOTE_PRELOAD
from continuity.store import Store
from continuity.traces.schema import Probe, Trace
from continuity.traces.suites import SuiteItem
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
    from continuity.sampling.worker import ProbeOutcome, ProbeSpec

__all__ = [
    "PATH_CODE",
    "PATH_KIND",
    "PATH_SALT",
    "PATH_SCHEMA",
    "AnnotatedProbe",
    "MeasuredPath",
    "PathJob",
    "PathRecord",
    "PathRun",
    "annotated_probes",
    "measure_paths",
    "path_record",
    "path_spec",
    "record_path",
    "reference_specs",
    "stored_record",
]

PATH_KIND = "lookup-path"
PATH_SALT = "lookup-path-v1"
PATH_SCHEMA = "continuity-lookup-path-v1"
# The code a measured path depends on: what runs between the trace and the recorded
# receipt. The replay that builds the arm's checkpoint and the ConversationHistory server
# (HARNESS_CODE: harness, messages, memory, privacy, providers, servers, trace schema);
# the arms (which boundary the child crosses); the probe child, its worker and its
# reference mode (continuity.sampling); the probe turn's fixed bytes in the first request
# (probes.protocol); the meter, its state, the reference path, the reader binding, the
# receipts, the source annotation and the soul (continuity.lookup, module by module);
# the caps the meter enforces while measuring (lookup.budget); and this module, which
# builds the request and the record. Left out on purpose: the classifier and the policy
# (a class is recomputed whenever a policy is read), the trace estimates (applied when
# the inventory is assembled, keyed there), the scorers and availability (the child
# computes them, the record holds none of them), and process plumbing (zygotes, the
# worker's reply decoding), which moves bytes but never shapes a measured value.
PATH_CODE = (
    *HARNESS_CODE,
    "continuity.arms",
    "continuity.sampling",
    "continuity.probes.protocol",
    "continuity.lookup.budget",
    "continuity.lookup.meter",
    "continuity.lookup.probe",
    "continuity.lookup.reader",
    "continuity.lookup.receipts",
    "continuity.lookup.soul",
    "continuity.lookup.sources",
    "continuity.lookup.state",
    "continuity.runner.inventory_paths",
)


@dataclass(frozen=True)
class AnnotatedProbe:
    """A probe of a trace with its annotated source(s) and its index in the trace."""

    index: int
    probe: Probe
    sources: tuple[SourceRef, ...]


def annotated_probes(trace: Trace) -> tuple[AnnotatedProbe, ...]:
    """The probes of `trace` that have an annotated source, in trace order."""
    return tuple(
        AnnotatedProbe(i, p, tuple(s))
        for i, p in enumerate(trace.probes)
        if (s := sources_for(trace, p))
    )


@dataclass(frozen=True)
class PathJob:
    """One trace x arm: the probes whose reference paths to measure (`suite` only
    travels with the job: which admission cap applies is the inventory's business)."""

    suite: str
    item: SuiteItem
    trace: Trace
    arm: Arm
    probes: tuple[AnnotatedProbe, ...]


class PathRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One measured reference path, as stored (content-free: ids, counts, sizes)."""

    schema: str = PATH_SCHEMA
    trace_id: str
    arm: str
    probe_id: str
    receipt: PathReceipt
    first_request_bytes: int  # the UTF-8 JSON bytes of the first request the reader gets


class MeasuredPath(NamedTuple):
    job: PathJob
    probe: AnnotatedProbe
    key: str
    record: PathRecord


@dataclass
class PathRun:
    """Every path of the jobs in job order, and which keys were measured or reused."""

    paths: list[MeasuredPath] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)


def path_spec(
    job: PathJob,
    probe: AnnotatedProbe,
    soul: tuple[str, str],
    models: tuple[str, str],
    protocol: tuple[str, str] = (LOOKUP_PROTOCOL, PROBE_PROTOCOL),
) -> KeySpec:
    """The key spec of `probe`'s reference path in `job` (see the module doc): `soul` is
    (raw sha256, core sha256), `models` the reader binding's (reader, alternate),
    `protocol` (lookup protocol, probe protocol)."""
    config = replay_config_for(job.arm, LOOKUP_PROTOCOL, models)
    return KeySpec(
        kind=PATH_KIND,
        salt=PATH_SALT,
        code=code_digest(PATH_CODE),
        params={
            "arm": msgspec.to_builtins(job.arm),
            "probe": {"id": probe.probe.probe_id, "index": probe.index},
            "soul": {"sha256": soul[0], "core_sha256": soul[1]},
            "reader": {"reader": models[0], "alternate": models[1]},
            "protocol": {"lookup": protocol[0], "probe": protocol[1]},
        },
        inputs={"trace": job.item.key, "checkpoint": checkpoint_key(job.item.key, config)},
    )


_R = TypeVar("_R", bound=msgspec.Struct)


def stored_record(store: Store, key: str, kind: type[_R]) -> _R | None:
    """The verified record of `key` (a path's, or another measured slot's `kind`), or
    None when it must be measured (missing, corrupt, or not a record of this schema)."""
    data = store.load_output(key)
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError:
        return None


class _Slot(Protocol):
    @property
    def trace_id(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def probe_id(self) -> str: ...


def record_path(store: Store, key: str, spec: KeySpec, record: _Slot) -> None:
    """Store `record` (a path's, or another measured slot's) as the output of `key`
    (the blob, then the action entry)."""
    blob = store.put_blob(msgspec.json.encode(record))
    store.record_action(
        key,
        kind=spec.kind,
        output=blob,
        inputs=dict(spec.inputs),
        meta={"trace_id": record.trace_id, "arm": record.arm, "probe_id": record.probe_id},
    )


def reference_specs(
    probes: Sequence[AnnotatedProbe], soul: tuple[str, str], models: tuple[str, str]
) -> list[ProbeSpec]:
    """One probe spec per probe: the evaluator's reference path to its first source (if
    it has one), under the inventory's call and byte caps; `soul` is (raw sha256, core
    sha256)."""
    from continuity.sampling.worker import ProbeSpec

    return [
        ProbeSpec(
            probe.index,
            probe.probe.text,
            [],
            LookupBinding(
                mode="reference",
                call_budget=CALL_CAP,
                byte_budget=BYTE_CAP,
                soul_sha256=soul[0],
                soul_core_sha256=soul[1],
                sources=list(probe.sources[:1]),
                models=models,
            ),
            probe.probe.category,
        )
        for probe in probes
    ]


def _run_job(
    store: Store,
    soul: Soul,
    models: tuple[str, str],
    job: PathJob,
    probes: Sequence[AnnotatedProbe],
    zygotes: ZygotePool,
) -> list[ProbeOutcome]:
    """Run the reference paths of `probes` in one unit worker on the job's checkpoint."""
    from continuity.harness.checkpoints import build_checkpoint, checkpoint_lock
    from continuity.runner.units.worker import run_worker
    from continuity.sampling.worker import UnitRequest

    checkpoint = build_checkpoint(
        store,
        job.trace,
        trace_key=job.item.key,
        trace_digest=job.item.digest,
        config=replay_config_for(job.arm, LOOKUP_PROTOCOL, models),
        zygotes=zygotes,
    )
    request = UnitRequest(
        store_root=str(store.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=job.arm.id,
        probes=reference_specs(probes, (soul.sha256, soul.core_sha256), models),
        watchdog_seconds=720.0,
    )
    with checkpoint_lock(store, checkpoint.key):
        return run_worker(request, 3600.0, zygotes)


def path_record(job: PathJob, probe: AnnotatedProbe, outcome: ProbeOutcome) -> PathRecord:
    """A worker's outcome as the path's record.

    Raises:
        ContinuityError: ``lookup_inventory_failed`` when the reference path's child
            failed.
    """
    lookup = outcome.evidence.lookup if outcome.evidence is not None else None
    if lookup is None or not lookup.paths:
        raise ContinuityError(
            f"the reference path of {job.trace.trace_id} {job.arm.id} "
            f"{probe.probe.probe_id} failed: {outcome.error}",
            code="lookup_inventory_failed",
            location=job.trace.trace_id,
        )
    return PathRecord(
        trace_id=job.trace.trace_id,
        arm=job.arm.id,
        probe_id=probe.probe.probe_id,
        receipt=lookup.paths[0],
        first_request_bytes=lookup.first_request_bytes,
    )


@dataclass
class _Planned:
    job: PathJob
    specs: list[KeySpec]
    keys: list[str]
    records: list[PathRecord | None]


def _measure_missing(
    store: Store,
    soul: Soul,
    models: tuple[str, str],
    planned: _Planned,
    zygotes: ZygotePool,
    on_path: Callable[[str, PathRecord], None] | None,
) -> list[str]:
    """Measure and store the job's paths that have no record yet (one worker); return
    their keys. Every successful path is stored before a failed one is raised."""
    wanted = [i for i, record in enumerate(planned.records) if record is None]
    if not wanted:
        return []
    job = planned.job
    outcomes = _run_job(store, soul, models, job, [job.probes[i] for i in wanted], zygotes)
    failure: ContinuityError | None = None
    for i, outcome in zip(wanted, outcomes, strict=True):
        try:
            record = path_record(job, job.probes[i], outcome)
        except ContinuityError as exc:
            failure = failure or exc
            continue
        record_path(store, planned.keys[i], planned.specs[i], record)
        planned.records[i] = record
        if on_path is not None:
            on_path(planned.keys[i], record)
    if failure is not None:
        raise failure
    return [planned.keys[i] for i in wanted]


def measure_paths(
    store: Store,
    jobs: Sequence[PathJob],
    soul: Soul,
    models: tuple[str, str],
    *,
    progress: Callable[[int, int, str, str], None] | None = None,
    on_path: Callable[[str, PathRecord], None] | None = None,
) -> PathRun:
    """The reference path of every probe of every job: stored ones reused, the rest
    measured and stored (see the module doc). `on_path` is called after each measured
    path is stored; `progress` once per job.

    Raises:
        ContinuityError: ``lookup_inventory_failed`` when a reference path's child
            failed (the job's other measured paths are stored first).
        HarnessError: a checkpoint replay or the worker failed.
    """
    planned = []
    for job in jobs:
        specs = [path_spec(job, p, (soul.sha256, soul.core_sha256), models) for p in job.probes]
        keys = [spec.key() for spec in specs]
        planned.append(
            _Planned(job, specs, keys, [stored_record(store, k, PathRecord) for k in keys])
        )
    missing = any(record is None for plan in planned for record in plan.records)
    run = PathRun()
    # The zygote starts at once only when something will be measured; a warm run
    # starts no process at all.
    with ZygotePool(ZYGOTE_PRELOAD, start=int(missing)) as zygotes:
        for done, plan in enumerate(planned, start=1):
            measured = _measure_missing(store, soul, models, plan, zygotes, on_path)
            run.measured += measured
            for probe, key, record in zip(plan.job.probes, plan.keys, plan.records, strict=True):
                assert record is not None
                run.paths.append(MeasuredPath(plan.job, probe, key, record))
                if key not in measured:
                    run.reused.append(key)
            if progress is not None:
                job = plan.job
                state = f"{len(measured)} measured" if measured else "stored"
                progress(done, len(planned), f"{job.trace.trace_id} {job.arm.id}", state)
    return run
