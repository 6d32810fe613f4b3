"""The selection replay's regression cases: development-generator seeds and newly
written fictional transition and flood cases (never a suite's probe data), and the
frozen snapshots they are compared with.

``python3 -m tests.memory.selection_cases --write`` re-freezes
``fixtures/ledger/selection-snapshots.json`` from the current selector (``candidate``)
and the same selector without its owner-paragraph bonus (``base``, the preceding
selector). Re-freeze only on purpose: the regression test compares every change with
these.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import msgspec

from continuity.memory.selection_replay import compact, replay_selection
from continuity.memory.upkeep_selection import BOOTSTRAP_CAPS, INCREMENTAL_CAPS
from continuity.traces.generator import generate_trace
from continuity.traces.schema import OwnerMessage, ReplayTrace, Session, ToolResult

SNAPSHOTS = Path(__file__).resolve().parents[2] / "fixtures" / "ledger" / "selection-snapshots.json"
SEEDS = (101, 104, 107)
BASE_CAPS = [
    msgspec.structs.replace(BOOTSTRAP_CAPS, bonus_cap=0),
    msgspec.structs.replace(INCREMENTAL_CAPS, bonus_cap=0),
    msgspec.structs.replace(INCREMENTAL_CAPS, bonus_cap=0),
]
# Role of each marked owner turn in the written cases (by turn id).
RULES = ("t-rule-1", "t-rule-2")
NEXT_ACTION = "t-next"
COMPLETION = "t-done"


def _filler(index: int, size: int) -> str:
    words = ("ledger", "window", "harbour", "signal", "garden", "copper", "violet", "ember")
    text = " ".join(f"{words[(index + i) % len(words)]}{i % 97}" for i in range(size // 7 + 1))
    return text[:size]


def _trace(trace_id: str, turns: list[OwnerMessage | ToolResult]) -> ReplayTrace:
    return ReplayTrace(
        schema_version=1,
        trace_id=trace_id,
        fictional=True,
        family="original",
        scenario="selection-case",
        title=trace_id,
        sessions=(Session(session_id="s1", date="2031-04-02", turns=tuple(turns)),),
    )


def _owner(turn_id: str, text: str) -> OwnerMessage:
    return OwnerMessage(turn_id=turn_id, text=text)


def _tool(index: int, size: int) -> ToolResult:
    return ToolResult(
        turn_id=f"r{index}",
        call_id=f"c{index}",
        tool="doc_read",
        tool_kind="document",
        output="\n\n".join(_filler(index + p, size // 4) for p in range(4)),
    )


def transition_case() -> ReplayTrace:
    """Two short owner rules first, a long middle of tool results and long owner
    paragraphs, a short completion report with a suggestion in the middle (what a
    recency-first selector misses), and a long next action near the end."""
    turns: list[OwnerMessage | ToolResult] = [
        _owner(RULES[0], "Keep each update under three lines, and never copy the wider list."),
        _owner(RULES[1], "Invoices go to Priya only; nobody else signs them."),
    ]
    for index in range(150):
        if index % 3 == 0:
            turns.append(_tool(index, 6_000))
        elif index == 20:
            turns.append(
                _owner(
                    COMPLETION,
                    "The crew finished the east wall today. I suggest we book "
                    "the sealing visit for Thursday morning.",
                )
            )
        else:
            turns.append(_owner(f"t{index}", _filler(index, 700)))
    turns.append(
        _owner(
            NEXT_ACTION,
            "Next I will ring the landlord about the deposit before Monday "
            "noon, then confirm the van booking. " + _filler(999, 400),
        )
    )
    turns += [_owner(f"u{i}", _filler(1_000 + i, 650)) for i in range(6)]
    return _trace("case-transition", turns)


def owner_flood_case() -> ReplayTrace:
    """Five tool results first, then four hundred owner paragraphs."""
    turns: list[OwnerMessage | ToolResult] = [_tool(i, 5_000) for i in range(5)]
    turns += [_owner(f"o{i}", _filler(i, 300 + (i * 37) % 400)) for i in range(400)]
    return _trace("case-owner-flood", turns)


def tool_flood_case() -> ReplayTrace:
    """Three owner paragraphs first, then three hundred large tool results."""
    turns: list[OwnerMessage | ToolResult] = [_owner(f"o{i}", _filler(i, 500)) for i in range(3)]
    turns += [_tool(i, 4_000 + (i * 131) % 12_000) for i in range(300)]
    return _trace("case-tool-flood", turns)


def cases() -> dict[str, ReplayTrace]:
    traces = {f"seed-{seed}": generate_trace(seed) for seed in SEEDS}
    return {
        **traces,
        "transition": transition_case(),
        "owner-flood": owner_flood_case(),
        "tool-flood": tool_flood_case(),
    }


def snapshots() -> dict[str, dict[str, Any]]:
    return {
        name: {
            "base": compact(replay_selection(trace, caps=BASE_CAPS)),
            "candidate": compact(replay_selection(trace)),
        }
        for name, trace in cases().items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="re-freeze the snapshots")
    args = parser.parse_args(argv)
    data = msgspec.json.format(msgspec.json.encode(snapshots()), indent=1) + b"\n"
    if args.write:
        SNAPSHOTS.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOTS.write_bytes(data)
        print(f"froze {SNAPSHOTS}")
    else:
        sys.stdout.buffer.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
