"""`doit arms`: every arm as a user reads it, one row each.

What an arm crosses, on whose history, with which continuity support, what evidence its
samples must show, the pressure a long-trace sample must be under, and whether it can
run at this revision (`continuity.arms` holds the definitions).
"""

from __future__ import annotations

from continuity.arms import ARMS, LOOKUP_ONLY, OPT_IN, Arm, Pressure
from continuity.tables import terminal_width, text_table

__all__ = ["COLUMNS", "arm_rows", "arms_table"]

COLUMNS = ("arm", "letter", "boundary", "history", "continuity", "evidence", "pressure", "runs")

_PRESSURE = (
    ("probe_input_tokens", "probe input >= {:,} tokens"),
    ("replayed_messages", ">= {:,} messages replayed"),
    ("dropped_records", ">= {:,} records dropped"),
    ("compaction_tokens_before", "compaction at >= {:,} tokens"),
    ("mid_tokens_before", "mid-trace compaction at >= {:,} tokens"),
)


def _pressure(pressure: Pressure | None) -> str:
    if pressure is None:
        return "-"
    kept = [
        text.format(value)
        for name, text in _PRESSURE
        if (value := getattr(pressure, name)) is not None
    ]
    return "; ".join(kept) + " (long traces)" if kept else "-"


def _continuity(arm: Arm) -> str:
    if not arm.retained:
        return "off"
    support = "retained store + pack" if arm.pack else "retained store"
    if arm.ledger:
        support += " + extracted ledger (3 upkeep stages)"
    return support + (", ConversationHistory" if arm.history_tool else "")


def _runs(arm: Arm) -> str:
    if not arm.available:
        return "not at this revision"
    if arm.id in LOOKUP_ONLY:
        return "lookup mode only"
    where = "long suites only" if arm.hard_only else "every suite"
    return f"{where}, when named (opt-in: paid extractions)" if arm.id in OPT_IN else where


def arm_rows() -> list[dict[str, str]]:
    """One row per arm, in definition order; every value a string."""
    return [
        {
            "arm": arm.id,
            "letter": arm.letter,
            "boundary": arm.boundary,
            "history": arm.history,
            "continuity": _continuity(arm),
            "evidence": ", ".join(arm.evidence),
            "pressure": _pressure(arm.pressure),
            "runs": _runs(arm),
        }
        for arm in ARMS.values()
    ]


def arms_table(width: int | None = None) -> str:
    """The rows as an aligned text table, a header first; wider than `width` (default:
    the terminal's, else 100 columns), one block per arm."""
    return text_table(arm_rows(), COLUMNS, width or terminal_width())
