"""The hard-suite generator: long, seeded, byte-identical traces.

`generate_trace(seed)` builds one trace of the seed's "Hard suite (generated)" shape:
84-116 owner turns over 7-10 sessions, 64-96 tool records of 8-64 KiB (two or three
over 16 KiB, including the booking pack), three mid-turn steers, a date that moves twice
and an amount revised once, three owner rules in turn 1, an early account reference
outside both the last-64 window and the tool projection, an identifier in the middle of
a long result, one at the head of the oversized booking pack with a superseded decoy, a
secret-looking temporary password, and a size of 212k-232k estimated tokens.

Every choice comes from `Rng.derive(seed, "hard-generator")`. With ``distractors=True``
the same choices are made, and a second, independent stream swaps some whole filler
units for labelled hypothetical corrections of the same length: facts, answers, byte
sizes and pressure are unchanged.

The package, step by step (each module owns one):

- `_cast`: the per-seed cast and values (`draw_world`) and the shared neutral vocabulary;
- `_placement`: counts, sessions, owner-turn roles and which records hold the facts
  (`layout`), then every record's size (`size_records`);
- `_dialogue`: what the owner and the assistant say, and the tool calls (`Writer`);
- `_results`: what each tool result says, composed from `continuity.traces.filler`;
- `_assembly`: the schema's sessions, turns and probes (`assemble`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from continuity.traces.bounds import turn_tokens
from continuity.traces.filler import FillerSource
from continuity.traces.generator._assembly import PROBE_PREFIX, assemble, trace_id_for
from continuity.traces.generator._cast import draw_world
from continuity.traces.generator._dialogue import Writer
from continuity.traces.generator._placement import (
    STEER_ROLES,
    Exchange,
    layout,
    size_records,
)
from continuity.traces.generator._results import distractor_replacer, record_output
from continuity.traces.prng import Rng
from continuity.traces.scenarios import scenario_for_seed
from continuity.traces.schema import AssistantMessage, Trace

__all__ = [
    "PROBE_PREFIX",
    "generate_trace",
    "trace_id_for",
]


def generate_trace(seed: int, *, distractors: bool = False) -> Trace:
    """Generate the hard (or hard-distractors) trace for `seed`. Pure and deterministic."""
    scenario = scenario_for_seed(seed)
    rng = Rng.derive(seed, "hard-generator")
    world = draw_world(rng, scenario)
    exchanges, records, oversized = layout(rng)
    writer = Writer(rng, world)

    dates = _session_dates(rng, world.start, exchanges[-1].session + 1)
    _write(writer, exchanges, dates)
    # Size the tool results so the whole context lands on the drawn token target.
    target = rng.between(216_000, 228_000)
    size_records(rng, records, oversized, target - _non_tool_tokens(exchanges))

    filler = FillerSource(rng, scenario, [*world.people, world.contact], world.towns)
    replace: Callable[[str], str | None] | None = None
    if distractors:
        replace = distractor_replacer(seed, world)
    outputs = {r.record_id: record_output(rng, world, r, filler, replace) for r in records}
    return assemble(seed, world, exchanges, dates, outputs, distractors)


def _session_dates(rng: Rng, start: dt.date, n_sessions: int) -> list[dt.date]:
    """One date per session, one to four days apart."""
    dates = [start]
    for _ in range(n_sessions - 1):
        dates.append(dates[-1] + dt.timedelta(days=rng.between(1, 4)))
    return dates


def _write(writer: Writer, exchanges: list[Exchange], dates: list[dt.date]) -> None:
    """Fill in every exchange's texts, and its records' dates, calls and ids."""
    for exchange in exchanges:
        opener = exchange.owner_index > 0 and (
            exchanges[exchange.owner_index - 1].session != exchange.session
        )
        exchange.owner_text = writer.owner(exchange, opener)
        for record in exchange.records:
            record.date = dates[exchange.session].isoformat()
            record.call = writer.call(record, dates[exchange.session])
            record.record_id = f"rec-{record.index + 1:03d}"
        if exchange.records:
            exchange.call_text = writer.call_text(exchange)
        if exchange.role in STEER_ROLES:
            exchange.steer_text = writer.steer(exchange)
        exchange.reply = writer.reply(exchange)


def _non_tool_tokens(exchanges: list[Exchange]) -> int:
    """The estimated tokens of everything but the tool results' outputs."""
    non_tool = 0
    for exchange in exchanges:
        non_tool += -(-len(exchange.owner_text) // 4) + -(-len(exchange.reply) // 4)
        non_tool += -(-len(exchange.steer_text) // 4)
        if exchange.records:
            non_tool += turn_tokens(
                AssistantMessage(
                    turn_id="x",
                    text=exchange.call_text,
                    tool_calls=tuple(r.call for r in exchange.records if r.call),
                )
            )
    return non_tool
