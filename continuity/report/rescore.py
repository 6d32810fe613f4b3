"""`doit score`: grade a run's recorded answers with the current scorer, calling no model
and changing no unit file.

It reads every unit file of a run (chunk subfolders included), checks its content
digest and that its trace is still in the store, then grades each valid probe's
recorded answer again (outcome, correctness, availability from the recorded needle
states, and loss) with the scoring code as it is now, for example after a scorer fix.
The grades go into a new score artifact per unit (`continuity.report.scores`), keyed
by the unit and the scorer's code digest, stored in the store and written to
``<run>/scores/<scorer16>/``. The unit files, with their original grades and the judge
verdicts they recorded, stay byte-identical. Excluded samples stay ungraded. No
provider is constructed at all.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.arms import ARMS
from continuity.errors import AggregateError
from continuity.inputs import UNIT_MAX_BYTES, read_user_bytes
from continuity.outputs import write_output
from continuity.report.runs import unknown_run
from continuity.report.scores import (
    ScoreRecord,
    encode_score,
    load_unit_trace,
    score_path,
    score_unit,
    scorer_digest,
    store_score,
)
from continuity.report.verify import decode_unit
from continuity.runner.units.build import UnitRecord
from continuity.store import Store
from continuity.traces.schema import Trace

__all__ = ["RescoreResult", "rescore_run"]


class RescoreResult(msgspec.Struct, frozen=True):
    units: int
    written: int  # score artifacts written or rewritten (0 when all were current)
    probes_changed: int  # valid probes whose grade differs from the unit's original grade
    scorer: str  # the scorer's code digest
    folder: str  # where the score artifacts are


def _changed(record: UnitRecord, scores: ScoreRecord) -> int:
    original = {p.probe_id: (p.outcome, p.correct) for p in record.probes if p.status == "valid"}
    return sum(1 for s in scores.probes if original.get(s.probe_id) != (s.outcome, s.correct))


def rescore_run(store: Store, run_dir: Path) -> RescoreResult:
    """Write the current scorer's score artifact for every unit under ``<run_dir>/units``.

    Raises:
        AggregateError: ``unit_malformed`` or ``unit_tampered`` for a unit file that
            does not decode or whose content does not match its digest, ``trace_missing``
            when the unit's trace is no longer in the store, ``run_unknown`` for a run
            directory that is not there and ``run_empty`` for one without units. Every unit
            is checked and graded before anything is written: a refusal writes nothing.
    """
    folder = run_dir / "units"
    if not run_dir.exists():  # doit score refuses it first, at its option (run_dir)
        raise unknown_run(run_dir.name, [run_dir], run_dir.parent, str(run_dir), AggregateError)
    paths = sorted(folder.rglob("*.json")) if folder.is_dir() else []
    if not paths:
        raise AggregateError("no unit files to re-score", code="run_empty", location=str(folder))
    scorer = scorer_digest()
    traces: dict[str, Trace] = {}
    graded: list[tuple[UnitRecord, ScoreRecord]] = []
    for path in paths:
        record = decode_unit(path, read_user_bytes(path, limit=UNIT_MAX_BYTES, what="a unit file"))
        if ARMS.get(record.arm) is None:
            raise AggregateError(
                f"unknown arm {record.arm!r}", code="unit_malformed", location=str(path)
            )
        trace = load_unit_trace(store, record, path, traces)
        graded.append((record, score_unit(record, trace, scorer)))
    written = changed = 0
    for record, scores in graded:
        changed += _changed(record, scores)
        store_score(store, scores)
        target = score_path(run_dir, scorer, record)
        encoded = encode_score(scores)
        try:
            same = target.read_bytes() == encoded
        except OSError:
            same = False
        if not same:
            write_output(target, encoded)
            written += 1
    return RescoreResult(
        len(paths), written, changed, scorer, str(run_dir / "scores" / scorer[:16])
    )
