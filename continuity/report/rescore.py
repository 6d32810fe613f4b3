"""Re-score a run's recorded answers with the current scorer, calling no model.

`doit score` reads every unit file of a run, checks its content digest, and scores each
valid probe's recorded answer again (outcome, correctness, availability and loss) with
the scoring code as it is now, for example after a scorer fix. Excluded samples stay
excluded. Recorded judge verdicts are kept (a real judge is never called again); the
offline scripted judge is re-run. Each unit gets the key the current code gives it, is
re-sealed, rewritten in place and stored under that key, so `doit aggregate` accepts it
and a later `doit units` finds it done. No provider is constructed at all.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.arms import ARMS
from continuity.outputs import write_output
from continuity.probes.judge import ScriptedJudge
from continuity.report.aggregate import AggregateError, decode_unit
from continuity.runner.units import (
    ProbeResult,
    UnitRecord,
    score_result,
    seal,
    store_unit,
    unit_key,
)
from continuity.store import Store
from continuity.traces.schema import NextActionExpectation, Trace
from continuity.traces.validate import load_trace

__all__ = ["RescoreResult", "rescore_run"]


class RescoreResult(msgspec.Struct, frozen=True):
    units: int
    rewritten: int
    probes_changed: int


def _rescore_probe(result: ProbeResult, trace: Trace) -> ProbeResult:
    if result.status != "valid":
        return result
    probe = next(p for p in trace.probes if p.probe_id == result.probe_id)
    return score_result(
        result, probe, result.evidence.needle_states if result.evidence is not None else []
    )


def rescore_run(store: Store, run_dir: Path) -> RescoreResult:
    """Re-score every unit under ``<run_dir>/units`` in place.

    Raises:
        AggregateError: ``unit_malformed`` or ``unit_tampered`` for a unit file that
            does not decode or whose content does not match its digest, ``trace_missing``
            when the unit's trace is no longer in the store, and ``run_empty``.
    """
    folder = run_dir / "units"
    # Every unit file, chunk subfolders included (as `doit aggregate` reads them).
    paths = sorted(folder.rglob("*.json")) if folder.is_dir() else []
    if not paths:
        raise AggregateError("no unit files to re-score", code="run_empty", location=str(folder))
    rewritten = changed = 0
    traces: dict[str, Trace] = {}
    # Every unit is verified and re-scored before any is written: a refusal leaves the
    # whole run as it was.
    pending: list[tuple[Path, bytes, UnitRecord]] = []
    for path in paths:
        data = path.read_bytes()
        record = decode_unit(path, data)
        arm = ARMS.get(record.arm)
        if arm is None:
            raise AggregateError(
                f"unknown arm {record.arm!r}", code="unit_malformed", location=str(path)
            )
        if record.trace_key not in traces:
            stored = store.load_output(record.trace_key)
            if stored is None:
                raise AggregateError(
                    f"trace {record.trace_id} ({record.trace_key[:16]}...) is not in the store "
                    f"{store.root}; rebuild it with doit traces, then re-score",
                    code="trace_missing",
                    location=str(path),
                )
            traces[record.trace_key] = load_trace(stored, source=record.trace_id)
        trace = traces[record.trace_key]
        probes = [_rescore_probe(p, trace) for p in record.probes]
        changed += sum(1 for old, new in zip(record.probes, probes, strict=True) if old != new)
        verdicts = record.judge
        if record.binding is None:  # offline: the scripted judge costs nothing
            judge = ScriptedJudge()
            by_id = {p.probe_id: p for p in trace.probes}
            verdicts = [
                judge.judge(
                    v.probe_id,
                    by_id[v.probe_id].text,
                    next(p.answer for p in probes if p.probe_id == v.probe_id),
                    [f.value for f in expectation.keywords],
                )
                for v in record.judge
                if isinstance(expectation := by_id[v.probe_id].expectation, NextActionExpectation)
            ]
        key = unit_key(
            record.repeat,
            record.trace_key,
            arm,
            record.checkpoint,
            record.probe_ids,
            record.binding,
        )
        updated = seal(msgspec.structs.replace(record, key=key, probes=probes, judge=verdicts))
        encoded = msgspec.json.format(msgspec.json.encode(updated)) + b"\n"
        if encoded != data:
            pending.append((path, encoded, updated))
    for path, encoded, updated in pending:
        store_unit(store, updated, rescored=True)
        write_output(path, encoded)
        rewritten += 1
    return RescoreResult(len(paths), rewritten, changed)
