"""Units: one record per repeat x trace x arm, holding every probe's answer and score.

A unit forks the arm's checkpoint (holding its lock for the whole unit) and runs the
unit worker, which gives every probe a fresh process on a fresh copy of the snapshot.
Each probe's sample is classified from its evidence; only ``valid`` samples are scored
and analysed for availability. Excluded samples stay in the unit with their class and
reasons: never scored, never dropped.

A unit is a store artifact keyed by its repeat, the arm's definition, the probe ids, the
harness, scoring and runner code, and the checkpoint and trace keys. Its materialised
file ``units/r<repeat>-<trace>-<arm>.json`` carries that key and a content digest, so the
aggregator can refuse a tampered or mislabelled file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from continuity.arms import Arm, parse_arms, replay_config_for
from continuity.digest import KeySpec, code_digest, value_digest
from continuity.errors import CheckpointError, ContinuityError, ObjectMissing, UsageError
from continuity.evidence import classify
from continuity.harness.compaction import CompactionEvent
from continuity.lookup.receipts import LookupBinding, LookupWitness
from continuity.messages import Usage
from continuity.outputs import resolve_out_path, write_output
from continuity.probe.receipts import ProcessReceipt, SampleEvidence
from continuity.probes.availability import (
    Availability,
    NeedleState,
    availability,
    fact_count,
    loss,
    needles_for,
)
from continuity.probes.judge import Judge, JudgeCase, JudgeVerdict, ProviderJudge, ScriptedJudge
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.probes.scoring import DEFAULT_LOCALE, Locale, locale_for, score_answer
from continuity.progress import Tick
from continuity.providers.endpoint import CallReceipt, EndpointSpec, RealBinding
from continuity.runner.lookup_run import LookupRun, check_coverage, check_lookup_slots
from continuity.runner.parallel import run_by_trace
from continuity.runner.samples import DEFAULT_JOBS, SAMPLE_CODE
from continuity.store import Store
from continuity.traces.schema import Probe, Trace

if TYPE_CHECKING:
    from continuity.probe.worker import ProbeOutcome, UnitRequest
    from continuity.traces.suites import SuiteItem

__all__ = [
    "UNIT_CODE",
    "UNIT_SALT",
    "UNIT_SCHEMA",
    "LookupRun",
    "ProbeResult",
    "RealRun",
    "RunIncomplete",
    "UnitRecord",
    "build_units",
    "content_digest",
    "replayed_calls",
    "run_unit",
    "score_result",
    "seal",
    "store_unit",
    "unit_filename",
    "unit_key",
]

UNIT_SALT = "unit-v1"
UNIT_CODE = (
    *SAMPLE_CODE,
    # Not the scorer (scoring, normalise, availability): a unit's grades are its original
    # grades; a corrected scorer writes score artifacts beside it (continuity.report.scores)
    # and never re-keys or rewrites a unit.
    "continuity.probes.protocol",
    "continuity.probes.judge",
    "continuity.runner.units",
    "continuity.runner.lookup_run",
)
UNIT_SCHEMA = "continuity-unit-v1"


class ProbeResult(msgspec.Struct, frozen=True, kw_only=True):
    probe_id: str
    index: int
    category: str
    design_role: str | None
    status: str  # the sample's classification: valid or an exclusion class
    reasons: list[str]
    answer: str
    outcome: str | None = None
    correct: bool | None = None
    score_reason: str | None = None
    availability: Availability | None = None
    loss: str | None = None
    history_calls: int = 0
    # Lookup mode: a failed child's last witness (its meter state survives the failure).
    witness: LookupWitness | None = None
    usage: Usage = Usage()
    compaction_usage: Usage = Usage()
    compactions: list[CompactionEvent] = msgspec.field(default_factory=list)
    evidence: SampleEvidence | None = None


class UnitRecord(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = UNIT_SCHEMA
    key: str
    repeat: int
    family: str
    trace_id: str
    trace_key: str
    arm: str
    checkpoint: str
    probe_ids: list[str]
    probes: list[ProbeResult]
    judge: list[JudgeVerdict]
    # Real mode: the endpoint binding the unit ran on (None offline) and the judge's
    # call receipts.
    binding: dict[str, Any] | None = None
    judge_calls: list[CallReceipt] = msgspec.field(default_factory=list)
    # The probe protocol its reader saw (`continuity.probes.protocol`); "" = a unit made
    # before protocol v2, when the probe turn was the probe text alone.
    probe_protocol: str = ""
    # Coverage (None = a unit made before these were recorded): `complete` is False when
    # any planned slot was skipped (inventory-infeasible); `eligible_terminal` is True
    # when every eligible probe has a terminal result (valid, excluded or failed). A
    # terminal unit is never run again, complete or not.
    complete: bool | None = None
    eligible_terminal: bool | None = None
    # Real mode, arm (d): the receipts of the checkpoint's mid-trace compaction, one real
    # summarizer call per repeat shared by the repeat's probes (its usage is also in every
    # probe's compaction usage, the per-sample convention; list prices count it once).
    mid_trace_calls: list[CallReceipt] = msgspec.field(default_factory=list)
    content_digest: str = ""


def unit_key(
    repeat: int,
    trace_key: str,
    arm: Arm,
    checkpoint_key: str,
    probe_ids: Sequence[str],
    binding: dict[str, Any] | None = None,
    protocol: str = "",
) -> str:
    """A unit's key. `protocol` is the probe protocol the unit's reader saw (every new
    unit binds `PROBE_PROTOCOL`; "" recomputes the key of a unit made before v2)."""
    params: dict[str, Any] = {
        "repeat": repeat,
        "arm": msgspec.to_builtins(arm),
        "probes": list(probe_ids),
    }
    if binding is not None:  # real mode; offline keys stay as they were
        params["binding"] = binding
    if protocol:
        params["protocol"] = protocol
    return KeySpec(
        kind="unit",
        salt=UNIT_SALT,
        code=code_digest(UNIT_CODE),
        params=params,
        inputs={"checkpoint": checkpoint_key, "trace": trace_key},
    ).key()


class RealRun(msgspec.Struct, frozen=True, kw_only=True):
    """A real-mode invocation: the reader and judge endpoints and the shared state of
    this invocation (its ledger and, optionally, the call-key explain log)."""

    reader: EndpointSpec
    judge: EndpointSpec | None
    ledger: str
    explain_log: str | None = None

    def binding(self) -> dict[str, Any]:
        """What the unit key binds (never the credentials path or execution knobs)."""

        def part(spec: EndpointSpec | None) -> dict[str, Any] | None:
            if spec is None:
                return None
            return {
                "kind": spec.kind,
                "base_url": spec.base_url,
                "model": spec.model,
                "generation": spec.generation(),
                "ref": spec.catalog_ref,
            }

        return {"reader": part(self.reader), "judge": part(self.judge)}


def content_digest(record: UnitRecord) -> str:
    """The digest of a unit's content, its own digest field left empty."""
    blank = msgspec.structs.replace(record, content_digest="")
    return value_digest(("continuity-unit", msgspec.json.encode(blank)))


def seal(record: UnitRecord) -> UnitRecord:
    return msgspec.structs.replace(record, content_digest=content_digest(record))


def unit_filename(record: UnitRecord) -> str:
    return f"r{record.repeat}-{record.trace_id}-{record.arm}.json"


def run_worker(request: UnitRequest, timeout: float) -> list[ProbeOutcome]:
    """Run the unit worker on `request` and return its outcomes, one per probe.

    The request (probe texts and the evaluator-only needles) goes to the worker on its
    stdin, never through a file, so a killed run leaves nothing of it on disk.

    Raises:
        CheckpointError: ``child_failed`` when the worker exits non-zero, prints no
            result, or runs past `timeout` (it is killed).
    """
    from continuity.probe.worker import UnitWorkerResult

    with subprocess.Popen(
        # The worker dies with this process (Linux), and its probe children with it.
        [sys.executable, "-m", "continuity.probe.worker", "--parent-pid", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as worker:
        try:
            out, err = worker.communicate(msgspec.json.encode(request), timeout=timeout)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.communicate()
            raise CheckpointError(
                f"unit worker ran past its {timeout:.0f} s timeout and was killed",
                code="child_failed",
            ) from None
    if worker.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines() or ["no output"]
        raise CheckpointError(
            f"unit worker exited {worker.returncode}: {lines[-1]}", code="child_failed"
        )
    try:
        return msgspec.json.decode(out, type=UnitWorkerResult).outcomes
    except msgspec.MsgspecError as exc:
        raise CheckpointError(
            f"unit worker printed no result: {exc}", code="child_failed"
        ) from None


def run_unit(
    store: Store,
    trace: Trace,
    item: SuiteItem,
    arm: Arm,
    *,
    repeat: int = 1,
    probe_limit: int | None = None,
    dump_requests: Path | None = None,
    timeout: float = 3600.0,
    real: RealRun | None = None,
    lookup: LookupRun | None = None,
    judge: str | None = None,
) -> tuple[UnitRecord, str]:
    """Build (or reuse) one unit; return it and ``built`` or ``cached``.

    With a judge (offline: `judge`, the plan's judge model, played by the scripted judge;
    real: `real.judge`) every valid answer gets a verdict; without one, none does.

    In lookup mode, slots the policy classes as inventory-infeasible get an
    ``inventory_infeasible`` result with no usage, score or answer; only eligible probes
    run, and a unit with none needs no checkpoint.

    In real mode a unit whose probe or judge call failed (a provider error, or a stop
    rule refusing admission) is returned as ``incomplete``: it is neither stored nor
    materialised, so the next run retries it, and its finished calls come from the call
    cache. A stored unit is terminal (`UnitRecord.eligible_terminal`) and is never run
    again, complete or not.

    In real mode an arm with a mid-trace compaction (d) forks a checkpoint of its own
    per repeat, whose mid-trace summary is a real summarizer call."""
    from continuity.harness.checkpoints import build_checkpoint, checkpoint_lock
    from continuity.harness.keys import checkpoint_key
    from continuity.probe.worker import ProbeSpec, UnitRequest

    config = (
        replay_config_for(arm, "lookup-allowed-v1", lookup.models())
        if lookup is not None
        else replay_config_for(arm)
    )
    probes = list(trace.probes[:probe_limit] if probe_limit else trace.probes)
    binding = real.binding() if real is not None else lookup.binding() if lookup else None
    if real is None and judge:  # offline: the scripted judge plays the plan's judge
        binding = {**(binding or {}), "judge": ScriptedJudge.name}
    real_binding = _real_binding(real, store, repeat)
    mid_real = real_binding if config.mid_trace_compaction else None
    planned_checkpoint = checkpoint_key(item.key, config, mid_real)
    ids = [p.probe_id for p in probes]
    key = unit_key(repeat, item.key, arm, planned_checkpoint, ids, binding, PROBE_PROTOCOL)
    cached = store.load_output(key) if dump_requests is None else None
    if cached is not None:
        stored = msgspec.json.decode(cached, type=UnitRecord)
        if stored.eligible_terminal is not False:  # terminal: never replayed
            return stored, "cached"
    specs = []
    skipped: dict[str, str] = {}
    for index, probe in enumerate(probes):
        needles = needles_for(probe.expectation, trace)
        binding_for_probe = None
        if lookup is not None:
            sources, slot = lookup.disposition(trace, arm, probe)
            if slot not in ("feasible", "unannotated"):
                skipped[probe.probe_id] = slot
                continue
            binding_for_probe = LookupBinding(
                call_budget=lookup.policy.calls,
                byte_budget=lookup.policy.bytes,
                soul_sha256=lookup.soul_sha256,
                soul_core_sha256=lookup.soul_core_sha256,
                sources=sources,
                models=lookup.models(),
            )
        specs.append(
            ProbeSpec(index, probe.text, needles.fact + needles.superseded, binding_for_probe)
        )
    if not specs:  # every slot inventory-infeasible: no checkpoint, no worker
        empty = _seal(
            key, item, trace, arm, repeat, planned_checkpoint, probes, [], skipped, binding
        )
        return store_unit(store, empty), "built"
    try:
        checkpoint = build_checkpoint(
            store,
            trace,
            trace_key=item.key,
            trace_digest=item.digest,
            config=config,
            real=mid_real,
        )
    except ContinuityError as error:
        if mid_real is None:
            raise
        # The real mid-trace summary failed (or admission stopped): nothing is stored,
        # every eligible probe is unstarted, and the next run retries the unit.
        failed = [
            _failed(p, i, str(error)) for i, p in enumerate(probes) if p.probe_id not in skipped
        ]
        record = _seal(
            key, item, trace, arm, repeat, planned_checkpoint, probes, failed, skipped, binding
        )
        return msgspec.structs.replace(record, eligible_terminal=False), "incomplete"
    assert checkpoint.key == planned_checkpoint
    mid_calls = list(checkpoint.receipt.mid_trace_calls)
    request = UnitRequest(
        store_root=str(store.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=arm.id,
        probes=specs,
        dump_requests=str(dump_requests) if dump_requests else None,
        real=real_binding,
        watchdog_seconds=lookup.watchdog_seconds if lookup is not None else None,
    )
    with checkpoint_lock(store, checkpoint.key):  # no other fork while the unit runs
        outcomes = run_worker(request, timeout)
    results = []
    grader = _unit_judge(store, real, judge, repeat)
    judged: list[JudgeCase] = []
    incomplete: list[str] = []
    eligible = [p for p in probes if p.probe_id not in skipped]
    # Pids and times: kept beside the unit (its action entry's meta), never in it.
    processes: list[ProcessReceipt] = [o.process for o in outcomes if o.process is not None]
    for probe, outcome in zip(eligible, outcomes, strict=True):
        evidence = outcome.evidence
        if evidence is None:
            incomplete.append(str(outcome.error))
            results.append(_failed(probe, outcome.index, str(outcome.error), outcome.witness))
            continue
        verdict = classify(arm, evidence, family=trace.family)
        result = ProbeResult(
            probe_id=probe.probe_id,
            index=evidence.probe_index,
            category=probe.category,
            design_role=probe.design_role,
            status=verdict.status,
            reasons=verdict.reasons,
            answer=evidence.answer,
            history_calls=len(evidence.history_calls),
            usage=evidence.usage,
            # Real (d): the repeat's mid-trace summary counts in each sample that used it.
            compaction_usage=evidence.compaction_usage,
            compactions=[
                c for c in (evidence.compaction, *evidence.mid_run_compactions) if c is not None
            ],
            evidence=evidence,
        )
        if verdict.status != "valid":
            results.append(result)  # excluded: kept with its class, never scored
            continue
        locale = locale_for(trace.family)
        results.append(score_result(result, probe, evidence.needle_states, locale=locale))
        # The judge gets the question, the expectation and the answer: never the arm.
        judged.append(JudgeCase(probe.probe_id, probe.text, probe.expectation, evidence.answer))
    verdicts: list[JudgeVerdict] = []
    if grader is not None and judged:
        try:
            verdicts = grader.verdicts(judged)
        except ContinuityError as error:
            if real is None:
                raise
            incomplete.append(str(error))  # finished verdicts come from the call cache
    record = _seal(
        key,
        item,
        trace,
        arm,
        repeat,
        checkpoint.key,
        probes,
        results,
        skipped,
        binding,
        verdicts,
        list(getattr(grader, "receipts", [])),
    )
    record = msgspec.structs.replace(
        record,
        mid_trace_calls=mid_calls,
        eligible_terminal=real is None or not incomplete,
        content_digest="",
    )
    if real is not None and incomplete:
        return record, "incomplete"  # neither stored nor materialised: the next run retries
    # Which calls were replayed from the call cache differs between two builds of one key:
    # the probes' are in their ProcessReceipts; the judge's and the mid-trace summary's
    # (None: this build reused the checkpoint, so it made no mid-trace call) beside them.
    return store_unit(
        store,
        seal(record),
        processes=msgspec.to_builtins(processes),
        judge_replayed=list(getattr(grader, "replayed", [])),
        mid_trace_replayed=checkpoint.replayed_calls if checkpoint.status == "built" else None,
    ), "built"


def _unit_judge(store: Store, real: RealRun | None, judge: str | None, repeat: int) -> Judge | None:
    """The unit's judge: the judge model behind the call cache in real mode, the scripted
    judge offline when the plan has a judge, else none."""
    if real is not None:
        if real.judge is None:
            return None
        return ProviderJudge(
            real.judge,
            str(store.root),
            repeat=repeat,
            ledger=real.ledger,
            explain_log=real.explain_log,
        )
    return ScriptedJudge() if judge else None


def _real_binding(real: RealRun | None, store: Store, repeat: int) -> RealBinding | None:
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


def _failed(
    probe: Probe, index: int, reason: str, witness: LookupWitness | None = None
) -> ProbeResult:
    """A probe with no sample: its child (or the unit's checkpoint) failed."""
    return ProbeResult(
        probe_id=probe.probe_id,
        index=index,
        category=probe.category,
        design_role=probe.design_role,
        status="failed",
        reasons=[reason],
        answer="",
        witness=witness,
    )


def _seal(
    key: str,
    item: SuiteItem,
    trace: Trace,
    arm: Arm,
    repeat: int,
    checkpoint: str,
    probes: Sequence[Probe],
    results: list[ProbeResult],
    skipped: dict[str, str],
    binding: dict[str, Any] | None,
    verdicts: list[JudgeVerdict] | None = None,
    judge_calls: list[CallReceipt] | None = None,
) -> UnitRecord:
    """The sealed record, with inventory-infeasible slots in their probe order."""
    ran = {r.probe_id: r for r in results}
    ordered = []
    for index, probe in enumerate(probes):
        if probe.probe_id in skipped:
            ordered.append(
                ProbeResult(
                    probe_id=probe.probe_id,
                    index=index,
                    category=probe.category,
                    design_role=probe.design_role,
                    status="inventory_infeasible",
                    reasons=[skipped[probe.probe_id]],
                    answer="",
                )
            )
        else:
            ordered.append(ran[probe.probe_id])
    return seal(
        UnitRecord(
            key=key,
            repeat=repeat,
            family=trace.family,
            trace_id=trace.trace_id,
            trace_key=item.key,
            arm=arm.id,
            checkpoint=checkpoint,
            probe_ids=[p.probe_id for p in probes],
            probes=ordered,
            judge=verdicts or [],
            binding=binding,
            judge_calls=judge_calls or [],
            probe_protocol=PROBE_PROTOCOL,
            complete=not skipped,
            eligible_terminal=True,
        )
    )


def score_result(
    result: ProbeResult,
    probe: Probe,
    states: Sequence[NeedleState],
    *,
    locale: Locale = DEFAULT_LOCALE,
) -> ProbeResult:
    """A valid probe result scored against its probe's expectation: outcome, the
    scorer's reason, availability from the recorded needle states, and the loss label.
    `locale` is the trace family's numeric-date locale (`locale_for`).
    (`doit score` re-runs exactly this on recorded answers.)"""
    score = score_answer(probe.expectation, result.answer, locale=locale)
    facts = fact_count(probe.expectation)
    available = availability(facts, states[:facts], states[facts:])
    return msgspec.structs.replace(
        result,
        outcome=score.outcome,
        correct=score.correct,
        score_reason=score.reason,
        availability=available,
        loss=loss(available, score),
    )


def store_unit(store: Store, record: UnitRecord, **meta: Any) -> UnitRecord:
    """Record a sealed unit in the store under its key (what later runs reuse).

    The record is deterministic bytes (two builds of one key write the same blob);
    what differs between builds (the probes' `ProcessReceipt`s, the replayed call keys)
    goes in `meta`."""
    store.record_action(
        record.key,
        kind="unit",
        output=store.put_blob(msgspec.json.encode(record)),
        inputs={"checkpoint": record.checkpoint, "trace": record.trace_key},
        meta={"trace_id": record.trace_id, "arm": record.arm, "repeat": record.repeat, **meta},
    )
    return record


def replayed_calls(store: Store, record: UnitRecord) -> set[str]:
    """The keys of the calls the unit's build replayed from the call cache instead of
    making them (its probes', its judge's and its mid-trace summary's), read from its
    action entry's meta: the sealed unit does not say. Empty when the store holds no
    entry for it (nothing is known to have been replayed)."""
    entry = store.get_action(record.key, verify_output=False)
    if entry is None:
        return set()
    keys = {
        key
        for process in msgspec.convert(entry.meta.get("processes") or [], list[ProcessReceipt])
        for key in process.replayed_calls
    }
    keys.update(entry.meta.get("judge_replayed") or [])
    keys.update(entry.meta.get("mid_trace_replayed") or [])
    return keys


def _refuse_second_observations(records: Sequence[UnitRecord], folder: Path) -> None:
    """Lookup mode never replaces one observation of a slot with another: a unit file
    already holding a different unit (another key) for the same repeat, trace and arm
    stops the run before anything is written.

    Raises:
        UsageError: ``lookup_slot_observed``, naming the first such file.
    """
    clashes = []
    for record in records:
        path = folder / unit_filename(record)
        try:
            present = msgspec.json.decode(path.read_bytes(), type=UnitRecord).key
        except FileNotFoundError:
            continue
        except (OSError, msgspec.MsgspecError):
            present = "?"
        if present != record.key:
            clashes.append(path)
    if clashes:
        raise UsageError(
            f"{len(clashes)} unit files of this run already hold another observation of "
            f"their slot (first: {clashes[0].name}); lookup mode never overwrites one. "
            "Use a new --run, or remove those files to discard the old observations. The "
            "new units are in the store, so the rerun only materialises them",
            code="lookup_slot_observed",
            location=str(clashes[0]),
        )


def _materialise(store: Store, folder: Path, record: UnitRecord) -> UnitRecord:
    """Write a stored unit's file from the store's copy, never from memory: when another
    invocation built the same key concurrently, the file is what the store keeps.

    Raises:
        ObjectMissing: ``object_missing`` when the store no longer holds the unit (a
            concurrent ``doit gc``, or its blob failed its digest); rerun to rebuild it.
    """
    stored = store.load_output(record.key)
    if stored is None:
        raise ObjectMissing(
            f"unit {record.key[:16]} ({unit_filename(record)}) was stored but the store no "
            "longer holds a verified copy; run the same command again to rebuild it",
            location=str(folder / unit_filename(record)),
        )
    write_output(folder / unit_filename(record), msgspec.json.format(stored) + b"\n")
    return msgspec.json.decode(stored, type=UnitRecord)


class RunIncomplete(ContinuityError):
    """Some units of a real run did not finish; the finished ones are kept."""

    default_code = "run_incomplete"


def build_units(
    store: Store,
    suite: str,
    seeds: Sequence[int] | None = None,
    *,
    arms: str | None = None,
    repeats: int = 1,
    traces: str | None = None,
    probe_limit: int | None = None,
    run_dir: Path | None = None,
    progress: Tick | None = None,
    jobs: int = DEFAULT_JOBS,
    only_repeats: Sequence[int] | None = None,
    real: RealRun | None = None,
    max_observed_input_tokens: int | None = None,
    traces_root: Path | None = None,
    lookup: LookupRun | None = None,
    judge: str | None = None,
) -> tuple[list[UnitRecord], Path, int]:
    """Run every unit of the selection; materialise them under ``<run>/units/``.

    `traces` and `only_repeats` select part of the plan (they never change a unit's
    key). In real mode, `real.ledger` names this invocation's ledger, created here with
    the selection's live-turn count and the observed-input cap. Offline, `judge` (the
    plan's judge model) has the scripted judge grade every valid answer.

    Returns the records, the units directory and how many units were built.
    Raises:
        RunIncomplete: real mode only, after the finished units are written:
            ``run_stopped`` when a stop rule fired, else ``run_incomplete``.
    """
    from continuity.runner.checkpoints import select_traces
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    run = run_dir or resolve_out_path() / "runs" / "offline"
    result = build_suite(store, suite, seeds, out_dir=traces_root or run.parent.parent)
    chosen = set(select_traces([i.trace_id for i in result.items], traces))
    wanted = set(only_repeats) if only_repeats else None
    if wanted is not None and not wanted <= set(range(1, repeats + 1)):
        raise UsageError(
            f"--repeat {sorted(wanted)} is outside the plan's repeats 1-{repeats}",
            code="repeat_unknown",
            location="--repeat",
        )
    plans: list[tuple[SuiteItem, Trace, Arm, int]] = []
    for item in (i for i in result.items if i.trace_id in chosen):
        trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
        plans.extend(
            (item, trace, arm, repeat)
            for repeat in range(1, repeats + 1)
            if wanted is None or repeat in wanted
            for arm in parse_arms(
                arms,
                family=trace.family,
                probe_mode="lookup-allowed-v1" if lookup is not None else "recall-only",
            )
        )
    if lookup is not None:
        check_lookup_slots(lookup, plans, probe_limit, run)
    ledger = None
    if real is not None:
        from continuity.providers.cache import Ledger

        planned = sum(
            len(t.probes[:probe_limit] if probe_limit else t.probes) for _, t, _, _ in plans
        )
        ledger = Ledger.create(
            Path(real.ledger),
            planned_live_turns=planned,
            max_observed_input_tokens=max_observed_input_tokens,
        )
    try:
        done = run_by_trace(
            plans,
            trace_of=lambda plan: plan[0].trace_id,
            work=lambda plan: run_unit(
                store,
                plan[1],
                plan[0],
                plan[2],
                repeat=plan[3],
                probe_limit=probe_limit,
                real=real,
                lookup=lookup,
                judge=judge,
            ),
            describe=lambda plan: f"r{plan[3]} {plan[0].trace_id} {plan[2].id}",
            jobs=jobs,
            progress=progress,
        )
        state = ledger.state() if ledger is not None else None
    finally:
        if ledger is not None:
            ledger.close()
    records = [record for record, status in done if status != "incomplete"]
    missing = [record for record, status in done if status == "incomplete"]
    built = sum(1 for _, status in done if status == "built")
    folder = run / "units"
    if lookup is not None:
        _refuse_second_observations(records, folder)
    records = [_materialise(store, folder, record) for record in records]
    store.record_plan(f"units --suite {suite}", actions=[r.key for r in records])
    if lookup is not None:
        check_coverage(records, folder)  # lookup_partial_coverage, after materialising
    if missing:
        assert state is not None
        first = next(
            (p.reasons[0] for r in missing for p in r.probes if p.status == "failed" and p.reasons),
            "a judge call failed",
        )
        stopped = state.get("stopped")
        raise RunIncomplete(
            f"{len(missing)} of {len(done)} units did not finish "
            f"({len(records)} kept in {folder}); "
            + (f"admission stopped: {stopped}; " if stopped else f"first error: {first}; ")
            + f"{state['admitted']} live turns admitted of {state['planned']} planned, "
            f"{state['observed_input']:,} input tokens observed over {state['calls']} calls. "
            "Run the same command again to resume: finished units and calls are reused.",
            code="run_stopped" if stopped else "run_incomplete",
            location=str(run),
        )
    return records, folder, built
