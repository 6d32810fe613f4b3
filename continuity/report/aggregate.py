"""Aggregate a run's unit records into results.json, summary.md and report.html.

Every unit file is verified before it counts: it must decode (``unit_malformed``), its
content must match its digest (``unit_tampered``), its key must be the key its own
fields produce and its file name must be the one its fields give
(``unit_key_mismatch``), and no repeat x trace x arm may appear twice
(``unit_duplicate``) unless every unit file for it is a lookup unit: then each slot they
share is an ambiguous duplicate, reported with its occurrence count and kept out of
every score and cost (continuity.report.duplicates). A refused unit stops the
aggregate; it is never averaged in.

Aggregation is incremental. Each verified unit is reduced to a small summary, cached in
the store under the digest of the unit file's bytes; paired bootstrap intervals are
cached under the digest of the paired outcomes. Re-aggregating after one unit changed
re-reads only that unit (and recomputes only the intervals its arm takes part in).

Results are split by suite (the trace family: original, hard, hard-distractors): every
accuracy, outcome, exclusion, availability, flip, tool-use, pressure and paired table is
per suite and arm, and every "delta vs native" is paired (see continuity.report.paired).
Units run under different probe protocols are never aggregated together
(``unit_protocol_mixed``): their readers saw different bytes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec

from continuity.arms import ARMS
from continuity.digest import KeySpec, code_digest, digest_bytes, value_digest
from continuity.errors import ContinuityError
from continuity.outputs import write_json, write_output
from continuity.plan.pricing import Catalog, load_catalog
from continuity.probe.receipts import ProcessReceipt
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.report.duplicates import without_duplicate_slots
from continuity.report.judging import judge_agreement
from continuity.report.lookup import lookup_table, with_latency
from continuity.report.paired import paired_with_native
from continuity.report.samples import (
    accuracy_cells,
    availability_counts,
    excluded_counts,
    flip_rate,
    outcome_counts,
    pressure_range,
    tool_use,
)
from continuity.report.scores import Scorer, scorer_section
from continuity.report.spend import arm_spend, judge_spend
from continuity.report.summary import ProbeRow, UnitSummary, summarize
from continuity.runner.units import UnitRecord, content_digest, unit_key
from continuity.store import Store

__all__ = [
    "LEGACY_PROTOCOL",
    "REPORT_CODE",
    "SUITE_ORDER",
    "SUMMARY_SALT",
    "AggregateError",
    "ProbeRow",
    "Results",
    "UnitSummary",
    "aggregate_run",
    "combine",
    "decode_unit",
    "load_summaries",
    "probe_protocols",
]

SUMMARY_SALT = "unit-summary-v4"
SUITE_ORDER = ("original", "hard", "hard-distractors")
# Units written before the probe protocol was recorded ran under its first version.
LEGACY_PROTOCOL = "probe-protocol-v1"
REPORT_CODE = (
    "continuity.report",
    "continuity.probes",
    "continuity.evidence",
    "continuity.plan.pricing",
)


class AggregateError(ContinuityError):
    default_code = "unit_malformed"


class Results(msgspec.Struct, frozen=True, kw_only=True):
    """The run's results. Tables keyed ``[suite][arm]`` never mix trace families; spend
    (accounting, not a comparison) and the lookup report are per arm."""

    schema: str = "continuity-results-v2"
    run: str
    units: int
    arms: list[str]
    suites: list[str]
    repeats: list[int]
    categories: list[str]
    probe_protocols: list[str]
    protocol_note: str | None
    accuracy: dict[str, dict[str, dict[str, dict[str, Any]]]]
    flip_rate: dict[str, dict[str, dict[str, Any]]]
    outcomes: dict[str, dict[str, dict[str, int]]]
    tool_use: dict[str, dict[str, dict[str, Any]]]
    excluded: dict[str, dict[str, dict[str, int]]]
    availability: dict[str, dict[str, dict[str, int]]]
    pressure: dict[str, dict[str, dict[str, dict[str, Any]]]]
    judge: dict[str, Any]
    spend: dict[str, dict[str, Any]]
    paired: dict[str, dict[str, dict[str, Any]]]
    lookup: dict[str, dict[str, Any]] = {}
    # Which grades produced the numbers (continuity.report.scores.scorer_section): the
    # scorer's version and, for the current scorer, the change against the original grades.
    scorer: dict[str, Any] = {}


class _TraceHead(msgspec.Struct):
    """The fields of a stored trace a unit's identity is checked against."""

    trace_id: str
    family: str


def _check_against_store(
    store: Store, path: Path, record: UnitRecord, heads: dict[str, _TraceHead | None]
) -> None:
    """A resealed edit passes the digest check (anyone can recompute a digest), so the
    unit is also checked against what the store knows: its probes must be the probes
    its key binds, its trace id and family those of the trace its key binds, and, when
    the store holds this unit, its content must be the stored unit's content."""

    def tampered(why: str) -> AggregateError:
        return AggregateError(why, code="unit_tampered", location=str(path))

    if Counter(p.probe_id for p in record.probes) != Counter(record.probe_ids):
        raise tampered("the unit's probes are not the probes its key binds")
    if record.trace_key not in heads:  # one read per trace, not per unit
        stored_trace = store.load_output(record.trace_key)
        try:
            heads[record.trace_key] = (
                msgspec.json.decode(stored_trace, type=_TraceHead) if stored_trace else None
            )
        except msgspec.MsgspecError:
            heads[record.trace_key] = None
    head = heads[record.trace_key]
    if head is not None and (head.trace_id, head.family) != (record.trace_id, record.family):
        raise tampered(
            f"the unit names trace {record.trace_id} ({record.family}); its trace key "
            f"is {head.trace_id} ({head.family})"
        )
    stored_unit = store.load_output(record.key)
    if stored_unit is not None:
        try:
            digest = msgspec.json.decode(stored_unit, type=UnitRecord).content_digest
        except msgspec.MsgspecError:
            digest = None
        if digest is not None and digest != record.content_digest:
            raise tampered("the unit's content differs from the store's copy of this unit")


def decode_unit(path: Path, data: bytes) -> UnitRecord:
    """A unit file's record, refused if it does not decode (``unit_malformed``) or its
    content does not match its digest (``unit_tampered``)."""
    try:
        record = msgspec.json.decode(data, type=UnitRecord)
    except msgspec.MsgspecError as exc:
        raise AggregateError(
            f"not a unit record: {exc}", code="unit_malformed", location=str(path)
        ) from None
    if content_digest(record) != record.content_digest and not _sealed_as_written(
        data, record.content_digest
    ):
        raise AggregateError(
            "the unit's content does not match its digest", code="unit_tampered", location=str(path)
        )
    return record


def _sealed_as_written(data: bytes, digest: str) -> bool:
    """Whether a unit file's JSON, as written, reproduces `digest`. A unit sealed before
    a field moved out of the sealed content (a lookup witness's ``elapsed_seconds``, a
    call receipt's ``cached``) decodes without that field, so its re-encoded record no
    longer gives the digest it was sealed with; its own bytes still do."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.MsgspecError:
        return False
    if not isinstance(raw, dict) or not isinstance(raw.get("content_digest"), str):
        return False
    raw["content_digest"] = ""
    return value_digest(("continuity-unit", msgspec.json.encode(raw))) == digest


def _verify(
    path: Path, data: bytes, store: Store, heads: dict[str, _TraceHead | None]
) -> UnitRecord:
    record = decode_unit(path, data)
    arm = ARMS.get(record.arm)
    expected = (
        unit_key(
            record.repeat,
            record.trace_key,
            arm,
            record.checkpoint,
            record.probe_ids,
            record.binding,
            record.probe_protocol,
        )
        if arm
        else None
    )
    if expected != record.key:
        raise AggregateError(
            "the unit's key is not the key of its content",
            code="unit_key_mismatch",
            location=str(path),
        )
    _check_against_store(store, path, record, heads)
    return record


def load_summaries(
    store: Store, units_dir: Path, scorer: Scorer | None = None
) -> tuple[list[UnitSummary], int]:
    """Verify and summarise every unit file; return the summaries and how many were
    read in full (the rest came from the cache). `scorer` chooses the grades (default:
    the unit files' original grades); its version is part of every cache key. Every
    file is returned, a lookup unit's second file for the same repeat x trace x arm
    included (`combine` takes the slots they share out of every score and cost), in an
    order independent of the folders that hold them.

    The cache has two levels, both keyed by the report code: one entry per unit file
    (keyed by the file's blake3 digest), and one index per run directory mapping the
    digest of each of its files to its summary, so an incremental aggregate reads one
    store entry instead of one per unit. A digest the index lacks falls back to the
    per-unit entry, then to verifying the file. Per-unit entries (what lets another run
    directory reuse a summary) are written when a run directory has no index yet; once
    it has one, a re-aggregate records new summaries in the index only, which keeps the
    incremental path to one store write.

    A lookup unit's latencies are not in its file (a unit is deterministic bytes): they
    are joined from its action entry's `ProcessReceipt`s after the caches (`_timed`)."""
    code = code_digest([*REPORT_CODE, "continuity.runner.units"])
    label = scorer.label if scorer is not None else "original"
    index_key = KeySpec(
        kind="unit-summary-index",
        salt=SUMMARY_SALT,
        code=code,
        params={"units": str(units_dir.resolve()), "scorer": label},
    ).key()
    stored_index = store.load_output(index_key)
    try:
        index = (
            msgspec.json.decode(stored_index, type=dict[str, UnitSummary]) if stored_index else {}
        )
    except msgspec.MsgspecError:
        index = {}
    fresh_index: dict[str, UnitSummary] = {}
    heads: dict[str, _TraceHead | None] = {}  # stored traces' identities, read once each
    summaries: list[tuple[str, str, str, UnitSummary]] = []
    seen: dict[tuple[int, str, str], tuple[Path, UnitSummary]] = {}
    read = 0
    for path in sorted(units_dir.rglob("*.json")):
        data = path.read_bytes()
        digest = digest_bytes(data)
        summary_or_none = index.get(digest)
        if summary_or_none is None:
            cache_key = KeySpec(
                kind="unit-summary",
                salt=SUMMARY_SALT,
                code=code,
                params={"scorer": label},
                inputs={"unit": digest},
            ).key()
            cached = store.load_output(cache_key)
            if cached is not None:
                summary_or_none = msgspec.json.decode(cached, type=UnitSummary)
            else:
                record = _verify(path, data, store, heads)
                if scorer is None:
                    summary_or_none = summarize(record)
                else:  # the chosen scorer's grades, with the original ones beside them
                    graded, original = scorer.grade(path, record)
                    summary_or_none = msgspec.structs.replace(summarize(graded), original=original)
                read += 1
                if not index:
                    store.record_action(
                        cache_key,
                        kind="unit-summary",
                        output=store.put_blob(msgspec.json.encode(summary_or_none)),
                    )
        summary = summary_or_none
        named = f"r{summary.repeat}-{summary.trace_id}-{summary.arm}.json"
        if path.name != named:  # checked even when the summary came from the cache
            raise AggregateError(
                f"the file is named {path.name}, its content says {named}",
                code="unit_key_mismatch",
                location=str(path),
            )
        slot = (summary.repeat, summary.trace_id, summary.arm)
        first = seen.setdefault(slot, (path, summary))
        # Only lookup units may observe a slot twice (continuity.report.duplicates).
        if first[0] != path and not (summary.lookup_rows and first[1].lookup_rows):
            raise AggregateError(
                f"r{slot[0]} {slot[1]} {slot[2]} appears twice (also in {first[0].name})",
                code="unit_duplicate",
                location=str(path),
            )
        summaries.append((path.name, summary.key, digest, _timed(store, summary)))
        fresh_index[digest] = summary
    if not summaries:
        raise AggregateError(
            "no unit records to aggregate", code="run_empty", location=str(units_dir)
        )
    if fresh_index.keys() != index.keys():
        store.record_action(
            index_key,
            kind="unit-summary-index",
            output=store.put_blob(msgspec.json.encode(fresh_index)),
        )
    # Ordered by file name, then content: which chunk folder holds a copy never matters.
    return [entry[3] for entry in sorted(summaries, key=lambda e: e[:3])], read


def _timed(store: Store, summary: UnitSummary) -> UnitSummary:
    """A lookup unit's summary with its probes' latencies, read from the
    `ProcessReceipt`s its action entry keeps beside the unit (a unit file holds no
    times). Joined on every aggregate, after the caches, which stay functions of the
    unit file alone. No entry, or an entry without receipts: latency unknown (None)."""
    if not summary.lookup_rows:
        return summary
    entry = store.get_action(summary.key, verify_output=False)
    try:
        processes = msgspec.convert(
            (entry.meta.get("processes") or []) if entry is not None else [],
            list[ProcessReceipt],
        )
    except msgspec.ValidationError:
        processes = []
    return msgspec.structs.replace(
        summary, lookup_rows=with_latency(summary.lookup_rows, processes)
    )


def _suites(summaries: list[UnitSummary]) -> list[str]:
    present = {s.family for s in summaries}
    return [f for f in SUITE_ORDER if f in present] + sorted(present - set(SUITE_ORDER))


def probe_protocols(summaries: list[UnitSummary], location: str) -> tuple[list[str], str | None]:
    """The probe protocol of the run's units and the report's note on it (None when it
    is the current protocol).

    Raises:
        AggregateError: ``unit_protocol_mixed`` when the units ran under different probe
            protocols: their readers saw different bytes, so their results are not
            comparable and are never averaged together.
    """
    example: dict[str, UnitSummary] = {}
    for summary in summaries:
        example.setdefault(summary.probe_protocol or LEGACY_PROTOCOL, summary)
    if len(example) > 1:
        named = "; ".join(
            f"{protocol} (e.g. r{s.repeat}-{s.trace_id}-{s.arm})"
            for protocol, s in sorted(example.items())
        )
        raise AggregateError(
            f"the units ran under different probe protocols: {named}. Results under "
            "different probe protocols are not comparable; aggregate each protocol's "
            "units in a run directory of its own",
            code="unit_protocol_mixed",
            location=location,
        )
    protocols = sorted(example)
    if protocols == [PROBE_PROTOCOL]:
        return protocols, None
    return protocols, (
        f"These units ran under {protocols[0]}, older than the current {PROBE_PROTOCOL}: "
        "the reader saw different probe-turn bytes. Results under different probe "
        "protocols are not comparable; do not set these numbers beside a run under "
        f"{PROBE_PROTOCOL}."
    )


def combine(
    store: Store,
    run: str,
    summaries: list[UnitSummary],
    planned_slots: list[dict[str, Any]] | None = None,
    catalog: Catalog | None = None,
) -> Results:
    """The results of a run from its unit summaries, suite by suite (see the module doc).
    Duplicate lookup slots are in the lookup table only (continuity.report.duplicates).

    Raises:
        AggregateError: ``unit_protocol_mixed`` (see `probe_protocols`).
    """
    protocols, protocol_note = probe_protocols(summaries, run)
    observed, summaries = summaries, without_duplicate_slots(summaries)
    order = {arm_id: i for i, arm_id in enumerate(ARMS)}
    arms = sorted({s.arm for s in summaries}, key=lambda a: (order.get(a, len(order)), a))
    suites = _suites(summaries)
    repeats = sorted({s.repeat for s in summaries})
    categories = sorted({r.category for s in summaries for r in s.rows})
    units: dict[str, dict[str, list[UnitSummary]]] = defaultdict(lambda: defaultdict(list))
    for summary in summaries:
        units[summary.family][summary.arm].append(summary)

    accuracy: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    paired: dict[str, dict[str, dict[str, Any]]] = {}
    flips: dict[str, dict[str, dict[str, Any]]] = {}
    outcomes: dict[str, dict[str, dict[str, int]]] = {}
    excluded: dict[str, dict[str, dict[str, int]]] = {}
    availability: dict[str, dict[str, dict[str, int]]] = {}
    tools: dict[str, dict[str, dict[str, Any]]] = {}
    pressure: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for suite in suites:
        by_arm = {arm: units[suite][arm] for arm in arms if units[suite][arm]}
        in_suite = sorted({r.category for us in by_arm.values() for s in us for r in s.rows})
        accuracy[suite] = {a: accuracy_cells(u, repeats, in_suite) for a, u in by_arm.items()}
        paired[suite] = paired_with_native(store, by_arm, in_suite, accuracy[suite])
        flips[suite] = {a: flip_rate(u) for a, u in by_arm.items()}
        outcomes[suite] = {a: outcome_counts(u) for a, u in by_arm.items()}
        excluded[suite] = {a: excluded_counts(u) for a, u in by_arm.items()}
        availability[suite] = {a: availability_counts(u) for a, u in by_arm.items()}
        pressure[suite] = {a: pressure_range(a, u) for a, u in by_arm.items()}
        tools[suite] = {
            a: tool_use(u, in_suite)
            for a, u in by_arm.items()
            if a in ARMS and ARMS[a].history_tool
        }

    catalog = catalog or load_catalog()
    judge = judge_agreement(summaries, categories, suites)
    spend = {
        arm: arm_spend(catalog, [s for s in summaries if s.arm == arm], suites) for arm in arms
    }
    spend["judge"] = judge_spend(catalog, summaries, judge["pairs"])
    return Results(
        run=run,
        units=len(observed),
        arms=arms,
        suites=suites,
        repeats=repeats,
        categories=categories,
        probe_protocols=protocols,
        protocol_note=protocol_note,
        accuracy=accuracy,
        flip_rate=flips,
        outcomes=outcomes,
        tool_use={suite: table for suite, table in tools.items() if table},
        excluded=excluded,
        availability=availability,
        pressure=pressure,
        judge=judge,
        spend=spend,
        paired={suite: table for suite, table in paired.items() if table},
        lookup=lookup_table(
            ((s.repeat, s.trace_id, s.arm, s.lookup_rows) for s in observed), planned_slots
        ),
    )


def _planned_slots(run_dir: Path) -> list[dict[str, Any]] | None:
    """The lookup slots a run planned (``lookup-slots.json``), if it is a lookup run."""
    try:
        document = msgspec.json.decode((run_dir / "lookup-slots.json").read_bytes())
    except (OSError, msgspec.MsgspecError):
        return None
    slots = document.get("slots") if isinstance(document, dict) else None
    return slots if isinstance(slots, list) else None


def aggregate_run(
    store: Store, run_dir: Path, catalog: Catalog | None = None, scorer: str = "current"
) -> tuple[Results, dict[str, Path], int]:
    """Aggregate ``<run_dir>/units`` and write the three outputs into `run_dir`, pricing
    real calls with `catalog` (default: the checked-in pricing catalog) and grading with
    `scorer`: ``current`` (the current scorer, `continuity.report.scores`) or
    ``original`` (the grades recorded in the unit files).

    Returns the results, the output paths and how many units were read in full.
    Raises:
        AggregateError: a unit was refused (see the module doc), or there were none.
    """
    from continuity.report.render import render_html, render_markdown

    chosen = Scorer(store, run_dir, scorer)
    summaries, read = load_summaries(store, run_dir / "units", chosen)
    results = combine(store, run_dir.name, summaries, _planned_slots(run_dir), catalog)
    scored = without_duplicate_slots(summaries)
    results = msgspec.structs.replace(results, scorer=scorer_section(scored, chosen))
    paths = {
        "results": run_dir / "results.json",
        "summary": run_dir / "summary.md",
        "report": run_dir / "report.html",
    }
    write_json(paths["results"], results)
    write_output(paths["summary"], render_markdown(results).encode("utf-8"))
    write_output(paths["report"], render_html(results).encode("utf-8"))
    return results, paths, read
