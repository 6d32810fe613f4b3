"""The two runs `doit compare` sets side by side, and the refusals that keep incomparable
runs apart.

A run is named (``<out>/runs/<name>``) or given as a directory (a real run's ``--out``).
Before any grade is computed, every unit file of both runs is read for what makes two
samples the same question asked the same way: its probe protocol and its trace's key
(the digest of the trace's content). Runs under different probe protocols
(``compare_protocol_mismatch``) or holding the same trace id with different content
(``compare_trace_mismatch``) are refused. Verification and grading come after, through
the aggregate's own `load_summaries`.

Each run's manifest (``run.json``, continuity.runner.manifest) names who ran it (readers,
plans, commits, dates) and the scorer version each invocation graded with: runs
compared on their original grades must name one and the same scorer
(``compare_scorer_mismatch`` otherwise, `check_recorded_scorers`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import msgspec

from continuity.errors import AggregateError, CompareError
from continuity.inputs import UNIT_MAX_BYTES, read_user_bytes
from continuity.report.aggregate import LEGACY_PROTOCOL
from continuity.report.compare_results import RunOrigin
from continuity.report.runs import runs_hint, unknown_run
from continuity.runner.manifest import RunManifest

__all__ = [
    "AnswerKey",
    "RunUnits",
    "check_comparable",
    "check_recorded_scorers",
    "resolve_run",
    "run_origin",
    "scan_run",
]

AnswerKey = tuple[int, str, str, str]  # (repeat, trace id, arm, probe id)
_LISTED = 5  # mismatched traces named in a refusal


def _has_units(folder: Path) -> bool:
    units = folder / "units"
    return units.is_dir() and any(p.is_file() for p in units.rglob("*.json"))


def resolve_run(text: str, out: Path, option: str) -> Path:
    """The run directory `text` names: ``<out>/runs/<text>`` when that holds units, else
    the directory `text` itself.

    Raises:
        CompareError: ``run_unknown`` when neither exists (or nothing is named; the
            refusal `continuity.report.runs.unknown_run` gives every command),
            ``run_empty`` when the directory holds no unit file; both list the runs
            under ``<out>/runs/`` that hold units and are located at `option`.
    """
    runs = out / "runs"
    if not text.strip():
        raise CompareError(
            f"name a run or a run directory; {runs_hint(runs)}", code="run_unknown", location=option
        )
    candidates = [Path(text).expanduser()]
    if "/" not in text and text not in (".", ".."):
        candidates.insert(0, runs / text)
    for candidate in candidates:
        if _has_units(candidate):
            return candidate.absolute()
    if any(candidate.is_dir() for candidate in candidates):
        raise CompareError(
            f"{text!r} holds no unit files; {runs_hint(runs)}", code="run_empty", location=option
        )
    raise unknown_run(text, candidates, runs, option, CompareError)


class _Answer(msgspec.Struct):
    probe_id: str
    answer: str


class _UnitHead(msgspec.Struct):
    """What a comparison reads of a unit file before verifying it (msgspec skips the
    rest of the file)."""

    repeat: int
    trace_id: str
    trace_key: str
    arm: str
    probes: list[_Answer]
    probe_protocol: str = ""


class RunUnits(msgspec.Struct, kw_only=True):
    """What a run's unit files say about how its samples were asked, and its answers."""

    path: Path
    units: int
    protocols: set[str]
    traces: dict[str, set[str]]  # trace id -> the trace keys its units name
    answers: dict[AnswerKey, str]


def scan_run(run_dir: Path) -> RunUnits:
    """Read every unit file of a run for its protocol, trace keys and answers.

    Raises:
        AggregateError: ``unit_malformed`` for a file that is not a unit record.
    """
    decoder = msgspec.json.Decoder(_UnitHead)
    protocols: set[str] = set()
    traces: dict[str, set[str]] = defaultdict(set)
    answers: dict[AnswerKey, str] = {}
    paths = sorted((run_dir / "units").rglob("*.json"))
    for path in paths:
        try:
            head = decoder.decode(read_user_bytes(path, limit=UNIT_MAX_BYTES, what="a unit file"))
        except msgspec.MsgspecError as exc:
            raise AggregateError(
                f"not a unit record: {exc}", code="unit_malformed", location=str(path)
            ) from None
        protocols.add(head.probe_protocol or LEGACY_PROTOCOL)
        traces[head.trace_id].add(head.trace_key)
        for probe in head.probes:
            answers[(head.repeat, head.trace_id, head.arm, probe.probe_id)] = probe.answer
    return RunUnits(
        path=run_dir, units=len(paths), protocols=protocols, traces=dict(traces), answers=answers
    )


def check_comparable(base: RunUnits, head: RunUnits) -> None:
    """Refuse two runs whose samples were not asked the same way.

    Raises:
        CompareError: ``compare_protocol_mismatch`` when the runs' units ran under
            different probe protocols; ``compare_trace_mismatch`` when a trace id names
            different trace content in the two runs (the first few are listed).
    """
    if base.protocols != head.protocols:
        raise CompareError(
            f"base ran under {', '.join(sorted(base.protocols))} and head under "
            f"{', '.join(sorted(head.protocols))}: their readers saw different probe-turn "
            "bytes, so their answers are not comparable",
            code="compare_protocol_mismatch",
            location="--head",
        )
    differ = sorted(
        t for t in base.traces.keys() & head.traces.keys() if base.traces[t] != head.traces[t]
    )
    if differ:
        named = "; ".join(
            f"{t} (base {_keys(base.traces[t])}, head {_keys(head.traces[t])})"
            for t in differ[:_LISTED]
        )
        more = f" and {len(differ) - _LISTED} more" if len(differ) > _LISTED else ""
        raise CompareError(
            f"{len(differ)} trace(s) have the same id but different content: {named}{more}",
            code="compare_trace_mismatch",
            location="--head",
        )


def _keys(keys: set[str]) -> str:
    return ", ".join(k[:16] for k in sorted(keys))


def run_origin(manifest: RunManifest | None) -> RunOrigin | None:
    """Who ran a run and when, from its manifest (None without one): each distinct
    reader (with effort), plan digest and commit over its invocations, and its span."""
    if manifest is None:
        return None
    return RunOrigin(
        readers=manifest.distinct(lambda i: f"{i.reader} (effort {i.reader_effort})"),
        plan_digests=manifest.distinct(lambda i: i.plan_digest),
        commits=manifest.distinct(lambda i: i.commit),
        dirty=manifest.dirty,
        started=manifest.started,
        finished=manifest.finished,
        invocations=len(manifest.invocations),
        scorers=manifest.distinct(lambda i: i.scorer_digest or "unknown"),
    )


def _recorded(manifest: RunManifest | None) -> list[str] | None:
    """The scorer versions a run's invocations recorded, first seen first; None when it
    has no manifest or an invocation recorded none (a v1 manifest)."""
    if manifest is None or any(i.scorer_digest is None for i in manifest.invocations):
        return None
    return manifest.distinct(lambda i: i.scorer_digest or "")


def check_recorded_scorers(manifests: dict[str, RunManifest | None]) -> str | None:
    """The one scorer version both runs' manifests record (by option, ``--base`` and
    ``--head``); None when a run's manifest does not record its scorer (the caller then
    falls back to re-grading).

    Raises:
        CompareError: ``compare_scorer_mismatch`` when a run's invocations recorded
            several scorer versions (its original grades mix them; located at that run's
            option), or the two runs recorded different ones (at ``--head``).
    """
    recorded = {option: _recorded(m) for option, m in manifests.items()}
    if any(digests is None for digests in recorded.values()):
        return None
    for option, digests in recorded.items():
        if digests is not None and len(digests) > 1:
            raise CompareError(
                f"the {option.removeprefix('--')} run's invocations were graded by "
                f"{len(digests)} scorer versions ({', '.join(d[:16] for d in digests)}, "
                "its run.json): its original grades mix them; compare with --scorer current",
                code="compare_scorer_mismatch",
                location=option,
            )
    base, head = recorded["--base"] or [""], recorded["--head"] or [""]
    if base != head:
        raise CompareError(
            f"base was graded by scorer {base[0][:16]} and head by {head[0][:16]} (their "
            "run.json): their original grades are not comparable; compare with "
            "--scorer current",
            code="compare_scorer_mismatch",
            location="--head",
        )
    return base[0]
