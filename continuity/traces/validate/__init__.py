"""Trace validation: the seed's rejection rules, each a stable code with a location.

`load_trace` decodes and validates; `validate_trace` checks a decoded trace. Both raise
`TraceInvalid` carrying every issue found (first issue first: decoding before
structure, structure before shape, shape before evidence), so a user fixes a broken
trace in one pass. Nothing here writes anywhere: a trace that fails never reaches the
store.

Locations are JSON paths into the trace (``$.sessions[2].turns[5].output``).

Input limits (documented in the README's "Validation and error codes"): a trace file is at
most `TRACE_MAX_BYTES` (``trace_too_large``) and nests at most `TRACE_MAX_DEPTH` levels;
ids fully match `schema.ID_PATTERN` and every short field has a maximum length in
`schema.FIELD_MAX_CHARS` (both ``trace_malformed`` at the field's path). The limits are
checked before any other validation, so no message ever echoes an oversized value and no
check ever walks one. `load_trace` raises nothing but `TraceInvalid`.

The rule families, one module each, run in this order: `_limits` (size, nesting,
decoding, ids and field lengths), `_structure` (header, unique ids, turn order, tool
calls), `_shape` (the family's counts and sizes), `_evidence` (probes against the turns
they name) and `_design` (the hard suite's design roles, neutral vocabulary). Every code
is in `codes.TRACE_CODES`.
"""

from __future__ import annotations

from pathlib import Path

from continuity.errors import Issue, TraceInvalid, UsageError
from continuity.traces.schema import SCHEMA_VERSION, TRACE_MAX_BYTES, Trace
from continuity.traces.validate._context import Context
from continuity.traces.validate._design import (
    CREDENTIAL_ASSIGNMENT,
    check_design_roles,
    check_vocabulary,
    sensitive_word,
)
from continuity.traces.validate._evidence import check_probes
from continuity.traces.validate._limits import (
    Header,
    check_limits,
    decode,
    nesting_issue,
    too_large,
)
from continuity.traces.validate._shape import check_shape
from continuity.traces.validate._structure import check_header, check_sequence, index_turns
from continuity.traces.validate.codes import issue

__all__ = [
    "CREDENTIAL_ASSIGNMENT",
    "load_trace",
    "read_trace_file",
    "sensitive_word",
    "trace_issues",
    "validate_trace",
]


def load_trace(data: bytes, *, source: str = "-") -> Trace:
    """Decode and validate trace bytes.

    Raises:
        TraceInvalid: with code ``trace_too_large`` (over `TRACE_MAX_BYTES`),
            ``trace_malformed`` (bad JSON or schema, nesting deeper than
            `TRACE_MAX_DEPTH`, with the JSON path), ``trace_schema_unsupported``, or any
            validation code. Never anything else.
    """
    if len(data) > TRACE_MAX_BYTES:
        raise TraceInvalid([too_large(len(data))], source=source)
    deep = nesting_issue(data)
    if deep is not None:
        raise TraceInvalid([deep], source=source)
    header = decode(data, Header, source)
    if header.schema_version != SCHEMA_VERSION:
        raise TraceInvalid(
            [
                issue(
                    "trace_schema_unsupported",
                    "$.schema_version",
                    f"schema version {header.schema_version}; this build reads {SCHEMA_VERSION}",
                )
            ],
            source=source,
        )
    trace = decode(data, Trace, source)
    validate_trace(trace, source=source)
    return trace


def read_trace_file(path: Path) -> bytes:
    """The bytes of a trace file, reading at most one byte past `TRACE_MAX_BYTES`.

    Raises:
        UsageError: ``trace_file_unreadable`` (missing, a directory, no permission).
        TraceInvalid: ``trace_too_large``, before the rest is read.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(TRACE_MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(
            f"cannot read trace file: {exc.strerror or exc}",
            code="trace_file_unreadable",
            location=str(path),
        ) from None
    if len(data) > TRACE_MAX_BYTES:
        raise TraceInvalid([too_large(len(data), read_all=False)], source=str(path))
    return data


def validate_trace(trace: Trace, *, source: str = "-") -> None:
    """Raise `TraceInvalid` listing every issue, or return None for a valid trace."""
    issues = trace_issues(trace)
    if issues:
        raise TraceInvalid(issues, source=source)


def trace_issues(trace: Trace) -> list[Issue]:
    """Every validation issue of `trace`, most basic first."""
    ctx = Context(trace)
    if trace.schema_version != SCHEMA_VERSION:
        ctx.add("trace_schema_unsupported", "$.schema_version", f"schema {trace.schema_version}")
        return ctx.issues
    check_header(ctx)
    check_limits(ctx)
    if ctx.has("trace_malformed"):
        return ctx.issues  # no later check walks or echoes an oversized value
    index_turns(ctx)
    check_sequence(ctx)
    if ctx.has("duplicate_id", "trace_malformed"):
        return ctx.issues  # evidence checks need unique, well-formed ids
    check_shape(ctx)
    check_probes(ctx)
    if ctx.shape.design_roles:
        check_design_roles(ctx)
    if ctx.shape.neutral_vocabulary:
        check_vocabulary(ctx)
    return ctx.issues
