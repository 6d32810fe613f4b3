"""What every validation rule shares: the trace, its family shape, the issues so far and
the index of its turns (filled in by `_structure.index_turns`)."""

from __future__ import annotations

from typing import NamedTuple

from continuity.errors import Issue
from continuity.traces.schema import ToolResult, Trace, Turn
from continuity.traces.shapes import FAMILY_SHAPES, FamilyShape
from continuity.traces.validate.codes import TraceCode, issue

__all__ = ["Context", "Located"]


class Located(NamedTuple):
    path: str
    turn: Turn
    text: str  # everything a reader could see of this turn
    order: int  # position in the conversation
    session: int


class Context:
    """One validation pass over `trace`: rules read the index and `add` issues in order."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.issues: list[Issue] = []
        self.shape: FamilyShape = FAMILY_SHAPES[trace.family]
        self.turns: dict[str, Located] = {}
        self.records: list[ToolResult] = []
        self.record_paths: list[str] = []

    def add(self, code: TraceCode, location: str, message: str) -> None:
        self.issues.append(issue(code, location, message))

    def has(self, *codes: TraceCode) -> bool:
        """Whether any issue so far carries one of `codes`."""
        return any(i.code in codes for i in self.issues)
