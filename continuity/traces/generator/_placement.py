"""Where things sit in a generated trace: sessions, owner-turn roles, records and sizes.

`layout` decides the counts, the sessions, which owner turns call tools (and which call
two), the owner turns that carry the scenario's rules, steers and commitments, and which
tool records hold the facts the probes ask about. `size_records` then gives every record
a size so the whole context lands on the drawn token target.
"""

from __future__ import annotations

import dataclasses

from continuity.traces.prng import Rng
from continuity.traces.schema import ToolCall

__all__ = [
    "STEER_ROLES",
    "Exchange",
    "Record",
    "layout",
    "size_records",
]

_OVERSIZED = (17_000, 44_000)
_REGULAR_UNITS = (8_300 // 4, 16_300 // 4)  # regular results, in 4-character units


@dataclasses.dataclass
class Record:
    index: int
    kind: str
    role: str | None = None
    size: int = 0
    call: ToolCall | None = None
    record_id: str = ""
    date: str = ""


@dataclasses.dataclass
class Exchange:
    owner_index: int
    session: int
    role: str | None = None
    records: list[Record] = dataclasses.field(default_factory=list)
    owner_text: str = ""
    call_text: str = ""
    steer_text: str = ""
    reply: str = ""


STEER_ROLES = {"steer_escalation": "email", "steer_delivery": "parcel", "steer_share": "chat"}
_FACT_KINDS = {
    "account": "email",
    "date0": "email",
    "amount0": "document",
    "secret": "email",
    "provisional": "email",
    "mid": "email",
    "amount1": "email",
    "date2": "email",
    "booking_pack": "document",
}


def layout(rng: Rng) -> tuple[list[Exchange], list[Record], list[int]]:
    """Decide counts, sessions, which owner turns call tools, and where facts sit."""
    n_sessions = rng.between(7, 10)
    n_owner = rng.between(90, 112)
    n_records = rng.between(66, 84)
    n_double = rng.between(3, 8)
    n_tool_turns = n_records - n_double

    # Every session is at least eight owner turns long; the rest is spread at random.
    extra_turns = n_owner - 8 * n_sessions
    cuts = sorted(rng.between(0, extra_turns) for _ in range(n_sessions - 1))
    lengths = [8 + b - a for a, b in zip([0, *cuts], [*cuts, extra_turns], strict=True)]
    session_of = [s_index for s_index, length in enumerate(lengths) for _ in range(length)]

    roles = _owner_roles(rng, n_owner)
    free = [i for i in range(n_owner) if i not in roles]
    tool_turns = {i for i, r in roles.items() if r in STEER_ROLES or r == "account_turn"}
    tool_turns |= set(rng.sample(free, n_tool_turns - len(tool_turns)))
    doubles = set(rng.sample(sorted(t for t in tool_turns if t not in roles), n_double))
    exchanges, records = _exchanges(session_of, roles, tool_turns, doubles)
    return exchanges, records, _place_facts(rng, records)


def _owner_roles(rng: Rng, n_owner: int) -> dict[int, str]:
    """Owner turn index -> role: the rules, the account turn, commitments and steers."""

    def near(fraction_pct: int, taken: set[int], low: int = 1) -> int:
        target = max(low, n_owner * fraction_pct // 100)
        for delta in range(n_owner):
            for candidate in (target + delta, target - delta):
                if low <= candidate < n_owner and candidate not in taken:
                    return candidate
        raise AssertionError("no free owner turn")

    roles: dict[int, str] = {0: "rules", 1: "account_turn"}
    for role, pct in (
        ("shared_start", rng.between(15, 20)),
        ("sent", rng.between(27, 31)),
        ("final_start", rng.between(33, 36)),
        ("steer_escalation", rng.between(38, 42)),
        ("moved_date_owner", rng.between(48, 52)),
        ("steer_delivery", rng.between(58, 62)),
        ("final_mark", rng.between(66, 70)),
        ("steer_share", rng.between(85, 89)),
    ):
        roles[near(pct, set(roles))] = role
    roles[near(100, set(roles), low=n_owner - 3)] = "next_action"
    return roles


def _exchanges(
    session_of: list[int], roles: dict[int, str], tool_turns: set[int], doubles: set[int]
) -> tuple[list[Exchange], list[Record]]:
    """One exchange per owner turn, with one record per tool call (two for a double)."""
    exchanges: list[Exchange] = []
    records: list[Record] = []
    for o_index in range(len(session_of)):
        exchange = Exchange(o_index, session_of[o_index], roles.get(o_index))
        if o_index in tool_turns:
            for _ in range(2 if o_index in doubles else 1):
                record = Record(len(records), "")
                records.append(record)
                exchange.records.append(record)
                if exchange.role in STEER_ROLES:
                    record.kind = STEER_ROLES[exchange.role]
                    record.role = exchange.role
        exchanges.append(exchange)
    records[0].role, records[0].kind = "account", "email"
    return exchanges, records


def _place_facts(rng: Rng, records: list[Record]) -> list[int]:
    """Give the fact records their roles and kinds; the rest get kinds in turn.

    Returns the booking pack's index and the oversized records' indexes.
    """
    n = len(records)
    taken = {r.index for r in records if r.role}

    def place(role: str, low_pct: int, high_pct: int) -> None:
        target = n * rng.between(low_pct, high_pct) // 100
        for delta in range(n):
            for candidate in (target + delta, target - delta):
                if 0 <= candidate < n and candidate not in taken:
                    records[candidate].role = role
                    records[candidate].kind = _FACT_KINDS[role]
                    taken.add(candidate)
                    return
        raise AssertionError(f"no record for {role}")

    place("date0", 10, 16)
    place("amount0", 21, 27)
    place("secret", 31, 37)
    place("provisional", 43, 49)
    place("mid", 53, 59)
    place("amount1", 63, 69)
    place("date2", 77, 83)
    booking = n - 1 - rng.between(0, 2)
    if booking in taken:
        booking = max(set(range(n - 3, n)) - taken)
    records[booking].role, records[booking].kind = "booking_pack", "document"
    taken.add(booking)
    candidates = [i for i in range(n * 20 // 100, n * 90 // 100) if i not in taken]
    oversized = rng.sample(candidates, rng.between(1, 2))
    for index in oversized:
        records[index].role = "oversized"
        taken.add(index)
    kinds = ["email", "chat", "web", "document", "calendar", "parcel"]
    rng.shuffle(kinds)
    position = 0
    for record in records:
        if not record.kind:
            record.kind = kinds[position % len(kinds)]
            position += 1
    return [booking, *oversized]


def size_records(rng: Rng, records: list[Record], oversized: list[int], tool_tokens: int) -> None:
    """Give every record a size (a multiple of 4) so the tokens sum to `tool_tokens`."""
    units_total = tool_tokens  # one token is four characters, exactly, at these sizes
    fixed = 0
    for index in oversized:
        records[index].size = 4 * (rng.between(*_OVERSIZED) // 4)
        fixed += records[index].size // 4
    mid = next(r for r in records if r.role == "mid")
    mid.size = 4 * rng.between(12_000 // 4, 16_000 // 4)
    fixed += mid.size // 4
    regular = [r for r in records if r.size == 0]
    low, high = _REGULAR_UNITS
    extra = units_total - fixed - low * len(regular)
    if not 0 <= extra <= (high - low) * len(regular):
        raise AssertionError("record sizes cannot meet the size target")
    units = [low] * len(regular)
    weights = [rng.between(1, 1000) for _ in regular]
    active = list(range(len(regular)))
    while extra > 0:
        total_weight = sum(weights[i] for i in active)
        given = 0
        for i in active:
            add = min(high - units[i], extra * weights[i] // total_weight)
            units[i] += add
            given += add
        if given == 0:
            for i in active:
                if given == extra:
                    break
                if units[i] < high:
                    units[i] += 1
                    given += 1
        extra -= given
        active = [i for i in active if units[i] < high]
    for record, unit_count in zip(regular, units, strict=True):
        record.size = 4 * unit_count
