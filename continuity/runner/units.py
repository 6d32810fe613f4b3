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

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.arms import Arm, parse_arms, replay_config_for
from continuity.digest import KeySpec, code_digest, value_digest
from continuity.errors import CheckpointError
from continuity.evidence import classify
from continuity.harness.compaction import CompactionEvent
from continuity.harness.messages import Usage
from continuity.harness.receipts import SampleEvidence
from continuity.outputs import resolve_out_path, write_output
from continuity.probes.availability import Availability, availability, loss, needles_for
from continuity.probes.judge import JudgeVerdict, ScriptedJudge
from continuity.probes.scoring import score_answer
from continuity.progress import Tick
from continuity.runner.parallel import run_by_trace
from continuity.runner.samples import DEFAULT_JOBS, SAMPLE_CODE
from continuity.store import Store
from continuity.traces.schema import NextActionExpectation, Trace

if TYPE_CHECKING:
    from continuity.traces.suites import SuiteItem

__all__ = [
    "UNIT_SALT",
    "ProbeResult",
    "UnitRecord",
    "build_units",
    "run_unit",
    "seal",
    "unit_filename",
    "unit_key",
]

UNIT_SALT = "unit-v1"
UNIT_CODE = (*SAMPLE_CODE, "continuity.probes", "continuity.runner.units")
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
    content_digest: str = ""


def unit_key(
    repeat: int, trace_key: str, arm: Arm, checkpoint_key: str, probe_ids: Sequence[str]
) -> str:
    return KeySpec(
        kind="unit",
        salt=UNIT_SALT,
        code=code_digest(UNIT_CODE),
        params={"repeat": repeat, "arm": msgspec.to_builtins(arm), "probes": list(probe_ids)},
        inputs={"checkpoint": checkpoint_key, "trace": trace_key},
    ).key()


def content_digest(record: UnitRecord) -> str:
    """The digest of a unit's content, its own digest field left empty."""
    blank = msgspec.structs.replace(record, content_digest="")
    return value_digest(("continuity-unit", msgspec.json.encode(blank)))


def seal(record: UnitRecord) -> UnitRecord:
    return msgspec.structs.replace(record, content_digest=content_digest(record))


def unit_filename(record: UnitRecord) -> str:
    return f"r{record.repeat}-{record.trace_id}-{record.arm}.json"


def _run_worker(request: object, timeout: float) -> list[dict[str, object]]:
    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as handle:
        handle.write(msgspec.json.encode(request))
    try:
        result = subprocess.run(
            [sys.executable, "-m", "continuity.harness.unit", "--request", handle.name],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        os.unlink(handle.name)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or ["no output"]
        raise CheckpointError(
            f"unit worker exited {result.returncode}: {lines[-1]}", code="child_failed"
        )
    outcomes = json.loads(result.stdout)["outcomes"]
    assert isinstance(outcomes, list)
    return outcomes


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
) -> tuple[UnitRecord, str]:
    """Build (or reuse) one unit; return it and ``built`` or ``cached``."""
    from continuity.harness.checkpoints import build_checkpoint, checkpoint_lock
    from continuity.harness.unit import ProbeSpec, UnitRequest

    checkpoint = build_checkpoint(
        store, trace, trace_key=item.key, trace_digest=item.digest, config=replay_config_for(arm)
    )
    probes = list(trace.probes[:probe_limit] if probe_limit else trace.probes)
    key = unit_key(repeat, item.key, arm, checkpoint.key, [p.probe_id for p in probes])
    cached = store.load_output(key) if dump_requests is None else None
    if cached is not None:
        return msgspec.json.decode(cached, type=UnitRecord), "cached"
    specs = []
    for index, probe in enumerate(probes):
        needles = needles_for(probe.expectation)
        specs.append(ProbeSpec(index, probe.text, needles.fact + needles.superseded))
    request = UnitRequest(
        store_root=str(store.root),
        tree=checkpoint.tree.digest,
        workspace=checkpoint.root,
        arm=arm.id,
        probes=specs,
        dump_requests=str(dump_requests) if dump_requests else None,
    )
    with checkpoint_lock(store, checkpoint.key):  # no other fork while the unit runs
        outcomes = _run_worker(request, timeout)
    results = []
    judge = ScriptedJudge()
    verdicts = []
    for probe, raw in zip(probes, outcomes, strict=True):
        evidence = msgspec.convert(raw["evidence"], SampleEvidence) if raw.get("evidence") else None
        if evidence is None:
            results.append(
                ProbeResult(
                    probe_id=probe.probe_id,
                    index=int(str(raw["index"])),
                    category=probe.category,
                    design_role=probe.design_role,
                    status="failed",
                    reasons=[str(raw.get("error"))],
                    answer="",
                )
            )
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
            compaction_usage=evidence.compaction_usage,
            compactions=[
                c for c in (evidence.compaction, *evidence.mid_run_compactions) if c is not None
            ],
            evidence=evidence,
        )
        if verdict.status != "valid":
            results.append(result)  # excluded: kept with its class, never scored
            continue
        score = score_answer(probe.expectation, evidence.answer)
        needles = needles_for(probe.expectation)
        states = evidence.needle_states
        available = availability(needles, states[: len(needles.fact)], states[len(needles.fact) :])
        results.append(
            msgspec.structs.replace(
                result,
                outcome=score.outcome,
                correct=score.correct,
                score_reason=score.reason,
                availability=available,
                loss=loss(available, score),
            )
        )
        if isinstance(probe.expectation, NextActionExpectation):
            verdicts.append(
                judge.judge(
                    probe.probe_id,
                    probe.text,
                    evidence.answer,
                    [f.value for f in probe.expectation.keywords],
                )
            )
    record = seal(
        UnitRecord(
            key=key,
            repeat=repeat,
            family=trace.family,
            trace_id=trace.trace_id,
            trace_key=item.key,
            arm=arm.id,
            checkpoint=checkpoint.key,
            probe_ids=[p.probe_id for p in probes],
            probes=results,
            judge=verdicts,
        )
    )
    blob = store.put_blob(msgspec.json.encode(record))
    store.record_action(
        key,
        kind="unit",
        output=blob,
        inputs={"checkpoint": checkpoint.key, "trace": item.key},
        meta={"trace_id": trace.trace_id, "arm": arm.id, "repeat": repeat},
    )
    return record, "built"


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
) -> tuple[list[UnitRecord], Path, int]:
    """Run every unit of the selection; materialise them under ``<run>/units/``.

    Returns the records, the units directory and how many units were built.
    """
    from continuity.runner.checkpoints import select_traces
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    run = run_dir or resolve_out_path() / "runs" / "offline"
    result = build_suite(store, suite, seeds, out_dir=run.parent.parent)
    chosen = set(select_traces([i.trace_id for i in result.items], traces))
    plans: list[tuple[SuiteItem, Trace, Arm, int]] = []
    for item in (i for i in result.items if i.trace_id in chosen):
        trace = load_trace(store.get_blob(item.digest), source=item.trace_id)
        plans.extend(
            (item, trace, arm, repeat)
            for repeat in range(1, repeats + 1)
            for arm in parse_arms(arms, family=trace.family)
        )
    done = run_by_trace(
        plans,
        trace_of=lambda plan: plan[0].trace_id,
        work=lambda plan: run_unit(
            store, plan[1], plan[0], plan[2], repeat=plan[3], probe_limit=probe_limit
        ),
        describe=lambda plan: f"r{plan[3]} {plan[0].trace_id} {plan[2].id}",
        jobs=jobs,
        progress=progress,
    )
    records = [record for record, _ in done]
    built = sum(1 for _, status in done if status == "built")
    folder = run / "units"
    for record in records:
        write_output(
            folder / unit_filename(record), msgspec.json.format(msgspec.json.encode(record)) + b"\n"
        )
    store.record_plan(f"units --suite {suite}", actions=[r.key for r in records])
    return records, folder, built
