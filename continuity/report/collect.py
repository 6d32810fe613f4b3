"""Collect a run's unit summaries: every unit file verified, summarised and cached.

Each verified unit is reduced to a small summary (continuity.report.summary), cached in
the store under the digest of the unit file's bytes, so re-aggregating after one unit
changed re-reads only that unit. The cache has two levels, both keyed by the report
code: one entry per unit file (keyed by the file's blake3 digest), and one index per
run directory mapping the digest of each of its files to its summary, so an incremental
aggregate reads one store entry instead of one per unit. A digest the index lacks falls
back to the per-unit entry, then to verifying the file (continuity.report.verify).
Per-unit entries (what lets another run directory reuse a summary) are written when a
run directory has no index yet; once it has one, a re-aggregate records new summaries
in the index only, which keeps the incremental path to one store write.

Two checks run on every file, cached or not: its name is the one its fields give
(``unit_key_mismatch``), and no repeat x trace x arm appears twice (``unit_duplicate``)
unless every file for it is a lookup unit (continuity.report.duplicates).

A lookup unit's latencies are not in its file (a unit is deterministic bytes): they are
joined from its action entry's `ProcessReceipt`s after the caches (`_timed`).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.digest import KeySpec, code_digest, digest_bytes
from continuity.errors import AggregateError
from continuity.inputs import UNIT_MAX_BYTES, read_user_bytes
from continuity.report.lookup import with_latency
from continuity.report.runs import runs_hint, unknown_run
from continuity.report.scores import Scorer
from continuity.report.summary import UnitSummary, summarize
from continuity.report.verify import TraceHead, verify_unit
from continuity.sampling.receipts import ProcessReceipt
from continuity.store import Store

__all__ = ["REPORT_CODE", "SUMMARY_SALT", "Slot", "check_builds", "load_summaries"]

SUMMARY_SALT = "unit-summary-v4"
REPORT_CODE = (
    "continuity.report",
    "continuity.probes",
    "continuity.evidence",
    "continuity.plan.pricing",
)

Slot = tuple[int, str, str]  # (repeat, trace id, arm)


class _Cache:
    """The summary cache of one run directory under one scorer (see the module doc)."""

    def __init__(self, store: Store, units_dir: Path, label: str) -> None:
        self.store = store
        self.label = label
        self.code = code_digest(
            [*REPORT_CODE, "continuity.runner.units.build", "continuity.runner.units.record"]
        )
        self.index_key = KeySpec(
            kind="unit-summary-index",
            salt=SUMMARY_SALT,
            code=self.code,
            params={"units": str(units_dir.resolve()), "scorer": label},
        ).key()
        stored_index = store.load_output(self.index_key)
        try:
            self.index = (
                msgspec.json.decode(stored_index, type=dict[str, UnitSummary])
                if stored_index
                else {}
            )
        except msgspec.MsgspecError:
            self.index = {}
        self.fresh: dict[str, UnitSummary] = {}

    def unit_key(self, digest: str) -> str:
        return KeySpec(
            kind="unit-summary",
            salt=SUMMARY_SALT,
            code=self.code,
            params={"scorer": self.label},
            inputs={"unit": digest},
        ).key()

    def cached(self, digest: str) -> UnitSummary | None:
        """The summary of the unit file with this digest, from the index or its entry."""
        summary = self.index.get(digest)
        if summary is None:
            entry = self.store.load_output(self.unit_key(digest))
            if entry is not None:
                summary = msgspec.json.decode(entry, type=UnitSummary)
        return summary

    def add(self, digest: str, summary: UnitSummary, *, fresh: bool) -> None:
        """Note a file's summary; a freshly computed one also gets its per-unit entry
        while the run directory has no index yet."""
        if fresh and not self.index:
            self.store.record_action(
                self.unit_key(digest),
                kind="unit-summary",
                output=self.store.put_blob(msgspec.json.encode(summary)),
            )
        self.fresh[digest] = summary

    def save_index(self) -> None:
        if self.fresh.keys() != self.index.keys():
            self.store.record_action(
                self.index_key,
                kind="unit-summary-index",
                output=self.store.put_blob(msgspec.json.encode(self.fresh)),
            )


def _summarise(
    store: Store,
    path: Path,
    data: bytes,
    scorer: Scorer | None,
    heads: dict[str, TraceHead | None],
) -> UnitSummary:
    """Verify a unit file and summarise it under `scorer`'s grades."""
    record = verify_unit(path, data, store, heads)
    if scorer is None:
        return summarize(record)
    graded, original = scorer.grade(path, record)  # with the original grades beside them
    return msgspec.structs.replace(summarize(graded), original=original)


def _check_slot(
    path: Path, summary: UnitSummary, seen: dict[Slot, tuple[Path, UnitSummary]]
) -> None:
    """The file's name must be the one its fields give, and its slot must be new
    unless both files are lookup units (checked even when the summary was cached)."""
    named = f"r{summary.repeat}-{summary.trace_id}-{summary.arm}.json"
    if path.name != named:
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


def load_summaries(
    store: Store, units_dir: Path, scorer: Scorer | None = None
) -> tuple[list[UnitSummary], int]:
    """Verify and summarise every unit file; return the summaries and how many were
    read in full (the rest came from the cache, see the module doc). `scorer` chooses
    the grades (default: the unit files' original grades); its version is part of every
    cache key. Every file is returned, a lookup unit's second file for the same
    repeat x trace x arm included (`combine` takes the slots they share out of every
    score and cost), in an order independent of the folders that hold them.

    Raises:
        AggregateError: a unit was refused (continuity.report.verify, `_check_slot`),
            the run directory is not there (``run_unknown``) or holds none
            (``run_empty``).
    """
    cache = _Cache(store, units_dir, scorer.label if scorer is not None else "original")
    heads: dict[str, TraceHead | None] = {}  # stored traces' identities, read once each
    summaries: list[tuple[str, str, str, UnitSummary]] = []
    seen: dict[Slot, tuple[Path, UnitSummary]] = {}
    read = 0
    for path in sorted(units_dir.rglob("*.json")):
        data = read_user_bytes(path, limit=UNIT_MAX_BYTES, what="a unit file")
        digest = digest_bytes(data)
        summary = cache.cached(digest)
        if summary is None:
            summary = _summarise(store, path, data, scorer, heads)
            read += 1
            cache.add(digest, summary, fresh=True)
        else:
            cache.add(digest, summary, fresh=False)
        _check_slot(path, summary, seen)
        summaries.append((path.name, summary.key, digest, _timed(store, summary)))
    if not summaries:
        run = units_dir.parent
        if not run.exists():  # the commands refuse it first, at their option (run_dir)
            raise unknown_run(run.name, [run], run.parent, str(run), AggregateError)
        raise AggregateError(
            f"no unit records to aggregate; {runs_hint(run.parent)}",
            code="run_empty",
            location=str(units_dir),
        )
    cache.save_index()
    check_builds(store, [(name, key) for name, key, _, _ in summaries], units_dir)
    # Ordered by file name, then content: which chunk folder holds a copy never matters.
    return [entry[3] for entry in sorted(summaries, key=lambda e: e[:3])], read


def check_builds(store: Store, units: list[tuple[str, str]], units_dir: Path) -> None:
    """A run's units must come from one unit code: each unit's action entry keeps the
    digest of the code that built it (``unit_code``; a unit stored before that was kept
    has none and is not compared). Units of two codes are never pooled.

    Raises:
        AggregateError: ``run_builds_mixed``, naming the units of every code but the
            most common one.
    """
    builds: dict[str, list[str]] = {}
    for name, key in units:
        entry = store.get_action(key, verify_output=False)
        code = entry.meta.get("unit_code") if entry is not None else None
        if isinstance(code, str):
            builds.setdefault(code, []).append(name)
    if len(builds) < 2:
        return
    ranked = sorted(builds.values(), key=lambda names: (-len(names), names))
    others = sorted(name for names in ranked[1:] for name in names)
    raise AggregateError(
        f"the run's units were built by {len(builds)} unit codes; never pooled. Units "
        f"outside the most common build: {', '.join(others[:8])}"
        + (f" (+{len(others) - 8} more)" if len(others) > 8 else "")
        + "; rebuild them with one build, or aggregate each build's units apart",
        code="run_builds_mixed",
        location=str(units_dir),
    )


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
