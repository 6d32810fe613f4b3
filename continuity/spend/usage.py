"""Settlement: raw usage, service tiers, the catalog cost and the post-settlement checks.

Only a raw ``response.completed`` or ``response.incomplete`` event settles, and only
when its ``usage`` has an integer ``input_tokens`` >= 1 and an integer
``output_tokens`` >= 0; anything else reported as usage is ``lookup_invalid_usage``.
Normalised usage (`continuity.messages.Usage`) is never a substitute: the guard reads
the raw event itself, decoded from the event's own bytes, so no later hook can rewrite
what it captured.

A usage record keeps the allowlisted numeric fields only (`UsageRecord`: input, output,
cache read, cache write, reasoning), and an optional field the event left out stays
absent. Input includes cache reads and writes; reasoning is part of output and is
never added to it again.

Tiers (`continuity.spend.assumptions.tier_multiplier`): default 1x, flex 0.5x,
priority 2x; an absent or null tier is priced at 2x and recorded as null; any other
value stops (``lookup_unknown_tier``) and is recorded as null too.

After settlement the cost must be consistent with what admission assumed
(`settlement_violation`): input <= U, output <= O, reasoning <= output, cache reads
plus writes <= input, and cost <= hold. A violation is a sticky integrity stop.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from continuity.messages import Usage
from continuity.providers.rates import RateCard, RateTier, price_usage
from continuity.spend.assumptions import Assumptions, tier_multiplier

__all__ = [
    "RawSettlement",
    "UsageRecord",
    "catalog_cost",
    "raw_settlement",
    "settlement_violation",
]


class UsageRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The numeric usage of one response; an optional count the event left out stays
    absent (UNSET), never zero."""

    input: int
    output: int
    cache_read: int | msgspec.UnsetType = msgspec.UNSET
    cache_write: int | msgspec.UnsetType = msgspec.UNSET
    reasoning: int | msgspec.UnsetType = msgspec.UNSET


class RawSettlement(msgspec.Struct, frozen=True, kw_only=True):
    """What a raw terminal event says: its usage (None: missing), the raw tier, whether
    the reply is empty or length-terminal, and the problem with its usage, if any."""

    usage: UsageRecord | None
    tier: str | None
    tier_known: bool
    invalid: str | None  # why the usage cannot settle (lookup_invalid_usage)
    unusable_reply: bool  # empty, or cut off by the output limit


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _optional(details: Any, key: str) -> int | msgspec.UnsetType | None:
    """An optional count: UNSET when absent, None when present but not an integer."""
    if not isinstance(details, dict) or key not in details or details[key] is None:
        return msgspec.UNSET
    value = _count(details[key])
    return value if value is not None and value >= 0 else None


def _usage(raw: Any) -> tuple[UsageRecord | None, str | None]:
    if not isinstance(raw, dict):
        return None, None
    input_tokens, output = _count(raw.get("input_tokens")), _count(raw.get("output_tokens"))
    if input_tokens is None or output is None or input_tokens < 1 or output < 0:
        return None, (
            f"input_tokens {raw.get('input_tokens')!r} and output_tokens "
            f"{raw.get('output_tokens')!r} (need an integer input >= 1 and output >= 0)"
        )
    incoming, outgoing = raw.get("input_tokens_details"), raw.get("output_tokens_details")
    read = _optional(incoming, "cached_tokens")
    write = _optional(incoming, "cache_write_tokens")
    reasoning = _optional(outgoing, "reasoning_tokens")
    if read is None or write is None or reasoning is None:
        return None, "a cache or reasoning count that is not a non-negative integer"
    return UsageRecord(
        input=input_tokens, output=output, cache_read=read, cache_write=write, reasoning=reasoning
    ), None


def _unusable(response: dict[str, Any]) -> bool:
    details = response.get("incomplete_details") or {}
    if isinstance(details, dict) and details.get("reason") == "max_output_tokens":
        return True
    for item in response.get("output") or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            return False
        if item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("text"):
                    return False
    return True


def raw_settlement(response: dict[str, Any], assumptions: Assumptions) -> RawSettlement:
    """Read a raw ``response.completed`` / ``response.incomplete`` response object."""
    tier = response.get("service_tier")
    known = tier_multiplier(assumptions, tier) is not None
    usage, invalid = _usage(response.get("usage"))
    if response.get("usage") is None:
        invalid = None  # missing usage is a lost request, not an invalid one
    return RawSettlement(
        usage=usage,
        tier=tier if known and isinstance(tier, str) else None,
        tier_known=known,
        invalid=invalid,
        unusable_reply=_unusable(response),
    )


def catalog_cost(usage: UsageRecord, tier: str | None, assumptions: Assumptions) -> Decimal:
    """The registered catalog cost of `usage` at `tier` (absent: the 2x multiplier), in
    USD, exactly, by the one price function (`continuity.providers.rates.price_usage`).
    Uncached input is input less cache reads and writes. Every part counts, zero or not,
    so the cost keeps the decimal places settlement has always written."""
    rates = assumptions.rates
    multiplier = tier_multiplier(assumptions, tier)
    if multiplier is None:
        raise ValueError(f"unknown tier {tier!r}")
    read = usage.cache_read or 0
    write = usage.cache_write or 0
    card = RateCard(
        base=RateTier(
            input=rates.input,
            output=rates.output,
            cache_read=rates.cache_read,
            cache_write=rates.cache_write,
        )
    )
    call = Usage(input=usage.input - read, cache_read=read, cache_write=write, output=usage.output)
    cost = price_usage(card, call, multiplier=multiplier, every_part=True)
    assert cost is not None  # every registered rate is known
    return cost


def settlement_violation(
    usage: UsageRecord, u: int, cost: Decimal, hold: Decimal, assumptions: Assumptions
) -> str | None:
    """The first registered implication a settled response breaks, or None."""
    read = usage.cache_read or 0
    write = usage.cache_write or 0
    reasoning = usage.reasoning or 0
    checks = (
        (usage.input <= u, f"input {usage.input} exceeds U {u}"),
        (
            usage.output <= assumptions.max_output,
            f"output {usage.output} exceeds O {assumptions.max_output}",
        ),
        (reasoning <= usage.output, f"reasoning {reasoning} exceeds output {usage.output}"),
        (read + write <= usage.input, f"cache {read} + {write} exceeds input {usage.input}"),
        (cost <= hold, f"cost ${cost} exceeds the hold ${hold}"),
    )
    return next((message for ok, message in checks if not ok), None)
