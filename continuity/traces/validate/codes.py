"""The trace validation codes, in one table: every code the validator reports.

`TRACE_CODES` maps each code to what it means (the README's "Validation and error
codes" table says the same, and `continuity/errors.py` lists the codes under
`TraceInvalid`; tests/traces/test_codes.py keeps the three in step). `TraceCode` is the
type of a code, so an issue raised with a code missing from the table fails mypy.
"""

from __future__ import annotations

from typing import Final, Literal

from continuity.errors import Issue

__all__ = ["TRACE_CODES", "TraceCode", "issue"]

TraceCode = Literal[
    "trace_malformed",
    "trace_too_large",
    "trace_schema_unsupported",
    "trace_not_fictional",
    "duplicate_id",
    "sequence_invalid",
    "tool_call_invalid",
    "shape_out_of_range",
    "steer_missing",
    "category_missing",
    "correction_missing",
    "evidence_unknown",
    "evidence_mismatch",
    "identifier_outside_tool_output",
    "secret_outside_tool_output",
    "abstention_term_present",
    "probe_leaks_answer",
    "placement_invalid",
    "owner_rules_missing",
    "vocabulary_not_neutral",
]

TRACE_CODES: Final[dict[TraceCode, str]] = {
    "trace_malformed": "not JSON, wrong types, unknown fields, empty content, bad ids, "
    "nesting or a field past its limit",
    "trace_too_large": "the file is over the trace size limit",
    "trace_schema_unsupported": "schema_version is not the one this build reads",
    "trace_not_fictional": "fictional is not true",
    "duplicate_id": "a session, turn, call or probe id repeats",
    "sequence_invalid": "turns in the wrong order: a session not opened by the owner, a "
    "result without an open call, a call never answered, a misplaced steer, owner input "
    "with no reply, dates going backwards",
    "tool_call_invalid": "unknown tool, arguments not matching its schema, a result of the "
    "wrong kind",
    "shape_out_of_range": "counts or sizes outside the family's shape",
    "steer_missing": "fewer mid-turn steers than the family needs",
    "category_missing": "a required probe category (or the sent/drafted pair, or an early "
    "constraint) is missing",
    "correction_missing": "a superseded_current probe with nothing superseded, or the hard "
    "suite's moved date or revised amount is missing",
    "evidence_unknown": "a fact names no evidence or a turn id that does not exist",
    "evidence_mismatch": "a value does not occur verbatim in a turn named as its evidence",
    "identifier_outside_tool_output": "a tool identifier appears outside tool output",
    "secret_outside_tool_output": "the redaction secret appears outside tool output",
    "abstention_term_present": "a never-mentioned term does occur in the conversation",
    "probe_leaks_answer": "a probe's text contains an expected value",
    "placement_invalid": "a superseded value does not come first, or a hard-suite placement "
    "rule fails",
    "owner_rules_missing": "the hard suite's three owner rules in turn 1 are missing",
    "vocabulary_not_neutral": "generated suites avoid relationship, health, religion and "
    "politics terms",
}


def issue(code: TraceCode, location: str, message: str) -> Issue:
    """One validation issue: a code from `TRACE_CODES`, a JSON path and a message."""
    return Issue(code, location, message)
