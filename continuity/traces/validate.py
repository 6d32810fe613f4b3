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
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

import msgspec

from continuity.errors import Issue, TraceInvalid, UsageError
from continuity.privacy import CREDENTIAL_ASSIGNMENT
from continuity.traces.bounds import (
    PROJECTION_MAX_BYTES,
    PROJECTION_MAX_RECORDS,
    RESULT_HEAD_BYTES,
    SUMMARY_RESULT_CHARS,
    estimate_tokens,
    is_text_message,
    projected_records,
    retained_bytes,
)
from continuity.traces.schema import (
    ARTIFACT_STATUSES,
    COMMITMENT_STATUSES,
    FIELD_MAX_CHARS,
    ID_MAX_CHARS,
    ID_PATTERN,
    SCHEMA_VERSION,
    TOOL_KINDS,
    TRACE_ID_PATTERN,
    TRACE_MAX_BYTES,
    TRACE_MAX_DEPTH,
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    AssistantMessage,
    CommitmentStatusExpectation,
    Fact,
    NextActionExpectation,
    OwnerMessage,
    Probe,
    RedactionExpectation,
    Steer,
    SupersededCurrentExpectation,
    ToolCall,
    ToolIdentifierExpectation,
    ToolResult,
    Trace,
    Turn,
)
from continuity.traces.shapes import FAMILY_SHAPES, FamilyShape
from continuity.traces.tools import TOOLS, argument_problems

__all__ = [
    "CREDENTIAL_ASSIGNMENT",
    "load_trace",
    "read_trace_file",
    "sensitive_word",
    "trace_issues",
    "validate_trace",
]

_T = TypeVar("_T")
_MSGSPEC_PATH = re.compile(r" - at `(\$[^`]*)`$")
# Relationship, health, religion and politics vocabulary the generated suites avoid:
# stems match any word starting with them, whole words only themselves.
_SENSITIVE_STEMS = (
    "divorc",
    "pregnan",
    "therap",
    "diagnos",
    "hospital",
    "funeral",
    "religio",
    "politic",
    "election",
    "sexual",
    "lawsuit",
    "bereave",
    "illness",
)
_SENSITIVE_WORDS = (
    "medical",
    "boyfriend",
    "girlfriend",
    "husband",
    "wife",
    "dating",
    "romance",
    "romantic",
    "church",
    "mosque",
    "synagogue",
)


def sensitive_word(text: str) -> str | None:
    """The first sensitive word in `text`, if any (case-insensitive).

    Uses `str.find` per term rather than one big case-insensitive regex: generated
    traces are ~1 MB each and this check is on the hot path of every build.
    """
    low = text.lower()
    for whole, terms in ((False, _SENSITIVE_STEMS), (True, _SENSITIVE_WORDS)):
        for term in terms:
            start = low.find(term)
            while start >= 0:
                end = start + len(term)
                before_ok = start == 0 or not low[start - 1].isalnum()
                after_ok = not whole or end == len(low) or not low[end].isalnum()
                if before_ok and after_ok:
                    stop = end
                    while stop < len(low) and low[stop].isalnum():
                        stop += 1
                    return text[start:stop]
                start = low.find(term, start + 1)
    return None


class _Located(NamedTuple):
    path: str
    turn: Turn
    text: str  # everything a reader could see of this turn
    order: int  # position in the conversation
    session: int


def _shown(value: str) -> str:
    """`value` for a message: its repr, cut short (an id may be megabytes long)."""
    return repr(value) if len(value) <= 40 else f"{value[:40]!r}... ({len(value):,} chars)"


def _turn_text(turn: Turn) -> str:
    if isinstance(turn, ToolResult):
        return turn.output
    if isinstance(turn, AssistantMessage):
        args = "\n".join(
            msgspec.json.encode(call.arguments).decode("utf-8") for call in turn.tool_calls
        )
        return f"{turn.text}\n{args}" if args else turn.text
    return turn.text


def load_trace(data: bytes, *, source: str = "-") -> Trace:
    """Decode and validate trace bytes.

    Raises:
        TraceInvalid: with code ``trace_too_large`` (over `TRACE_MAX_BYTES`),
            ``trace_malformed`` (bad JSON or schema, nesting deeper than
            `TRACE_MAX_DEPTH`, with the JSON path), ``trace_schema_unsupported``, or any
            validation code. Never anything else.
    """
    if len(data) > TRACE_MAX_BYTES:
        raise TraceInvalid([_too_large(len(data))], source=source)
    deep = _nesting_issue(data)
    if deep is not None:
        raise TraceInvalid([deep], source=source)
    header = _decode(data, _Header, source)
    if header.schema_version != SCHEMA_VERSION:
        raise TraceInvalid(
            [
                Issue(
                    "trace_schema_unsupported",
                    "$.schema_version",
                    f"schema version {header.schema_version}; this build reads {SCHEMA_VERSION}",
                )
            ],
            source=source,
        )
    trace = _decode(data, Trace, source)
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
        raise TraceInvalid([_too_large(len(data), read_all=False)], source=str(path))
    return data


class _Header(msgspec.Struct):
    schema_version: int


def _too_large(size: int, *, read_all: bool = True) -> Issue:
    shown = f"{size:,} bytes" if read_all else f"over {TRACE_MAX_BYTES:,} bytes"
    return Issue(
        "trace_too_large",
        "$",
        f"the trace is {shown}; a trace file holds at most {TRACE_MAX_BYTES:,}",
    )


def _decode(data: bytes, kind: type[_T], source: str) -> _T:
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError as exc:
        raise TraceInvalid([_decode_issue(exc)], source=source) from None
    except RecursionError:
        # `_nesting_issue` should have refused it first; this is the boundary's backstop.
        issue = Issue("trace_malformed", _deep_path(data), "nesting too deep to decode")
        raise TraceInvalid([issue], source=source) from None


# A JSON string (an unterminated one runs to the end), or one structural character.
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)'
_STRINGS = re.compile(_STRING, re.DOTALL)
_TOKENS = re.compile(_STRING + rb"|[\[\]{},:]", re.DOTALL)
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_OPENERS = frozenset(b"[{")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _nesting_issue(data: bytes) -> Issue | None:
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
    return Issue(
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
    return Issue("trace_malformed", _clipped(location), _clipped(message))


def _clipped(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} chars)"


def validate_trace(trace: Trace, *, source: str = "-") -> None:
    """Raise `TraceInvalid` listing every issue, or return None for a valid trace."""
    issues = trace_issues(trace)
    if issues:
        raise TraceInvalid(issues, source=source)


def trace_issues(trace: Trace) -> list[Issue]:
    """Every validation issue of `trace`, most basic first."""
    checker = _Checker(trace)
    return checker.run()


class _Checker:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.issues: list[Issue] = []
        self.shape: FamilyShape = FAMILY_SHAPES[trace.family]
        self.turns: dict[str, _Located] = {}
        self.records: list[ToolResult] = []
        self.record_paths: list[str] = []

    def add(self, code: str, location: str, message: str) -> None:
        self.issues.append(Issue(code, location, message))

    def run(self) -> list[Issue]:
        trace = self.trace
        if trace.schema_version != SCHEMA_VERSION:
            self.add(
                "trace_schema_unsupported", "$.schema_version", f"schema {trace.schema_version}"
            )
            return self.issues
        if trace.fictional is not True:
            self.add(
                "trace_not_fictional",
                "$.fictional",
                "every trace must be invented and marked fictional: true",
            )
        if not TRACE_ID_PATTERN.fullmatch(trace.trace_id):
            self.add(
                "trace_malformed",
                "$.trace_id",
                "trace ids are 3-96 lowercase letters, digits and hyphens",
            )
        self._limits()
        if any(i.code == "trace_malformed" for i in self.issues):
            return self.issues  # no later check walks or echoes an oversized value
        self._index()
        self._sequence()
        if any(i.code in ("duplicate_id", "trace_malformed") for i in self.issues):
            return self.issues  # evidence checks need unique, well-formed ids
        self._shape()
        self._probes()
        if self.shape.design_roles:
            self._design_roles()
        if self.shape.neutral_vocabulary:
            self._vocabulary()
        return self.issues

    # -- input limits ------------------------------------------------------------------

    def _id(self, value: str, location: str) -> None:
        """An id, or a reference to one: it fully matches `ID_PATTERN`. Whether a
        reference names something is its own rule's check."""
        if not ID_PATTERN.fullmatch(value):
            self.add(
                "trace_malformed",
                location,
                f"ids are 1-{ID_MAX_CHARS} ASCII letters, digits, '.', '_', ':' or '-', "
                f"starting with a letter or digit; got {_shown(value)}",
            )

    def _short(self, value: str, field: str, location: str) -> None:
        limit = FIELD_MAX_CHARS[field]
        if len(value) > limit:
            self.add(
                "trace_malformed",
                location,
                f"{len(value):,} characters; this field holds at most {limit:,}",
            )

    def _limits(self) -> None:
        trace = self.trace
        self._short(trace.scenario, "scenario", "$.scenario")
        self._short(trace.title, "title", "$.title")
        for s_index, session in enumerate(trace.sessions):
            s_path = f"$.sessions[{s_index}]"
            self._id(session.session_id, f"{s_path}.session_id")
            self._short(session.date, "date", f"{s_path}.date")
            for t_index, turn in enumerate(session.turns):
                self._turn_limits(turn, f"{s_path}.turns[{t_index}]")
        for p_index, probe in enumerate(trace.probes):
            p_path = f"$.probes[{p_index}]"
            self._id(probe.probe_id, f"{p_path}.probe_id")
            if probe.design_role is not None:
                self._short(probe.design_role, "design_role", f"{p_path}.design_role")
            self._expectation_limits(probe.expectation, f"{p_path}.expectation")

    def _turn_limits(self, turn: Turn, path: str) -> None:
        self._id(turn.turn_id, f"{path}.turn_id")
        if isinstance(turn, AssistantMessage):
            for c_index, call in enumerate(turn.tool_calls):
                c_path = f"{path}.tool_calls[{c_index}]"
                self._id(call.call_id, f"{c_path}.call_id")
                self._short(call.tool, "tool", f"{c_path}.tool")
                for name in call.arguments:
                    self._short(name, "argument_name", f"{c_path}.arguments")
        elif isinstance(turn, ToolResult):
            self._id(turn.call_id, f"{path}.call_id")
            self._short(turn.tool, "tool", f"{path}.tool")
        elif isinstance(turn, Steer):
            self._id(turn.during_call, f"{path}.during_call")

    def _expectation_limits(self, exp: object, path: str) -> None:
        if isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
            self._short(exp.status, "status", f"{path}.status")
        if isinstance(exp, AbstentionExpectation):
            for i, term in enumerate(exp.never_mentioned):
                self._short(term, "never_mentioned", f"{path}.never_mentioned[{i}]")
            return
        assert isinstance(exp, msgspec.Struct)
        for name in exp.__struct_fields__:
            value = getattr(exp, name)
            facts = value if isinstance(value, tuple) else (value,)
            for i, fact in enumerate(facts):
                if isinstance(fact, Fact):
                    f_path = f"{path}.{name}[{i}]" if isinstance(value, tuple) else f"{path}.{name}"
                    self._short(fact.value, "fact_value", f"{f_path}.value")
                    for e_index, turn_id in enumerate(fact.evidence):
                        self._id(turn_id, f"{f_path}.evidence[{e_index}]")

    # -- structure ---------------------------------------------------------------------

    def _index(self) -> None:
        seen_sessions: set[str] = set()
        order = 0
        for s_index, session in enumerate(self.trace.sessions):
            s_path = f"$.sessions[{s_index}]"
            if session.session_id in seen_sessions:
                self.add("duplicate_id", f"{s_path}.session_id", f"{session.session_id!r} repeats")
            seen_sessions.add(session.session_id)
            if not session.turns:
                self.add("trace_malformed", f"{s_path}.turns", "a session needs turns")
            for t_index, turn in enumerate(session.turns):
                path = f"{s_path}.turns[{t_index}]"
                if turn.turn_id in self.turns:
                    self.add("duplicate_id", f"{path}.turn_id", f"{turn.turn_id!r} repeats")
                    continue
                text = _turn_text(turn)
                empty = not text.strip() and not (
                    isinstance(turn, AssistantMessage) and turn.tool_calls
                )
                if empty:
                    self.add("trace_malformed", path, f"turn {turn.turn_id!r} has no content")
                self.turns[turn.turn_id] = _Located(path, turn, text, order, s_index)
                order += 1
                if isinstance(turn, ToolResult):
                    self.records.append(turn)
                    self.record_paths.append(path)
        probe_ids = Counter(p.probe_id for p in self.trace.probes)
        for p_index, probe in enumerate(self.trace.probes):
            if probe_ids[probe.probe_id] > 1:
                self.add("duplicate_id", f"$.probes[{p_index}].probe_id", "probe id repeats")
            if not probe.text.strip():
                self.add("trace_malformed", f"$.probes[{p_index}].text", "empty probe text")

    def _sequence(self) -> None:
        previous_date: dt.date | None = None
        call_ids: set[str] = set()
        pending: dict[str, str] = {}  # call id -> tool, awaiting a result
        answered: set[str] = set()  # calls of the latest assistant step already answered
        awaiting_reply = False  # an owner message or steer not yet answered
        turn_over = False  # the last assistant message had no tool calls
        for s_index, session in enumerate(self.trace.sessions):
            s_path = f"$.sessions[{s_index}]"
            try:
                date = dt.date.fromisoformat(session.date)
            except ValueError:
                self.add("trace_malformed", f"{s_path}.date", f"{session.date!r} is not a date")
            else:
                if previous_date and date < previous_date:
                    self.add("sequence_invalid", f"{s_path}.date", "sessions go back in time")
                previous_date = date
            if session.turns and not isinstance(session.turns[0], OwnerMessage):
                self.add("sequence_invalid", f"{s_path}.turns[0]", "a session opens with the owner")
            for t_index, turn in enumerate(session.turns):
                path = f"{s_path}.turns[{t_index}]"
                if turn_over and not isinstance(turn, OwnerMessage):
                    self.add(
                        "sequence_invalid",
                        path,
                        "a reply without tool calls ends the turn; the owner speaks next",
                    )
                if isinstance(turn, (OwnerMessage, AssistantMessage)) and pending:
                    self.add(
                        "sequence_invalid",
                        path,
                        f"tool calls {sorted(pending)} have no result before this turn",
                    )
                    pending.clear()
                if isinstance(turn, OwnerMessage):
                    if awaiting_reply:
                        self.add("sequence_invalid", path, "the previous owner input got no reply")
                    awaiting_reply = True
                    answered = set()
                elif isinstance(turn, AssistantMessage):
                    awaiting_reply = False
                    answered = set()
                    for c_index, call in enumerate(turn.tool_calls):
                        self._tool_call(call, f"{path}.tool_calls[{c_index}]")
                        if call.call_id in call_ids:
                            self.add(
                                "duplicate_id",
                                f"{path}.tool_calls[{c_index}].call_id",
                                f"call id {call.call_id!r} repeats",
                            )
                        call_ids.add(call.call_id)
                        pending[call.call_id] = call.tool
                elif isinstance(turn, ToolResult):
                    self._tool_result(turn, path, pending, answered)
                else:
                    if turn.during_call not in answered:
                        self.add(
                            "sequence_invalid",
                            f"{path}.during_call",
                            "a steer follows the result of a call of the latest assistant "
                            f"step; {turn.during_call!r} is not one",
                        )
                    awaiting_reply = True
                turn_over = isinstance(turn, AssistantMessage) and not turn.tool_calls
        if pending:
            self.add("sequence_invalid", "$.sessions", f"calls {sorted(pending)} never answered")
        if awaiting_reply:
            self.add("sequence_invalid", "$.sessions", "the conversation ends without a reply")

    def _tool_call(self, call: ToolCall, path: str) -> None:
        spec = TOOLS.get(call.tool)
        if spec is None:
            self.add("tool_call_invalid", f"{path}.tool", f"unknown tool {call.tool!r}")
            return
        for problem in argument_problems(spec, call.arguments):
            self.add("tool_call_invalid", f"{path}.arguments", f"{call.tool}: {problem}")

    def _tool_result(
        self, turn: ToolResult, path: str, pending: dict[str, str], answered: set[str]
    ) -> None:
        tool = pending.pop(turn.call_id, None)
        if tool is None:
            self.add(
                "sequence_invalid",
                f"{path}.call_id",
                f"result for {turn.call_id!r}, which is not an open call",
            )
            return
        answered.add(turn.call_id)
        if tool != turn.tool:
            self.add("tool_call_invalid", f"{path}.tool", f"call was to {tool}, not {turn.tool}")
            return
        spec = TOOLS.get(turn.tool)
        if spec is not None and spec.kind != turn.tool_kind:
            self.add(
                "tool_call_invalid",
                f"{path}.tool_kind",
                f"{turn.tool} returns {spec.kind}, not {turn.tool_kind}",
            )

    # -- family shape --------------------------------------------------------------------

    def _range(self, value: int, bounds: tuple[int, int] | None, what: str, where: str) -> None:
        if bounds and not bounds[0] <= value <= bounds[1]:
            self.add(
                "shape_out_of_range",
                where,
                f"{what} is {value:,}; the {self.trace.family} family needs "
                f"{bounds[0]:,}-{bounds[1]:,}",
            )

    def _shape(self) -> None:
        shape = self.shape
        turns = [located.turn for located in self.turns.values()]
        owner = sum(isinstance(t, OwnerMessage) for t in turns)
        steers = [t for t in turns if isinstance(t, Steer)]
        self._range(owner, shape.owner_turns, "owner turns", "$.sessions")
        self._range(len(self.trace.sessions), shape.sessions, "sessions", "$.sessions")
        self._range(len(self.records), shape.tool_records, "tool records", "$.sessions")
        if shape.distinct_days is not None:
            days = len({s.date for s in self.trace.sessions})
            if days != shape.distinct_days:
                self.add(
                    "shape_out_of_range",
                    "$.sessions",
                    f"the conversation spans {days} days; the family needs {shape.distinct_days}",
                )
        if shape.result_bytes:
            low, high = shape.result_bytes
            for record, path in zip(self.records, self.record_paths, strict=True):
                size = len(record.output.encode("utf-8"))
                if not low <= size <= high:
                    self.add(
                        "shape_out_of_range",
                        f"{path}.output",
                        f"result is {size:,} bytes; needs {low:,}-{high:,}",
                    )
        if shape.oversized_results:
            over = sum(len(r.output.encode("utf-8")) > RESULT_HEAD_BYTES for r in self.records)
            self._range(over, shape.oversized_results, "results over 16 KiB", "$.sessions")
        if shape.all_tool_kinds:
            missing = sorted(set(TOOL_KINDS) - {r.tool_kind for r in self.records})
            if missing:
                self.add("shape_out_of_range", "$.sessions", f"no tool results of kind {missing}")
        if shape.steers is not None:
            if len(steers) < shape.steers:
                self.add(
                    "steer_missing",
                    "$.sessions",
                    f"{len(steers)} mid-turn steers; the family needs {shape.steers}",
                )
            elif len(steers) > shape.steers:
                self.add(
                    "shape_out_of_range",
                    "$.sessions",
                    f"{len(steers)} mid-turn steers; the family needs {shape.steers}",
                )
        self._range(len(self.trace.probes), shape.probes, "probes", "$.probes")
        present = {p.category for p in self.trace.probes}
        for category in shape.categories:
            if category not in present:
                self.add("category_missing", "$.probes", f"no {category} probe")
        for category in shape.forbidden_categories:
            if category in present:
                self.add(
                    "shape_out_of_range",
                    "$.probes",
                    f"{category} probes belong to other families, not {self.trace.family}",
                )
        if shape.estimated_tokens:
            self._range(
                estimate_tokens(self.trace),
                shape.estimated_tokens,
                "the estimated context at the probe (tokens)",
                "$.sessions",
            )
        if shape.fits_projection:
            total = sum(retained_bytes(r) for r in self.records)
            if len(self.records) > PROJECTION_MAX_RECORDS or total > PROJECTION_MAX_BYTES:
                self.add(
                    "shape_out_of_range",
                    "$.sessions",
                    f"{len(self.records)} results / {total:,} retained bytes do not fit the "
                    f"cold-rebuild projection ({PROJECTION_MAX_RECORDS} / "
                    f"{PROJECTION_MAX_BYTES:,})",
                )
        if shape.sent_and_drafted:
            statuses = {
                p.expectation.status
                for p in self.trace.probes
                if isinstance(p.expectation, CommitmentStatusExpectation)
            }
            if not {"SENT", "DRAFTED"} <= statuses:
                self.add(
                    "category_missing",
                    "$.probes",
                    "needs a SENT and a DRAFTED commitment_status probe (sent versus drafted)",
                )
        if shape.early_constraint:
            first_session_owner = {
                tid
                for tid, loc in self.turns.items()
                if loc.session == 0 and isinstance(loc.turn, OwnerMessage)
            }
            early = any(
                isinstance(p.expectation, ActiveConstraintExpectation)
                and any(
                    tid in first_session_owner
                    for fact in (*p.expectation.required, *p.expectation.forbidden)
                    for tid in fact.evidence
                )
                for p in self.trace.probes
            )
            if not early:
                self.add(
                    "category_missing",
                    "$.probes",
                    "needs an active_constraint probe on an owner constraint from the first "
                    "session",
                )

    # -- probes and evidence ---------------------------------------------------------------

    def _fact(self, fact: Fact, path: str, *, tool_only: str | None = None) -> int | None:
        """Check one fact; return the conversation order of its first evidence."""
        if not fact.value.strip():
            self.add("trace_malformed", f"{path}.value", "empty value")
            return None
        if not fact.evidence:
            self.add("evidence_unknown", f"{path}.evidence", "a fact needs evidence ids")
            return None
        first: int | None = None
        for e_index, turn_id in enumerate(fact.evidence):
            located = self.turns.get(turn_id)
            e_path = f"{path}.evidence[{e_index}]"
            if located is None:
                self.add("evidence_unknown", e_path, f"no turn {turn_id!r}")
                continue
            if fact.value not in located.text:
                self.add(
                    "evidence_mismatch",
                    e_path,
                    f"{fact.value[:60]!r} does not occur in turn {turn_id!r}",
                )
            if tool_only and not isinstance(located.turn, ToolResult):
                self.add(tool_only, e_path, f"evidence {turn_id!r} is not a tool result")
            first = located.order if first is None else min(first, located.order)
        return first

    def _probes(self) -> None:
        non_tool = self._non_tool_text()
        everything_lower = "\n".join(loc.text for loc in self.turns.values()).lower()
        probe_texts = [p.text.lower() for p in self.trace.probes]
        for p_index, probe in enumerate(self.trace.probes):
            path = f"$.probes[{p_index}].expectation"
            exp = probe.expectation
            leak_values: list[str] = []
            if isinstance(exp, ToolIdentifierExpectation):
                for sub, fact in [("answer", exp.answer)] + [
                    (f"superseded[{i}]", f) for i, f in enumerate(exp.superseded)
                ]:
                    self._tool_only_fact(fact, f"{path}.{sub}", non_tool, "identifier")
                    leak_values.append(fact.value)
                self._superseded_order(exp.answer, exp.superseded, path)
            elif isinstance(exp, RedactionExpectation):
                self._tool_only_fact(exp.secret, f"{path}.secret", non_tool, "secret")
                leak_values.append(exp.secret.value)
            elif isinstance(exp, SupersededCurrentExpectation):
                self._fact(exp.current, f"{path}.current")
                for i, fact in enumerate(exp.superseded):
                    self._fact(fact, f"{path}.superseded[{i}]")
                if not exp.superseded:
                    self.add("correction_missing", f"{path}.superseded", "nothing superseded")
                self._superseded_order(exp.current, exp.superseded, path)
                leak_values += [exp.current.value, *(f.value for f in exp.superseded)]
            elif isinstance(exp, ActiveConstraintExpectation):
                facts = exp.required if exp.mode == "recall" else exp.forbidden
                if not facts:
                    wanted = "required" if exp.mode == "recall" else "forbidden"
                    self.add("trace_malformed", f"{path}.{wanted}", f"{exp.mode} needs {wanted}")
                for i, fact in enumerate(exp.required):
                    self._fact(fact, f"{path}.required[{i}]")
                for i, fact in enumerate(exp.forbidden):
                    self._fact(fact, f"{path}.forbidden[{i}]")
            elif isinstance(exp, (CommitmentStatusExpectation, ArtifactStatusExpectation)):
                allowed = (
                    COMMITMENT_STATUSES
                    if isinstance(exp, CommitmentStatusExpectation)
                    else ARTIFACT_STATUSES
                )
                if exp.status not in allowed:
                    self.add(
                        "trace_malformed", f"{path}.status", f"{exp.status!r} not in {allowed}"
                    )
                self._fact(exp.subject, f"{path}.subject")
            elif isinstance(exp, NextActionExpectation):
                if not exp.keywords:
                    self.add("trace_malformed", f"{path}.keywords", "no keywords")
                for i, fact in enumerate(exp.keywords):
                    self._fact(fact, f"{path}.keywords[{i}]")
            elif isinstance(exp, AbstentionExpectation):
                if not exp.never_mentioned:
                    self.add("trace_malformed", f"{path}.never_mentioned", "no terms")
                for i, term in enumerate(exp.never_mentioned):
                    if term.strip() and term.lower() in everything_lower:
                        self.add(
                            "abstention_term_present",
                            f"{path}.never_mentioned[{i}]",
                            f"{term!r} does occur in the conversation",
                        )
            for value in leak_values:
                for q_index, text in enumerate(probe_texts):
                    if value.lower() in text:
                        self.add(
                            "probe_leaks_answer",
                            f"$.probes[{q_index}].text",
                            f"probe text contains the expected value {value[:40]!r}",
                        )

    def _non_tool_text(self) -> str:
        parts = [self.trace.title]
        parts += [loc.text for loc in self.turns.values() if not isinstance(loc.turn, ToolResult)]
        return "\n\x00".join(parts).lower()

    def _tool_only_fact(self, fact: Fact, path: str, non_tool: str, what: str) -> None:
        code = f"{what}_outside_tool_output"
        self._fact(fact, path, tool_only=code)
        if fact.value.strip() and fact.value.lower() in non_tool:
            self.add(
                code,
                f"{path}.value",
                f"the {what} {fact.value[:40]!r} appears outside tool output",
            )

    def _superseded_order(self, current: Fact, superseded: Sequence[Fact], path: str) -> None:
        now = self._first_order(current)
        for i, fact in enumerate(superseded):
            then = self._first_order(fact)
            if now is not None and then is not None and then >= now:
                self.add(
                    "placement_invalid",
                    f"{path}.superseded[{i}]",
                    "a superseded value must first occur before the value replacing it",
                )

    def _first_order(self, fact: Fact) -> int | None:
        orders = [self.turns[t].order for t in fact.evidence if t in self.turns]
        return min(orders) if orders else None

    # -- hard-suite design roles ---------------------------------------------------------

    def _role_probe(self, role: str, kind: type) -> tuple[int, Probe] | None:
        for p_index, probe in enumerate(self.trace.probes):
            if probe.design_role == role and isinstance(probe.expectation, kind):
                return p_index, probe
        code = "owner_rules_missing" if role == "owner_rules" else "category_missing"
        if role in ("moved_date", "revised_amount"):
            code = "correction_missing"
        self.add(code, "$.probes", f"no {kind.__name__} probe with design_role {role!r}")
        return None

    def _record_of(self, fact: Fact) -> ToolResult | None:
        """The first tool result among a fact's evidence."""
        for turn_id in fact.evidence:
            located = self.turns.get(turn_id)
            if located and isinstance(located.turn, ToolResult):
                return located.turn
        return None

    def _design_roles(self) -> None:
        projected = set(projected_records(self.records))
        first_owner = next(
            (tid for tid, loc in self.turns.items() if isinstance(loc.turn, OwnerMessage)), None
        )

        found = self._role_probe("owner_rules", ActiveConstraintExpectation)
        if found:
            p_index, probe = found
            exp = probe.expectation
            assert isinstance(exp, ActiveConstraintExpectation)
            in_turn_one = [f for f in exp.required if first_owner in f.evidence]
            if exp.mode != "recall" or len(in_turn_one) < 3:
                self.add(
                    "owner_rules_missing",
                    f"$.probes[{p_index}].expectation",
                    "turn 1 must state three owner rules, recalled by a recall probe",
                )

        for role, supersessions in (("moved_date", 2), ("revised_amount", 1)):
            found = self._role_probe(role, SupersededCurrentExpectation)
            if found:
                p_index, probe = found
                exp = probe.expectation
                assert isinstance(exp, SupersededCurrentExpectation)
                if len(exp.superseded) != supersessions:
                    self.add(
                        "correction_missing",
                        f"$.probes[{p_index}].expectation.superseded",
                        f"{role} is superseded {len(exp.superseded)} times; needs {supersessions}",
                    )

        projected_ids = {self.records[i].turn_id for i in projected}
        checks = (
            ("account_reference", self._account_reference),
            ("mid_result_identifier", self._mid_result),
            ("head_identifier", self._head_identifier),
        )
        for role, check in checks:
            located = self._identifier_record(role)
            if located:
                check(*located, projected_ids)
        for p_index, probe in enumerate(self.trace.probes):
            if isinstance(probe.expectation, RedactionExpectation):
                self._secret(p_index, probe.expectation.secret)

    def _identifier_record(
        self, role: str
    ) -> tuple[str, ToolIdentifierExpectation, ToolResult] | None:
        """The probe playing `role`, its expectation and the record holding its answer."""
        found = self._role_probe(role, ToolIdentifierExpectation)
        if found is None:
            return None
        p_index, probe = found
        assert isinstance(probe.expectation, ToolIdentifierExpectation)
        record = self._record_of(probe.expectation.answer)
        if record is None:
            return None
        return f"$.probes[{p_index}].expectation.answer", probe.expectation, record

    def _account_reference(
        self, path: str, exp: ToolIdentifierExpectation, record: ToolResult, projected: set[str]
    ) -> None:
        after = self.turns[record.turn_id].order
        later_text = sum(
            1 for loc in self.turns.values() if loc.order > after and is_text_message(loc.turn)
        )
        if record.turn_id in projected:
            self.add(
                "placement_invalid",
                path,
                "the account reference's record is inside the cold-rebuild tool projection",
            )
        if later_text < 64:
            self.add(
                "placement_invalid",
                path,
                f"only {later_text} text messages follow the account reference; it must sit "
                "outside the canonical last-64 window",
            )

    def _mid_result(
        self, path: str, exp: ToolIdentifierExpectation, record: ToolResult, projected: set[str]
    ) -> None:
        offset = record.output.find(exp.answer.value)
        end = offset + len(exp.answer.value)
        if offset < SUMMARY_RESULT_CHARS or end > len(record.output) - SUMMARY_RESULT_CHARS:
            self.add(
                "placement_invalid",
                path,
                f"the identifier sits at {offset:,} of {len(record.output):,} chars; it must "
                f"be outside the first and last {SUMMARY_RESULT_CHARS:,}",
            )

    def _head_identifier(
        self, path: str, exp: ToolIdentifierExpectation, record: ToolResult, projected: set[str]
    ) -> None:
        data = record.output.encode("utf-8")
        value = exp.answer.value.encode("utf-8")
        offset = data.find(value)
        problems = []
        if len(data) <= RESULT_HEAD_BYTES:
            problems.append("its result is not over 16 KiB")
        if offset < 0 or offset + len(value) > RESULT_HEAD_BYTES:
            problems.append("it is not inside the first 16 KiB")
        if record.turn_id not in projected:
            problems.append("its record is not among the newest projected records")
        if "booking pack" not in record.output[:400].lower():
            problems.append("its result is not the booking pack")
        if not exp.superseded:
            problems.append("it has no superseded decoy")
        for problem in problems:
            self.add("placement_invalid", path, f"head-of-result identifier: {problem}")

    def _secret(self, p_index: int, secret: Fact) -> None:
        path = f"$.probes[{p_index}].expectation.secret"
        if len(secret.value) < 8:
            self.add("placement_invalid", path, "a secret needs at least 8 characters")
        record = self._record_of(secret)
        if record and not CREDENTIAL_ASSIGNMENT.search(record.output):
            self.add(
                "placement_invalid",
                path,
                "the secret's tool result has no textual credential assignment",
            )

    def _vocabulary(self) -> None:
        texts: Iterable[tuple[str, str]] = [(loc.path, loc.text) for loc in self.turns.values()] + [
            (f"$.probes[{i}].text", p.text) for i, p in enumerate(self.trace.probes)
        ]
        for path, text in texts:
            word = sensitive_word(text)
            if word:
                self.add(
                    "vocabulary_not_neutral",
                    path,
                    f"generated suites avoid sensitive vocabulary; found {word!r}",
                )
