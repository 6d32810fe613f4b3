"""Spend per arm: tokens of every probe turn (compaction requests included, and as an
"of which" subtotal), live turns, and the list price of distinct real calls; the judge
separately.

Spend is accounting, not a comparison: each row names the suites its samples came from,
since arms that run on part of a plan (``ceiling``: long traces only) spend on a
different trace set.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from continuity.messages import Usage
from continuity.plan.pricing import Catalog, call_cost
from continuity.report.results import Spend
from continuity.report.summary import UnitSummary
from continuity.report.upkeep import known_usage

__all__ = ["arm_spend", "judge_spend"]


class _Cost(msgspec.Struct, frozen=True, kw_only=True):
    model_calls: int
    cost_usd: float | None
    cost_known_usd: float
    unpriced_calls: int


def _cost(catalog: Catalog, calls: list[tuple[str, str, str, Usage]]) -> _Cost:
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
    return _Cost(
        model_calls=len(unique),
        cost_usd=round(known, 6) if unique and not unpriced else None,
        cost_known_usd=round(known, 6),
        unpriced_calls=unpriced,
    )


def _upkeep_usage(units: list[UnitSummary]) -> Usage | None:
    """The known tokens of the ledger arm's extractions (once per unit), or None for an
    arm that kept no ledger."""
    rows = [s.upkeep for s in units if s.upkeep is not None]
    return known_usage(rows) if rows else None


def arm_spend(catalog: Catalog, units: list[UnitSummary], suites: list[str]) -> Spend:
    """One arm's spend over all its units (`suites`: the suite order of the report).
    The ledger arm's totals include its extractions' known tokens, once per unit."""
    usage = compaction = Usage()
    for summary in units:
        usage = usage + summary.usage
        compaction = compaction + summary.compaction_usage
    upkeep = _upkeep_usage(units)
    total = usage + compaction + (upkeep or Usage())  # compactions and upkeep included
    present = {s.family for s in units}
    extra: dict[str, int] = {}
    if upkeep is not None:
        extra = {
            "upkeep_input": upkeep.input,
            "upkeep_cache_read": upkeep.cache_read,
            "upkeep_output": upkeep.output,
        }
    answered = {c[0] for s in units for c in s.calls if c[1] != "judge"}
    unreported = {k for s in units for k in s.unreported} & answered
    return Spend(
        unreported_calls=len(unreported) or UNSET,
        suites=[s for s in suites if s in present],
        input=total.input,
        cache_read=total.cache_read,
        cache_write=total.cache_write,
        output=total.output,
        compaction_input=compaction.input,
        compaction_cache_read=compaction.cache_read,
        compaction_cache_write=compaction.cache_write,
        compaction_output=compaction.output,
        live_turns=sum(s.live_turns for s in units),
        **msgspec.structs.asdict(
            _cost(catalog, [c for s in units for c in s.calls if c[1] != "judge"])
        ),
        **extra,
    )


def judge_spend(catalog: Catalog, summaries: list[UnitSummary], verdicts: int) -> Spend:
    """The judge's spend over the whole run (each distinct call once)."""
    calls = {c[0]: c for s in summaries for c in s.calls if c[1] == "judge"}
    usage = sum((c[3] for c in calls.values()), Usage())
    unreported = {k for s in summaries for k in s.unreported if k in calls}
    return Spend(
        unreported_calls=len(unreported) or UNSET,
        calls=verdicts,
        input=usage.input,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        output=usage.output,
        **msgspec.structs.asdict(_cost(catalog, list(calls.values()))),
    )
