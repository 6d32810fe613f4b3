"""Input limits: a trace's size, nesting and decoding, and the length of every id and field.

These are the issue-11 limits, checked before any other rule so that no message ever
echoes an oversized value and no later check ever walks one: a file over
`TRACE_MAX_BYTES` is ``trace_too_large``; nesting past `TRACE_MAX_DEPTH`, undecodable
JSON, an id not fully matching `ID_PATTERN` and a field past its `FIELD_MAX_CHARS` limit
are ``trace_malformed`` at the offending path.
"""

from __future__ import annotations

import re
from typing import TypeVar

import msgspec

from continuity.errors import Issue, TraceInvalid
from continuity.traces.schema import (
    FIELD_MAX_CHARS,
    ID_MAX_CHARS,
    ID_PATTERN,
    TRACE_MAX_BYTES,
    TRACE_MAX_DEPTH,
    AbstentionExpectation,
    ArtifactStatusExpectation,
    AssistantMessage,
    CommitmentStatusExpectation,
    Fact,
    FreeRecallExpectation,
    Steer,
    ToolResult,
    Turn,
)
from continuity.traces.validate._context import Context
from continuity.traces.validate.codes import issue

_T = TypeVar("_T")
_MSGSPEC_PATH = re.compile(r" - at `(\$[^`]*)`$")

__all__ = ["Header", "check_limits", "decode", "nesting_issue", "too_large"]


class Header(msgspec.Struct):
    schema_version: int


def too_large(size: int, *, read_all: bool = True) -> Issue:
    shown = f"{size:,} bytes" if read_all else f"over {TRACE_MAX_BYTES:,} bytes"
    return issue(
        "trace_too_large",
        "$",
        f"the trace is {shown}; a trace file holds at most {TRACE_MAX_BYTES:,}",
    )


def decode(data: bytes, kind: type[_T], source: str) -> _T:
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError as exc:
        raise TraceInvalid([_decode_issue(exc)], source=source) from None
    except RecursionError:
        # `nesting_issue` should have refused it first; this is the boundary's backstop.
        deep = issue("trace_malformed", _deep_path(data), "nesting too deep to decode")
        raise TraceInvalid([deep], source=source) from None


# A JSON string (an unterminated one runs to the end), or one structural character.
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)'
_STRINGS = re.compile(_STRING, re.DOTALL)
_TOKENS = re.compile(_STRING + rb"|[\[\]{},:]", re.DOTALL)
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_OPENERS = frozenset(b"[{")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def nesting_issue(data: bytes) -> Issue | None:
    """`trace_malformed` at the first container nested past `TRACE_MAX_DEPTH`, if any.

    Checked on the bytes before decoding: the decoder recurses once per level, so a 2 KB
    file of brackets would otherwise exhaust the interpreter's stack. The fast pass strips
    strings and counts brackets; only a trace that is too deep is walked token by token
    for the path.
    """
    depth = deepest = 0
    for char in _STRINGS.sub(b"", data).translate(None, _NOT_BRACKETS):
        if char in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    if deepest <= TRACE_MAX_DEPTH:
        return None
    return issue(
        "trace_malformed",
        _deep_path(data),
        f"nested deeper than {TRACE_MAX_DEPTH} levels (a valid trace needs 8)",
    )


def _deep_path(data: bytes) -> str:
    """The JSON path of the first container opened past `TRACE_MAX_DEPTH` ("$" if none)."""
    path: list[str] = []  # one step per open container below the root
    frames: list[list[object]] = []  # per open container: [opener, array index, object key]
    key = ""
    for match in _TOKENS.finditer(data):
        token = match.group()
        first = token[0]
        if first == 0x22:  # '"'
            key = _key_text(token)
        elif first in _OPENERS:
            if frames:
                opener, index, name = frames[-1]
                path.append(f"[{index}]" if opener == 0x5B else _key_step(str(name)))
            if len(frames) == TRACE_MAX_DEPTH:
                return "$" + "".join(path)
            frames.append([first, 0, ""])
        elif first in b"]}":
            if frames:
                frames.pop()
            if path:
                path.pop()
        elif first == 0x3A and frames:  # ':' closes an object key
            frames[-1][2] = key
        elif first == 0x2C and frames and frames[-1][0] == 0x5B:  # ',' in an array
            index = frames[-1][1]
            assert isinstance(index, int)
            frames[-1][1] = index + 1
    return "$"


def _key_text(token: bytes) -> str:
    try:
        text = msgspec.json.decode(token, type=str)
    except msgspec.MsgspecError:
        text = token.strip(b'"').decode("utf-8", "replace")
    return text[:40]


def _key_step(name: str) -> str:
    return f".{name}" if _KEY.fullmatch(name) else f"[{msgspec.json.encode(name).decode()}]"


def _decode_issue(exc: msgspec.MsgspecError) -> Issue:
    message = str(exc)
    match = _MSGSPEC_PATH.search(message)
    location = match.group(1) if match else "$"
    if match:
        message = message[: match.start()]
    # The decoder quotes the offending value; a megabyte enum value stays out of the line.
    return issue("trace_malformed", _clipped(location), _clipped(message))


def _clipped(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} chars)"


def _shown(value: str) -> str:
    """`value` for a message: its repr, cut short (an id may be megabytes long)."""
    return repr(value) if len(value) <= 40 else f"{value[:40]!r}... ({len(value):,} chars)"


def _id(ctx: Context, value: str, location: str) -> None:
    """An id, or a reference to one: it fully matches `ID_PATTERN`. Whether a
    reference names something is its own rule's check."""
    if not ID_PATTERN.fullmatch(value):
        ctx.add(
            "trace_malformed",
            location,
            f"ids are 1-{ID_MAX_CHARS} ASCII letters, digits, '.', '_', ':' or '-', "
            f"starting with a letter or digit; got {_shown(value)}",
        )


def _short(ctx: Context, value: str, field: str, location: str) -> None:
    limit = FIELD_MAX_CHARS[field]
    if len(value) > limit:
        ctx.add(
            "trace_malformed",
            location,
            f"{len(value):,} characters; this field holds at most {limit:,}",
        )


def check_limits(ctx: Context) -> None:
    trace = ctx.trace
    _short(ctx, trace.scenario, "scenario", "$.scenario")
    _short(ctx, trace.title, "title", "$.title")
    for s_index, session in enumerate(trace.sessions):
        s_path = f"$.sessions[{s_index}]"
        _id(ctx, session.session_id, f"{s_path}.session_id")
        _short(ctx, session.date, "date", f"{s_path}.date")
        for t_index, turn in enumerate(session.turns):
            _turn_limits(ctx, turn, f"{s_path}.turns[{t_index}]")
    for p_index, probe in enumerate(trace.probes):
        p_path = f"$.probes[{p_index}]"
        _id(ctx, probe.probe_id, f"{p_path}.probe_id")
        if probe.design_role is not None:
            _short(ctx, probe.design_role, "design_role", f"{p_path}.design_role")
        _expectation_limits(ctx, probe.expectation, f"{p_path}.expectation")


def _turn_limits(ctx: Context, turn: Turn, path: str) -> None:
    _id(ctx, turn.turn_id, f"{path}.turn_id")
    if isinstance(turn, AssistantMessage):
        for c_index, call in enumerate(turn.tool_calls):
            c_path = f"{path}.tool_calls[{c_index}]"
            _id(ctx, call.call_id, f"{c_path}.call_id")
            _short(ctx, call.tool, "tool", f"{c_path}.tool")
            for name in call.arguments:
                _short(ctx, name, "argument_name", f"{c_path}.arguments")
    elif isinstance(turn, ToolResult):
        _id(ctx, turn.call_id, f"{path}.call_id")
        _short(ctx, turn.tool, "tool", f"{path}.tool")
    elif isinstance(turn, Steer):
        _id(ctx, turn.during_call, f"{path}.during_call")


def _expectation_limits(ctx: Context, exp: object, path: str) -> None:
    if isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
        _short(ctx, exp.status, "status", f"{path}.status")
    if isinstance(exp, AbstentionExpectation):
        for i, term in enumerate(exp.never_mentioned):
            _short(ctx, term, "never_mentioned", f"{path}.never_mentioned[{i}]")
        for i, term in enumerate(exp.decoys):
            _short(ctx, term, "fact_value", f"{path}.decoys[{i}]")
        return
    if isinstance(exp, FreeRecallExpectation):
        _short(ctx, exp.answer, "fact_value", f"{path}.answer")
        for e_index, turn_id in enumerate(exp.evidence):
            _id(ctx, turn_id, f"{path}.evidence[{e_index}]")
        return
    assert isinstance(exp, msgspec.Struct)
    for name in exp.__struct_fields__:
        value = getattr(exp, name)
        facts = value if isinstance(value, tuple) else (value,)
        for i, fact in enumerate(facts):
            if isinstance(fact, Fact):
                f_path = f"{path}.{name}[{i}]" if isinstance(value, tuple) else f"{path}.{name}"
                _short(ctx, fact.value, "fact_value", f"{f_path}.value")
                for e_index, turn_id in enumerate(fact.evidence):
                    _id(ctx, turn_id, f"{f_path}.evidence[{e_index}]")
