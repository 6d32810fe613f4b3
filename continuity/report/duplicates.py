"""Ambiguous duplicate lookup slots: accepted, reported, never scored or costed.

A lookup run can be built in chunks (subfolders of ``<run>/units/``, which the aggregate
reads recursively). The runner never overwrites one observation of a slot with another
(``lookup_slot_observed``), but two chunk folders can each hold a unit file for the same
repeat x trace x arm. Duplicate observations remain duplicate slots with
occurrence counts, never last-write-wins, and are excluded from exact accuracy and slot
cost statistics rather than double-scored.

So, for lookup units only (a unit whose binding carries ``lookup``), the aggregate
accepts a second unit file for the same repeat x trace x arm
(continuity.report.aggregate.load_summaries); recall-only units, or a lookup unit beside
a recall-only one, are still refused (``unit_duplicate``). Every slot (repeat, trace,
arm, probe) observed by more than one lookup unit is a duplicate.
`without_duplicate_slots` takes each duplicate slot out of every unit that observed it,
so no occurrence enters accuracy, outcomes, exclusions, availability, flips, tool use,
pressure, paired deltas, judge agreement, the scorer comparison or spend (tokens, live
turns, calls): none is chosen, whichever the file order. Its lookup rows stay, so the
lookup table reports the slot as a duplicate with its occurrence count (and keeps it
out of exact accuracy, calls, bytes and latency).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import msgspec

from continuity.messages import Usage
from continuity.report.lookup import LookupRow, SlotKey
from continuity.report.summary import UnitSummary

__all__ = ["duplicate_slots", "without_duplicate_slots"]


def duplicate_slots(summaries: Sequence[UnitSummary]) -> dict[SlotKey, int]:
    """Every lookup slot observed more than once, with its occurrence count."""
    seen = Counter(
        (s.repeat, s.trace_id, s.arm, row.probe_id) for s in summaries for row in s.lookup_rows
    )
    return {slot: n for slot, n in sorted(seen.items()) if n > 1}


def _minus(total: Usage, part: Usage) -> Usage:
    return Usage(
        total.input - part.input,
        total.cache_read - part.cache_read,
        total.cache_write - part.cache_write,
        total.output - part.output,
    )


def _strip(summary: UnitSummary, dropped: set[str]) -> UnitSummary:
    """`summary` without the probes in `dropped`: their rows, judge verdicts, original
    grades, tokens, live turns and the model calls only they made (a call another kept
    probe replayed stays, paid once). Lookup units run offline only
    (``lookup_real_refused``), so they carry no real judge calls to attribute."""
    gone: list[LookupRow] = [r for r in summary.lookup_rows if r.probe_id in dropped]
    kept_keys = {k for r in summary.lookup_rows if r.probe_id not in dropped for k in r.call_keys}
    gone_keys = {k for r in gone for k in r.call_keys} - kept_keys
    usage, compaction = summary.usage, summary.compaction_usage
    for row in gone:
        usage = _minus(usage, row.usage)
        compaction = _minus(compaction, row.compaction_usage)
    return msgspec.structs.replace(
        summary,
        rows=[r for r in summary.rows if r.probe_id not in dropped],
        judge=[j for j in summary.judge if j.probe_id not in dropped],
        original=[o for o in summary.original if o[0] not in dropped],
        usage=usage,
        compaction_usage=compaction,
        calls=[c for c in summary.calls if c[0] not in gone_keys],
        live_turns=summary.live_turns - len(gone),
    )


def without_duplicate_slots(summaries: Sequence[UnitSummary]) -> list[UnitSummary]:
    """The summaries with every duplicate slot taken out of every unit that observed it
    (lookup rows kept, for the lookup table's duplicate count). Order-independent: a slot
    is dropped from all its occurrences, so no file order picks a winner."""
    duplicates = duplicate_slots(summaries)
    if not duplicates:
        return list(summaries)
    out = []
    for summary in summaries:
        dropped = {
            row.probe_id
            for row in summary.lookup_rows
            if (summary.repeat, summary.trace_id, summary.arm, row.probe_id) in duplicates
        }
        out.append(_strip(summary, dropped) if dropped else summary)
    return out
