"""Aggregate a run's unit records into results.json, summary.md and report.html.

Every unit file is verified before it counts: it must decode (``unit_malformed``), its
content must match its digest (``unit_tampered``), its key must be the key its own
fields produce and its file name must be the one its fields give
(``unit_key_mismatch``), and no repeat x trace x arm may appear twice
(``unit_duplicate``). A refused unit stops the aggregate; it is never averaged in.

Aggregation is incremental. Each verified unit is reduced to a small summary, cached in
the store under the digest of the unit file's bytes; paired bootstrap intervals are
cached under the digest of the paired outcomes. Re-aggregating after one unit changed
re-reads only that unit (and recomputes only the intervals its arm takes part in).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from continuity.arms import ARMS
from continuity.digest import KeySpec, code_digest, digest_bytes
from continuity.errors import ContinuityError
from continuity.evidence import EXCLUDED_CLASSES
from continuity.harness.messages import Usage
from continuity.outputs import write_json, write_output
from continuity.plan.pricing import Catalog, call_cost, load_catalog
from continuity.probes.availability import AVAILABILITY_COLUMNS
from continuity.probes.scoring import OUTCOMES
from continuity.report.lookup import LookupRow, lookup_rows, lookup_table
from continuity.report.stats import mcnemar_exact, mean, paired_bootstrap, sample_sd
from continuity.runner.units import UnitRecord, content_digest, unit_key
from continuity.store import Store

__all__ = ["AggregateError", "ProbeRow", "Results", "UnitSummary", "aggregate_run"]

SUMMARY_SALT = "unit-summary-v1"
BOOTSTRAP_SALT = "paired-bootstrap-v1"
REPORT_CODE = (
    "continuity.report",
    "continuity.probes",
    "continuity.evidence",
    "continuity.plan.pricing",
)


class AggregateError(ContinuityError):
    default_code = "unit_malformed"


class ProbeRow(msgspec.Struct, frozen=True, array_like=True):
    probe_id: str
    category: str
    status: str
    correct: bool | None
    outcome: str | None
    fact: str | None
    superseded_present: bool | None
    loss: str | None
    history_called: bool


class UnitSummary(msgspec.Struct, frozen=True):
    """What the aggregate needs from one verified unit (cached by the file's digest)."""

    key: str
    repeat: int
    family: str
    trace_id: str
    arm: str
    rows: list[ProbeRow]
    usage: Usage
    compaction_usage: Usage
    judge: list[tuple[str, bool]]
    # Real mode: every model call as (call key, catalog model, usage), judge included.
    calls: list[tuple[str, str, str, Usage]] = []
    live_turns: int = 0
    lookup_rows: list[LookupRow] = []


class Results(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = "continuity-results-v1"
    run: str
    units: int
    arms: list[str]
    repeats: list[int]
    categories: list[str]
    accuracy: dict[str, dict[str, dict[str, Any]]]
    flip_rate: dict[str, dict[str, Any]]
    outcomes: dict[str, dict[str, int]]
    tool_use: dict[str, dict[str, Any]]
    excluded: dict[str, dict[str, int]]
    availability: dict[str, dict[str, int]]
    judge: dict[str, Any]
    spend: dict[str, dict[str, Any]]
    paired: dict[str, dict[str, Any]]
    lookup: dict[str, dict[str, Any]] = {}


def _cost(catalog: Catalog, calls: list[tuple[str, str, str, Usage]]) -> dict[str, Any]:
    """List price of distinct calls (a call replayed from the cache is paid once).
    ``cost_usd`` is None when any call is unpriced or there were no real calls."""
    unique = {key: (ref, usage) for key, _, ref, usage in calls}
    known = 0.0
    unpriced = 0
    for ref, usage in unique.values():
        cost = call_cost(catalog, ref, usage)
        if cost is None:
            unpriced += 1
        else:
            known += cost
    return {
        "model_calls": len(unique),
        "cost_usd": round(known, 6) if unique and not unpriced else None,
        "cost_known_usd": round(known, 6),
        "unpriced_calls": unpriced,
    }


def _summarize(record: UnitRecord) -> UnitSummary:
    usage = Usage()
    compaction = Usage()
    rows = []
    for probe in record.probes:
        usage = usage + probe.usage
        compaction = compaction + probe.compaction_usage
        rows.append(
            ProbeRow(
                probe.probe_id,
                probe.category,
                probe.status,
                probe.correct,
                probe.outcome,
                probe.availability.fact if probe.availability else None,
                probe.availability.superseded_present if probe.availability else None,
                probe.loss,
                probe.history_calls > 0,
            )
        )
    proxy = {p.probe_id: bool(p.correct) for p in record.probes}
    judge = [(v.probe_id, v.passed) for v in record.judge if v.probe_id in proxy]
    binding = record.binding or {}
    reader_ref = (binding.get("reader") or {}).get("ref", "")
    judge_ref = (binding.get("judge") or {}).get("ref", "")
    calls: list[tuple[str, str, str, Usage]] = [
        (c.key, c.role, reader_ref, c.usage)
        for p in record.probes
        if p.evidence is not None
        for c in p.evidence.calls
    ]
    calls += [(c.key, "judge", judge_ref, c.usage) for c in record.judge_calls]
    return UnitSummary(
        record.key,
        record.repeat,
        record.family,
        record.trace_id,
        record.arm,
        rows,
        usage,
        compaction,
        judge,
        calls,
        len(record.probes),
        lookup_rows(record),
    )


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
    if content_digest(record) != record.content_digest:
        raise AggregateError(
            "the unit's content does not match its digest", code="unit_tampered", location=str(path)
        )
    return record


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


def load_summaries(store: Store, units_dir: Path) -> tuple[list[UnitSummary], int]:
    """Verify and summarise every unit file; return the summaries and how many were
    read in full (the rest came from the cache).

    The cache has two levels, both keyed by the report code: one entry per unit file
    (keyed by the file's blake3 digest), and one index per run directory mapping the
    digest of each of its files to its summary, so an incremental aggregate reads one
    store entry instead of one per unit. A digest the index lacks falls back to the
    per-unit entry, then to verifying the file. Per-unit entries (what lets another run
    directory reuse a summary) are written when a run directory has no index yet; once
    it has one, a re-aggregate records new summaries in the index only, which keeps the
    incremental path to one store write."""
    code = code_digest([*REPORT_CODE, "continuity.runner.units"])
    index_key = KeySpec(
        kind="unit-summary-index",
        salt=SUMMARY_SALT,
        code=code,
        params={"units": str(units_dir.resolve())},
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
    summaries: list[UnitSummary] = []
    seen: dict[tuple[int, str, str], Path] = {}
    read = 0
    for path in sorted(units_dir.rglob("*.json")):
        data = path.read_bytes()
        digest = digest_bytes(data)
        summary_or_none = index.get(digest)
        if summary_or_none is None:
            cache_key = KeySpec(
                kind="unit-summary", salt=SUMMARY_SALT, code=code, inputs={"unit": digest}
            ).key()
            cached = store.load_output(cache_key)
            if cached is not None:
                summary_or_none = msgspec.json.decode(cached, type=UnitSummary)
            else:
                summary_or_none = _summarize(_verify(path, data, store, heads))
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
        if slot in seen:
            raise AggregateError(
                f"r{slot[0]} {slot[1]} {slot[2]} appears twice (also in {seen[slot].name})",
                code="unit_duplicate",
                location=str(path),
            )
        seen[slot] = path
        summaries.append(summary)
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
    return summaries, read


def _accuracy(rows: list[tuple[int, ProbeRow]], repeats: list[int]) -> dict[str, Any]:
    scored = dict.fromkeys(repeats, 0)
    right = dict.fromkeys(repeats, 0)
    for repeat, row in rows:  # one pass, not one per repeat
        if row.status == "valid":
            scored[repeat] += 1
            right[repeat] += bool(row.correct)
    per_repeat = [
        {
            "repeat": repeat,
            "correct": right[repeat],
            "n": scored[repeat],
            "accuracy": right[repeat] / scored[repeat] if scored[repeat] else None,
        }
        for repeat in repeats
    ]
    values = [p["accuracy"] for p in per_repeat if p["accuracy"] is not None]
    return {
        "mean": mean(values),
        "sd": sample_sd(values),
        "n": sum(p["n"] for p in per_repeat),
        "per_repeat": per_repeat,
    }


def _bootstrap(
    store: Store, arm_vector: list[bool], base_vector: list[bool]
) -> tuple[float, float] | None:
    key = KeySpec(
        kind="paired-bootstrap",
        salt=BOOTSTRAP_SALT,
        code=code_digest(["continuity.report.stats", "continuity.traces.prng"]),
        # The pairs as two byte strings of 0/1 (equal lengths): a cheap, unambiguous
        # pre-image for a thousand booleans.
        params={"pairs": digest_bytes(bytes(arm_vector) + b"|" + bytes(base_vector))},
    ).key()
    cached = store.load_output(key)
    if cached is not None:
        interval = msgspec.json.decode(cached)
        return (interval[0], interval[1]) if interval else None
    interval = paired_bootstrap(arm_vector, base_vector)
    store.record_action(
        key, kind="paired-bootstrap", output=store.put_blob(msgspec.json.encode(interval))
    )
    return interval


def combine(
    store: Store,
    run: str,
    summaries: list[UnitSummary],
    planned_slots: list[dict[str, Any]] | None = None,
    catalog: Catalog | None = None,
) -> Results:
    order = {arm_id: i for i, arm_id in enumerate(ARMS)}
    arms = sorted({s.arm for s in summaries}, key=lambda a: order.get(a, 99))
    repeats = sorted({s.repeat for s in summaries})
    categories = sorted({r.category for s in summaries for r in s.rows})
    by_arm: dict[str, list[UnitSummary]] = defaultdict(list)
    for summary in summaries:
        by_arm[summary.arm].append(summary)

    accuracy: dict[str, dict[str, dict[str, Any]]] = {}
    for arm in arms:
        rows = [(s.repeat, r) for s in by_arm[arm] for r in s.rows]
        by_category: dict[str, list[tuple[int, ProbeRow]]] = defaultdict(list)
        for repeat, row in rows:
            by_category[row.category].append((repeat, row))
        accuracy[arm] = {"overall": _accuracy(rows, repeats)}
        for category in categories:
            accuracy[arm][category] = _accuracy(by_category[category], repeats)
    native = accuracy.get("native")
    for arm in arms:
        for category, cell in accuracy[arm].items():
            base = native.get(category) if native else None
            cell["delta_pp"] = (
                100 * (cell["mean"] - base["mean"])
                if base and cell["mean"] is not None and base["mean"] is not None
                else None
            )

    flip_rate: dict[str, dict[str, Any]] = {}
    outcomes: dict[str, dict[str, int]] = {}
    tool_use: dict[str, dict[str, Any]] = {}
    excluded: dict[str, dict[str, int]] = {}
    availability: dict[str, dict[str, int]] = {}
    spend: dict[str, dict[str, Any]] = {}
    catalog = catalog or load_catalog()
    for arm in arms:
        per_probe: dict[tuple[str, str], list[bool]] = defaultdict(list)
        counts: Counter[str] = Counter()
        excl: Counter[str] = Counter()
        avail: Counter[str] = Counter()
        usage = compaction = Usage()
        for summary in by_arm[arm]:
            usage = usage + summary.usage
            compaction = compaction + summary.compaction_usage
            for row in summary.rows:
                if row.status != "valid":
                    excl[row.status] += 1
                    continue
                per_probe[(summary.trace_id, row.probe_id)].append(bool(row.correct))
                counts[row.outcome or "?"] += 1
                avail[row.fact or "not_applicable"] += 1
                avail["superseded_present"] += bool(row.superseded_present)
                if row.loss:
                    avail[row.loss] += 1
        repeated = [v for v in per_probe.values() if len(v) > 1]
        flips = sum(1 for v in repeated if len(set(v)) > 1)
        flip_rate[arm] = {
            "probes": len(repeated),
            "flips": flips,
            "rate": flips / len(repeated) if repeated else None,
        }
        outcomes[arm] = {name: counts.get(name, 0) for name in OUTCOMES}
        excluded[arm] = {name: excl.get(name, 0) for name in EXCLUDED_CLASSES}
        availability[arm] = {name: avail.get(name, 0) for name in AVAILABILITY_COLUMNS}
        total = usage + compaction  # per-arm totals include the compaction requests
        spend[arm] = {
            "input": total.input,
            "cache_read": total.cache_read,
            "cache_write": total.cache_write,
            "output": total.output,
            "compaction_input": compaction.input,
            "compaction_cache_read": compaction.cache_read,
            "compaction_cache_write": compaction.cache_write,
            "compaction_output": compaction.output,
            "live_turns": sum(s.live_turns for s in by_arm[arm]),
            **_cost(catalog, [c for s in by_arm[arm] for c in s.calls if c[1] != "judge"]),
        }
        if ARMS[arm].history_tool:
            valid = [(r.category, r) for s in by_arm[arm] for r in s.rows if r.status == "valid"]
            tool_use[arm] = _tool_use(valid, categories)

    judge_pairs = [
        (passed, proxy)
        for s in summaries
        for probe_id, passed in s.judge
        for proxy in [
            next(
                (bool(r.correct) for r in s.rows if r.probe_id == probe_id and r.status == "valid"),
                None,
            )
        ]
        if proxy is not None
    ]
    judge: dict[str, Any] = {
        "pairs": len(judge_pairs),
        "agree": sum(1 for j, p in judge_pairs if j == p),
        "judge_pass": sum(1 for j, _ in judge_pairs if j),
        "proxy_pass": sum(1 for _, p in judge_pairs if p),
    }
    judge["agreement"] = judge["agree"] / judge["pairs"] if judge["pairs"] else None
    judge_calls = {c[0]: c for s in summaries for c in s.calls if c[1] == "judge"}
    judge_usage = sum((c[3] for c in judge_calls.values()), Usage())
    spend["judge"] = {
        "calls": judge["pairs"],
        "input": judge_usage.input,
        "cache_read": judge_usage.cache_read,
        "cache_write": judge_usage.cache_write,
        "output": judge_usage.output,
        **_cost(catalog, list(judge_calls.values())),
    }

    paired: dict[str, dict[str, Any]] = {}
    if "native" in by_arm:
        native_correct = {
            (s.repeat, s.trace_id, r.probe_id): bool(r.correct)
            for s in by_arm["native"]
            for r in s.rows
            if r.status == "valid"
        }
        for arm in arms:
            if arm == "native":
                continue
            pairs = sorted(
                (k, bool(r.correct), native_correct[k])
                for s in by_arm[arm]
                for r in s.rows
                for k in [(s.repeat, s.trace_id, r.probe_id)]
                if r.status == "valid" and k in native_correct
            )
            b = sum(1 for _, a, n in pairs if a and not n)
            c = sum(1 for _, a, n in pairs if n and not a)
            arm_vector = [a for _, a, _ in pairs]
            base_vector = [n for _, _, n in pairs]
            interval = _bootstrap(store, arm_vector, base_vector)
            paired[arm] = {
                "pairs": len(pairs),
                "both_correct": sum(1 for _, a, n in pairs if a and n),
                "arm_only": b,
                "native_only": c,
                "both_wrong": sum(1 for _, a, n in pairs if not a and not n),
                "mcnemar_p": mcnemar_exact(b, c),
                "delta_pp": (
                    100 * (sum(arm_vector) - sum(base_vector)) / len(pairs) if pairs else None
                ),
                "ci_low": interval[0] if interval else None,
                "ci_high": interval[1] if interval else None,
            }
    return Results(
        run=run,
        units=len(summaries),
        arms=arms,
        repeats=repeats,
        categories=categories,
        accuracy=accuracy,
        flip_rate=flip_rate,
        outcomes=outcomes,
        tool_use=tool_use,
        excluded=excluded,
        availability=availability,
        judge=judge,
        spend=spend,
        paired=paired,
        lookup=lookup_table(
            ((s.repeat, s.trace_id, s.arm, s.lookup_rows) for s in summaries), planned_slots
        ),
    )


def _tool_use(valid: Iterable[tuple[str, ProbeRow]], categories: list[str]) -> dict[str, Any]:
    rows = list(valid)

    def split(selected: list[ProbeRow]) -> dict[str, Any]:
        called = [r for r in selected if r.history_called]
        uncalled = [r for r in selected if not r.history_called]
        return {
            "samples": len(selected),
            "with_call": len(called),
            "call_rate": len(called) / len(selected) if selected else None,
            "accuracy_with_call": (
                sum(1 for r in called if r.correct) / len(called) if called else None
            ),
            "accuracy_without_call": (
                sum(1 for r in uncalled if r.correct) / len(uncalled) if uncalled else None
            ),
        }

    result = split([r for _, r in rows])
    result["by_category"] = {c: split([r for cat, r in rows if cat == c]) for c in categories}
    return result


def _planned_slots(run_dir: Path) -> list[dict[str, Any]] | None:
    """The lookup slots a run planned (``lookup-slots.json``), if it is a lookup run."""
    try:
        document = msgspec.json.decode((run_dir / "lookup-slots.json").read_bytes())
    except (OSError, msgspec.MsgspecError):
        return None
    slots = document.get("slots") if isinstance(document, dict) else None
    return slots if isinstance(slots, list) else None


def aggregate_run(
    store: Store, run_dir: Path, catalog: Catalog | None = None
) -> tuple[Results, dict[str, Path], int]:
    """Aggregate ``<run_dir>/units`` and write the three outputs into `run_dir`, pricing
    real calls with `catalog` (default: the checked-in pricing catalog).

    Returns the results, the output paths and how many units were read in full.
    Raises:
        AggregateError: a unit was refused (see the module doc), or there were none.
    """
    from continuity.report.render import render_html, render_markdown

    summaries, read = load_summaries(store, run_dir / "units")
    results = combine(store, run_dir.name, summaries, _planned_slots(run_dir), catalog)
    paths = {
        "results": run_dir / "results.json",
        "summary": run_dir / "summary.md",
        "report": run_dir / "report.html",
    }
    write_json(paths["results"], results)
    write_output(paths["summary"], render_markdown(results).encode("utf-8"))
    write_output(paths["report"], render_html(results).encode("utf-8"))
    return results, paths, read
