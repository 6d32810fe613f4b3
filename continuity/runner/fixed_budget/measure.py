"""Fixed-budget slot records: keyed in the store, measured in a private scratch store.

A job is one selected holdout conversation x lookup arm x soul, with every probe of the
conversation. Roles that share an arm and a soul (``pack`` and ``pack-only`` differ only
in their checkout, which this checkout's renderer does not tell apart) share a job, so
each measurement is made once and its record serves every such role.

Each probe runs in a real probe child (the unit worker's fresh forked process on a fresh
copy of the arm's lookup-namespaced checkpoint) in reference mode: the child crosses the
arm's boundary with the role's soul installed and builds the first request the reader
would get (its UTF-8 JSON bytes are recorded); for an identifier probe (an annotated
source, `continuity.lookup.sources.sources_for`) it then runs the digest-verified
reference path through the metered ConversationHistory proxy over the arm's store.
Every other question runs no path: its slot is the full-budget envelope
(`continuity.lookup.fixed_budget_classify.envelope_metrics`).

**Keys.** A record's key binds the holdout trace key, the checkpoint key (the arm's
replay on the binding's models), the arm, the probe (id, index, kind), the soul's raw
and core digests, the reader binding's models, the lookup and probe protocols, the
fixed budget (its policy's sha256, calls, bytes and rounds) and the code digest of
`SLOT_CODE` (what measuring runs). `measure_slots` computes every key first, reuses each
stored record, and measures only the rest, storing each record (blob, then action entry,
both atomic) as soon as its job's worker returns: a rerun measures nothing and a killed
run resumes at the first job it had not finished. A failed child's slot is not stored
(a rerun tries it again); it is returned with its error code.

**Scratch.** Checkpoints and probe workspaces hold the holdout's content, so they are
built in a private scratch store (`continuity.runner.fixed_budget.scratch`: mode 0700,
outside the checkout and the user's store) that is removed when measuring ends, on
success or failure (and, after a kill, by the next sizing). Only content-free records
(sizes, counts, flags) reach the user's store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from continuity.arms import Arm, replay_config_for
from continuity.digest import KeySpec, code_digest
from continuity.harness.keys import checkpoint_key
from continuity.lookup.fixed_budget import FixedTerms
from continuity.lookup.fixed_budget_classify import SlotKind
from continuity.lookup.policy import LOOKUP_PROTOCOL
from continuity.lookup.receipts import PathReceipt
from continuity.lookup.soul import Soul
from continuity.lookup.state import Cause
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.runner.fixed_budget.scratch import Scratch
from continuity.runner.inventory_paths import (
    PATH_CODE,
    AnnotatedProbe,
    record_path,
    reference_specs,
    stored_record,
)
from continuity.store import Store
from continuity.traces.schema import Trace
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
    from continuity.sampling.worker import ProbeOutcome

__all__ = [
    "SLOT_CODE",
    "SLOT_KIND",
    "SLOT_SALT",
    "SLOT_SCHEMA",
    "FixedJob",
    "MeasuredSlot",
    "SlotRecord",
    "SlotRun",
    "measure_slots",
    "slot_kind",
    "slot_spec",
]

SLOT_KIND = "lookup-fixed-slot"
SLOT_SALT = "lookup-fixed-slot-v1"
SLOT_SCHEMA = "continuity-lookup-fixed-slot-v1"
# What a fixed-budget record depends on: everything a reference path does
# (`continuity.runner.inventory_paths.PATH_CODE`) and this module, which builds the
# probe specs and the record.
SLOT_CODE = (*PATH_CODE, "continuity.runner.fixed_budget.measure")
_CODE = re.compile(r"^([a-z][a-z0-9_:.-]*?):")


@dataclass(frozen=True)
class FixedJob:
    """One selected conversation x arm x soul: every probe of it (`sources` empty for a
    probe without an annotated source). `trace_key` is the holdout trace key,
    `trace_digest` its blob."""

    trace: Trace
    trace_key: str
    trace_digest: str
    arm: Arm
    soul: Soul
    probes: tuple[AnnotatedProbe, ...]


class SlotRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One measured slot, as stored (content-free: ids, sizes, counts, flags).
    `receipt` is the reference path's (None for an envelope slot)."""

    schema: str = SLOT_SCHEMA
    trace_id: str
    arm: str
    probe_id: str
    soul_sha256: str
    kind: SlotKind
    first_request_bytes: int
    receipt: PathReceipt | None
    deadline_exceeded: bool
    exhausted: Cause | None


class MeasuredSlot(NamedTuple):
    """A job's probe, its key, and its record, or the failed child's error code (and
    the first request's size its last witness showed, 0 when none)."""

    job: FixedJob
    probe: AnnotatedProbe
    key: str
    record: SlotRecord | None
    failure: str | None
    failure_request_bytes: int = 0


@dataclass
class SlotRun:
    """Every slot of the jobs in job order; which keys were measured, reused, failed."""

    slots: list[MeasuredSlot] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def slot_kind(probe: AnnotatedProbe) -> SlotKind:
    return "reference" if probe.sources else "envelope"


def slot_spec(
    job: FixedJob,
    probe: AnnotatedProbe,
    models: tuple[str, str],
    terms: FixedTerms,
    protocol: tuple[str, str] = (LOOKUP_PROTOCOL, PROBE_PROTOCOL),
) -> KeySpec:
    """The key spec of one slot record (see the module doc)."""
    config = replay_config_for(job.arm, LOOKUP_PROTOCOL, models)
    return KeySpec(
        kind=SLOT_KIND,
        salt=SLOT_SALT,
        code=code_digest(SLOT_CODE),
        params={
            "arm": msgspec.to_builtins(job.arm),
            "probe": {"id": probe.probe.probe_id, "index": probe.index, "kind": slot_kind(probe)},
            "soul": {"sha256": job.soul.sha256, "core_sha256": job.soul.core_sha256},
            "reader": {"reader": models[0], "alternate": models[1]},
            "protocol": {"lookup": protocol[0], "probe": protocol[1]},
            "budget": {
                "policy_sha256": terms.policy_sha256,
                "calls": terms.calls,
                "bytes": terms.bytes,
                "rounds": terms.rounds,
            },
        },
        inputs={"trace": job.trace_key, "checkpoint": checkpoint_key(job.trace_key, config)},
    )


def _run_job(
    scratch: Store,
    job: FixedJob,
    probes: Sequence[AnnotatedProbe],
    models: tuple[str, str],
    zygotes: ZygotePool,
    watchdog_seconds: float,
) -> list[ProbeOutcome]:
    """Every probe of `probes` in one unit worker on the job's checkpoint in `scratch`."""
    from continuity.harness.checkpoints import build_checkpoint, checkpoint_lock
    from continuity.runner.units.worker import run_worker
    from continuity.sampling.worker import UnitRequest

    checkpoint = build_checkpoint(
        scratch,
        job.trace,
        trace_key=job.trace_key,
        trace_digest=job.trace_digest,
        config=replay_config_for(job.arm, LOOKUP_PROTOCOL, models),
        zygotes=zygotes,
    )
    request = UnitRequest(
        store_root=str(scratch.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=job.arm.id,
        probes=reference_specs(probes, (job.soul.sha256, job.soul.core_sha256), models),
        watchdog_seconds=watchdog_seconds,
    )
    with checkpoint_lock(scratch, checkpoint.key):
        return run_worker(request, 3600.0 + watchdog_seconds * len(probes), zygotes)


def _error_code(error: str | None) -> str:
    match = _CODE.match(error or "")
    return match.group(1) if match else "child_failed"


def _record(job: FixedJob, probe: AnnotatedProbe, outcome: ProbeOutcome) -> SlotRecord | str:
    """The child's observation as a record, or its failure's error code."""
    lookup = outcome.evidence.lookup if outcome.evidence is not None else None
    if lookup is None:
        return _error_code(outcome.error)
    receipt = lookup.paths[0] if probe.sources and lookup.paths else None
    if probe.sources and receipt is None:
        return "lookup_inventory_failed"  # an identifier probe whose path never ran
    return SlotRecord(
        trace_id=job.trace.trace_id,
        arm=job.arm.id,
        probe_id=probe.probe.probe_id,
        soul_sha256=job.soul.sha256,
        kind=slot_kind(probe),
        first_request_bytes=lookup.first_request_bytes,
        receipt=receipt,
        deadline_exceeded=lookup.deadline_exceeded,
        exhausted=lookup.meter.exhausted,
    )


@dataclass
class _Planned:
    job: FixedJob
    specs: list[KeySpec]
    keys: list[str]
    records: list[SlotRecord | None]
    failures: dict[int, tuple[str, int]] = field(default_factory=dict)


def _measure_job(
    store: Store,
    plan: _Planned,
    models: tuple[str, str],
    scratch: Scratch,
    watchdog_seconds: float,
    on_slot: Callable[[str, SlotRecord], None] | None,
) -> list[str]:
    """Measure the job's unstored slots (one worker); store each record, keep each
    failure; return the keys it measured."""
    wanted = [i for i, record in enumerate(plan.records) if record is None]
    if not wanted:
        return []
    scratch_store, zygotes = scratch.open()
    job = plan.job
    probes = [job.probes[i] for i in wanted]
    outcomes = _run_job(scratch_store, job, probes, models, zygotes, watchdog_seconds)
    measured = []
    for i, outcome in zip(wanted, outcomes, strict=True):
        found = _record(job, job.probes[i], outcome)
        if isinstance(found, str):
            witness = outcome.witness
            plan.failures[i] = (found, witness.first_request_bytes if witness else 0)
            continue
        record_path(store, plan.keys[i], plan.specs[i], found)
        plan.records[i] = found
        measured.append(plan.keys[i])
        if on_slot is not None:
            on_slot(plan.keys[i], found)
    return measured


def measure_slots(
    store: Store,
    jobs: Sequence[FixedJob],
    models: tuple[str, str],
    terms: FixedTerms,
    *,
    scratch_parent: Path | None = None,
    forbidden: Sequence[Path] = (),
    watchdog_seconds: float = 720.0,
    progress: Callable[[int, int, str, str], None] | None = None,
    on_slot: Callable[[str, SlotRecord], None] | None = None,
) -> SlotRun:
    """Every slot of every job: stored records reused, the rest measured in a scratch
    store (see the module doc) that is removed before this returns or raises.
    `on_slot` is called after each measured record is stored; `progress` once per job.

    Raises:
        UsageError: ``lookup_scratch_root_invalid``.
        HarnessError: a checkpoint replay or the unit worker failed (the records of the
            jobs before it are stored).
    """
    planned = []
    for job in jobs:
        specs = [slot_spec(job, probe, models, terms) for probe in job.probes]
        keys = [spec.key() for spec in specs]
        planned.append(
            _Planned(job, specs, keys, [stored_record(store, key, SlotRecord) for key in keys])
        )
    run = SlotRun()
    scratch = Scratch(scratch_parent, [store.root, *forbidden])
    try:
        for done, plan in enumerate(planned, start=1):
            measured = _measure_job(store, plan, models, scratch, watchdog_seconds, on_slot)
            run.measured += measured
            for i, (probe, key) in enumerate(zip(plan.job.probes, plan.keys, strict=True)):
                record = plan.records[i]
                code, seen = plan.failures.get(i, (None, 0))
                run.slots.append(MeasuredSlot(plan.job, probe, key, record, code, seen))
                if code is not None:
                    run.failed.append(key)
                elif key not in measured:
                    run.reused.append(key)
            if progress is not None:
                job = plan.job
                state = f"{len(measured)} measured" if measured else "stored"
                if plan.failures:
                    state += f", {len(plan.failures)} failed"
                what = f"{job.trace.trace_id} {job.arm.id} soul {job.soul.sha256[:8]}"
                progress(done, len(planned), what, state)
    finally:
        scratch.close()
    return run
