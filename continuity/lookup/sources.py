"""Annotated lookup sources: which tool output holds a probe's exact value.

Only unambiguous literal tool-identifier sources are annotated in this version: for a
tool-identifier probe, the first of its evidence tool results that holds the answer
verbatim (where the identifier entered the conversation). Every other probe's source
provenance stays unknown (it still runs, but has no reference path and never counts
toward recovery). Sources are evaluator-only: the value,
its source line and the output's digest never reach a reader or a witness.
"""

from __future__ import annotations

from continuity.digest import digest_bytes
from continuity.lookup.receipts import SourceRef
from continuity.traces.schema import Probe, ToolIdentifierExpectation, ToolResult, Trace, iter_turns

__all__ = ["sources_for"]


def sources_for(trace: Trace, probe: Probe) -> list[SourceRef]:
    """The probe's annotated source (zero or one), in conversation order."""
    expectation = probe.expectation
    if not isinstance(expectation, ToolIdentifierExpectation):
        return []
    value = expectation.answer.value
    wanted = set(expectation.answer.evidence)
    outputs = [
        turn
        for _, _, turn in iter_turns(trace)
        if isinstance(turn, ToolResult) and turn.turn_id in wanted and value in turn.output
    ]
    if not outputs:
        return []  # not literal in any evidence tool result: provenance unknown
    output = outputs[0].output
    line = next(line for line in output.splitlines() if value in line).strip()
    data = output.encode("utf-8")
    return [SourceRef(value=value, line=line, digest=digest_bytes(data), size=len(data))]
