"""Arm samples: fork an arm's checkpoint, cross its boundary in a child, classify.

One sample per trace and arm (the trace's first probe) shows that the arm crosses its
boundary under its pressure; probe units over every probe build on the same child. A
sample is a store artifact keyed by the arm's definition, the probe index, the harness
and evidence code, and the checkpoint's key, so a rerun skips what exists.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from continuity.arms import Arm, parse_arms, replay_config_for
from continuity.digest import KeySpec, code_digest
from continuity.errors import CheckpointError, ContinuityError
from continuity.evidence import Classification, classify
from continuity.harness.keys import HARNESS_CODE, checkpoint_key
from continuity.outputs import resolve_out_path, write_json
from continuity.preparation.receipts import PreparationReceipt
from continuity.progress import Tick
from continuity.runner.children import PROBE_TARGET, ZYGOTE_PRELOAD, run_child
from continuity.runner.ledger_run import ledger_run, prepare_for_unit, prepared_key
from continuity.runner.parallel import run_grouped
from continuity.sampling.receipts import (
    ProbeCall,
    ProbeReply,
    ProbeRequest,
    ProcessReceipt,
    SampleEvidence,
)
from continuity.store import Store
from continuity.traces.keys import suite_specs
from continuity.traces.schema import Trace
from continuity.zygote import ZygotePool

if TYPE_CHECKING:
    from continuity.harness.checkpoints import CheckpointResult
    from continuity.traces.suites import SuiteItem

__all__ = [
    "DEFAULT_JOBS",
    "SAMPLE_CODE",
    "SAMPLE_SALT",
    "ArmsManifest",
    "SampleRecord",
    "arm_samples_current",
    "build_arm_samples",
    "run_probe_child",
    "run_probe_process",
    "sample_arm",
    "sample_key",
]

SAMPLE_SALT = "arm-sample-v1"
DEFAULT_JOBS = min(2, os.cpu_count() or 1)
# The code a sample (and through UNIT_CODE a unit) depends on: the harness, the arms, the
# probe child (continuity.sampling) and the lookup reader, meter and policy it runs in lookup
# mode (continuity.lookup), and the evidence rules.
_Reply = TypeVar("_Reply", SampleEvidence, ProbeReply)

SAMPLE_CODE = (
    *HARNESS_CODE,
    "continuity.arms",
    "continuity.memory",
    "continuity.evidence",
    "continuity.lookup",
    "continuity.preparation",
    "continuity.sampling",
)


class SampleRecord(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = "continuity-arm-sample-v1"
    trace_id: str
    family: str
    arm: str
    checkpoint: str
    classification: Classification
    evidence: SampleEvidence | None
    failure: str | None = None
    # The ledger arm's preparation (unset for every other arm: their bytes are unchanged).
    upkeep: PreparationReceipt | UnsetType = UNSET


def sample_key(arm: Arm, checkpoint_key: str, probe_index: int = 0) -> str:
    return KeySpec(
        kind="arm-sample",
        salt=SAMPLE_SALT,
        code=code_digest(SAMPLE_CODE),
        params={"arm": msgspec.to_builtins(arm), "probe": probe_index},
        inputs={"checkpoint": checkpoint_key},
    ).key()


def run_probe_child(
    workspace: Path, request: ProbeRequest, *, timeout: float = 720.0
) -> SampleEvidence:
    """Run the probe child over `workspace`; raise `CheckpointError` (``child_failed``,
    with the child's own error code in the message) when it fails."""
    return run_probe_process(workspace, request, timeout=timeout)[0]


def run_probe_process(
    workspace: Path,
    request: ProbeRequest,
    *,
    timeout: float = 720.0,
    zygotes: ZygotePool | None = None,
) -> tuple[SampleEvidence, ProcessReceipt]:
    """`run_probe_child`, also returning which processes ran the probe and for how long.
    With `zygotes`, the child is forked from this thread's zygote (`PROBE_TARGET`), not
    started as an interpreter of its own: the same fresh process, without the imports.

    The request goes to the child on its stdin (a zygote's pipe), never through a file:
    it can hold evaluator-only values, and a killed run must leave nothing of it on disk.

    Raises:
        CheckpointError: ``child_failed`` when the child exits non-zero or fails with a
            typed error (its line in the message), prints no evidence, or runs past
            `timeout` (it is killed).
    """
    started = time.monotonic()
    if zygotes is not None:
        child_pid, evidence = _probe_in_zygote(workspace, request, timeout, zygotes)
    else:
        child_pid, out = run_child(
            [
                *(sys.executable, "-m", "continuity.sampling.child", "--workspace", str(workspace)),
                *("--parent-pid", str(os.getpid())),  # the child dies with this process (Linux)
            ],
            msgspec.json.encode(request),
            timeout,
            "probe child",
            str(workspace),
        )
        evidence = _decoded(out, SampleEvidence, workspace)
    receipt = ProcessReceipt(
        probe_index=request.probe_index,
        parent_pid=request.parent_pid,
        child_pid=child_pid,
        elapsed_seconds=round(time.monotonic() - started, 3),
    )
    return evidence, receipt


def _decoded(data: bytes, kind: type[_Reply], workspace: Path) -> _Reply:
    """What the probe child printed (or replied), decoded (``child_failed`` otherwise)."""
    from continuity.harness.checkpoints import decode_reply

    return decode_reply(data, kind, "probe child printed no evidence", workspace)


def _probe_in_zygote(
    workspace: Path, request: ProbeRequest, timeout: float, zygotes: ZygotePool
) -> tuple[int, SampleEvidence]:
    """The probe child forked from this thread's zygote: its pid and evidence.

    Raises:
        CheckpointError: ``child_failed``: a probe that failed with a typed error is
            worded as `run_child` words a child that exited 3 with its error line; a
            child that died, timed out or could not start says so (`Zygote.call`).
    """
    payload = msgspec.json.encode(ProbeCall(str(workspace), request))
    try:
        body = zygotes.call(PROBE_TARGET, payload, timeout, "probe child")
    except ContinuityError as exc:  # the child died or timed out, or its zygote failed
        message = exc.message if exc.code == "child_failed" else str(exc)
        raise CheckpointError(message, code="child_failed", location=str(workspace)) from None
    reply = _decoded(body, ProbeReply, workspace)
    if reply.evidence is None:
        raise CheckpointError(
            f"probe child exited 3: {reply.error or 'no evidence'}",
            code="child_failed",
            location=str(workspace),
        )
    return reply.pid, reply.evidence


def _checkpoint(
    store: Store, trace: Trace, item: SuiteItem, arm: Arm, zygotes: ZygotePool | None
) -> tuple[CheckpointResult | None, str, PreparationReceipt | None]:
    """The checkpoint the arm's sample forks, its key, and (the ledger arm) the receipt
    of its preparation: repeat 1 over the base checkpoint, with the offline binding.
    An invalid preparation has nothing to fork (None)."""
    from continuity.harness.checkpoints import build_checkpoint

    base = build_checkpoint(
        store,
        trace,
        trace_key=item.key,
        trace_digest=item.digest,
        config=replay_config_for(arm),
        zygotes=zygotes,
    )
    if not arm.ledger:
        return base, base.key, None
    prepared = prepare_for_unit(
        store, base, trace, ledger_run(), repeat=1, real=None, zygotes=zygotes
    )
    return prepared.checkpoint, prepared.key, prepared.receipt


def _checkpoint_key(arm: Arm, trace_key: str) -> str:
    """The key of the checkpoint an arm's sample forks (`_checkpoint`)."""
    replay = checkpoint_key(trace_key, replay_config_for(arm))
    return prepared_key(replay, ledger_run(), 1) if arm.ledger else replay


def sample_arm(
    store: Store,
    trace: Trace,
    item: SuiteItem,
    arm: Arm,
    *,
    dump_requests: Path | None = None,
    zygotes: ZygotePool | None = None,
) -> tuple[SampleRecord, str]:
    """Build (or reuse) one arm sample; return it and whether it was ``built``. With
    `zygotes`, a checkpoint it has to replay is replayed, and the probe child runs, in a
    child of this thread's zygote (replays in two threads then run side by side);
    without, the probe child is an interpreter of its own.

    A sample whose probe child failed (busy checkpoint, timeout, crash) is returned but
    not stored, so the next run retries it; a classified sample is stored."""
    from continuity.harness.checkpoints import fork

    checkpoint, forked, upkeep = _checkpoint(store, trace, item, arm, zygotes)
    key = sample_key(arm, forked)
    cached = store.load_output(key) if dump_requests is None else None
    if cached is not None:
        return msgspec.json.decode(cached, type=SampleRecord), "cached"
    if checkpoint is None:  # an invalid preparation: no treatment to probe
        assert upkeep is not None
        record = SampleRecord(
            trace_id=trace.trace_id,
            family=trace.family,
            arm=arm.id,
            checkpoint=forked,
            classification=Classification("treatment_invalid", upkeep.integrity),
            evidence=None,
            upkeep=upkeep,
        )
        return _store_sample(store, key, record, None), "built"
    committed = upkeep.final.id if upkeep is not None and upkeep.final is not None else None
    request = ProbeRequest(
        arm=arm.id,
        probe_text=trace.probes[0].text,
        category=trace.probes[0].category,
        probe_index=0,
        parent_pid=os.getpid(),
        dump_requests=str(dump_requests) if dump_requests else None,
    )
    process: ProcessReceipt | None = None
    try:
        with fork(store, forked) as root:
            evidence, process = run_probe_process(root, request, zygotes=zygotes)
    except CheckpointError as exc:
        record = SampleRecord(
            trace_id=trace.trace_id,
            family=trace.family,
            arm=arm.id,
            checkpoint=forked,
            classification=Classification("failed", [exc.message]),
            evidence=None,
            failure=exc.message,
        )
    else:
        record = SampleRecord(
            trace_id=trace.trace_id,
            family=trace.family,
            arm=arm.id,
            checkpoint=forked,
            classification=classify(arm, evidence, family=trace.family, committed=committed),
            evidence=evidence,
            upkeep=upkeep if upkeep is not None else UNSET,
        )
    if record.failure is not None:
        return record, "built"
    return _store_sample(store, key, record, process), "built"


def _store_sample(
    store: Store, key: str, record: SampleRecord, process: ProcessReceipt | None
) -> SampleRecord:
    blob = store.put_blob(msgspec.json.encode(record))
    store.record_action(
        key,
        kind="arm-sample",
        output=blob,
        inputs={"checkpoint": record.checkpoint},
        meta={
            "trace_id": record.trace_id,
            "arm": record.arm,
            "status": record.classification.status,
            # Beside the record, never in it: pids and times differ between two builds.
            "processes": msgspec.to_builtins([process] if process is not None else []),
        },
    )
    return record


class ArmsManifest(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = "continuity-arm-samples-v1"
    suite: str
    samples: list[SampleRecord]


def build_arm_samples(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    arms: str | None = None,
    traces: str | None = None,
    out_dir: Path | None = None,
    progress: Tick | None = None,
    jobs: int = DEFAULT_JOBS,
    zygotes: ZygotePool | None = None,
) -> tuple[list[SampleRecord], Path, int]:
    """Run one sample per trace and arm, `jobs` traces at a time, each probe child and
    checkpoint replay forked from a zygote: `zygotes` when given (a caller running
    several stages starts its zygotes once), else a pool of this call's. Returns the
    records, the manifest path (``out/checkpoints/<suite>/arms.json``) and how many were
    built."""
    from continuity.runner.checkpoints import select_traces
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    out = out_dir or resolve_out_path()
    result = build_suite(store, suite, seeds, out_dir=out)
    chosen = set(select_traces([i.trace_id for i in result.items], traces))
    items = [i for i in result.items if i.trace_id in chosen]
    plans: list[tuple[SuiteItem, Trace, Arm]] = []
    for item in items:
        trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
        plans.extend((item, trace, arm) for arm in parse_arms(arms, family=trace.family))
    # Started only when a thread has a sample to build: a cached run starts none.
    with contextlib.ExitStack() as stack:
        pool = zygotes or stack.enter_context(ZygotePool(ZYGOTE_PRELOAD))
        done = run_grouped(
            plans,
            group_of=lambda plan: plan[0].trace_id,
            work=lambda plan: sample_arm(store, plan[1], plan[0], plan[2], zygotes=pool),
            describe=lambda plan: f"{plan[0].trace_id} {plan[2].id}",
            jobs=jobs,
            progress=progress,
        )
    records = [record for record, _ in done]
    built = sum(1 for _, status in done if status == "built")
    keys = [
        sample_key(arm, record.checkpoint)
        for (_, _, arm), record in zip(plans, records, strict=True)
    ]
    store.record_plan(f"arms --suite {suite}", actions=keys)
    path = _arms_path(out, suite)
    write_json(path, ArmsManifest(suite=suite, samples=records))
    return records, path, built


def _arms_path(out: Path, suite: str) -> Path:
    return out / "checkpoints" / suite / "arms.json"


def arm_samples_current(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    arms: str | None = None,
    traces: str | None = None,
    out_dir: Path | None = None,
) -> bool:
    """Whether `build_arm_samples` would build nothing (store and manifest only)."""
    from continuity.errors import ContinuityError
    from continuity.runner.checkpoints import select_traces

    try:
        specs = suite_specs(suite, seeds)
        entries = [(s.spec.key(), store.get_action(s.spec.key())) for s in specs]
        if any(e is None for _, e in entries):
            return False
        by_id = {str(e.meta["trace_id"]): (k, str(e.meta["family"])) for k, e in entries if e}
        chosen = select_traces(list(by_id), traces)
        manifest = msgspec.json.decode(
            _arms_path(out_dir or resolve_out_path(), suite).read_bytes(), type=ArmsManifest
        )
        expected: set[tuple[str, str]] = set()
        for trace_id in chosen:
            trace_key, family = by_id[trace_id]
            for arm in parse_arms(arms, family=family):
                if store.get_action(sample_key(arm, _checkpoint_key(arm, trace_key))) is None:
                    return False
                expected.add((trace_id, arm.id))
        return {(r.trace_id, r.arm) for r in manifest.samples} == expected
    except (ContinuityError, OSError, msgspec.MsgspecError):
        return False
