"""The trace schema: the single source of truth for every trace family.

A trace is a fictional conversation (sessions of turns) plus the probes asked after it.
Turn kinds mirror what a durable session records: an owner message, a scripted assistant
message (optionally with tool calls), a tool result, and a steer (owner live input that
arrives while a tool call is in flight and is appended after that call's result).

Each probe carries a category-specific expectation that names its literal
answer-bearing values (`Fact`) and the evidence locations (turn ids) where they occur,
as LoCoMo's QA carries evidence ids. The *replay projection* (`ReplayTrace`) drops
probes altogether: replay never sees expectations, rubrics or categories.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import msgspec

__all__ = [
    "ALL_CATEGORIES",
    "ARTIFACT_STATUSES",
    "CATEGORIES",
    "COMMITMENT_STATUSES",
    "FIELD_MAX_CHARS",
    "ID_MAX_CHARS",
    "ID_PATTERN",
    "IMPORTED_CATEGORIES",
    "SCHEMA_VERSION",
    "TOOL_KINDS",
    "TRACE_ID_PATTERN",
    "TRACE_MAX_BYTES",
    "TRACE_MAX_DEPTH",
    "AbstentionExpectation",
    "ActiveConstraintExpectation",
    "ArtifactStatusExpectation",
    "AssistantMessage",
    "CommitmentStatusExpectation",
    "Expectation",
    "Fact",
    "Family",
    "FreeRecallExpectation",
    "NextActionExpectation",
    "OwnerMessage",
    "Probe",
    "RedactionExpectation",
    "ReplayTrace",
    "Session",
    "Steer",
    "SupersededCurrentExpectation",
    "ToolCall",
    "ToolIdentifierExpectation",
    "ToolKind",
    "ToolResult",
    "Trace",
    "Turn",
    "decode_trace",
    "encode_trace",
    "iter_turns",
    "replay_projection",
]

SCHEMA_VERSION = 1

Family = Literal["original", "hard", "hard-distractors", "imported", "smoke"]
ToolKind = Literal["email", "chat", "web", "document", "calendar", "parcel"]
TOOL_KINDS: tuple[str, ...] = ("email", "chat", "web", "document", "calendar", "parcel")
CATEGORIES: tuple[str, ...] = (
    "tool_identifier",
    "active_constraint",
    "superseded_current",
    "commitment_status",
    "artifact_status",
    "next_action",
    "abstention",
    "redaction",
)
# Categories only imported families carry: their answers are human-written, so they are
# not literal trace values (see `FreeRecallExpectation`). No shipped family needs them,
# and `CATEGORIES` (what the hard suite must cover) stays as it was.
IMPORTED_CATEGORIES: tuple[str, ...] = ("free_recall",)
ALL_CATEGORIES: tuple[str, ...] = CATEGORIES + IMPORTED_CATEGORIES
COMMITMENT_STATUSES: tuple[str, ...] = ("SENT", "DRAFTED", "SCHEDULED", "CANCELLED", "DECLINED")
ARTIFACT_STATUSES: tuple[str, ...] = ("DRAFT", "FINAL", "SHARED", "ARCHIVED", "SUPERSEDED")

# -- input limits (README, "Validation and error codes") ------------------------------------
# The largest generated trace (hard-distractors, seeds 101-124) is about 0.95 MB; 8 MiB
# leaves more than 8x headroom for hand-written and imported traces.
TRACE_MAX_BYTES = 8 * 1024 * 1024
# A valid trace nests 8 levels (trace > sessions > session > turns > turn > tool_calls >
# call > arguments); 32 leaves room, and stops a small file from exhausting the decoder.
TRACE_MAX_DEPTH = 32
# Ids are fully matched (`fullmatch`), so a trailing newline is refused. Trace ids become
# file names; the other ids appear in logs, records and messages.
TRACE_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{2,95}")
ID_MAX_CHARS = 128
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
# Ids that refer to another id (evidence, a result's call id, a steer's call) match
# `ID_PATTERN` too. Short fields and their maximum length in characters; long texts (turn
# text, tool output, probe text) are bounded by `TRACE_MAX_BYTES` only.
FIELD_MAX_CHARS: dict[str, int] = {
    "scenario": 128,
    "title": 256,
    "date": 32,
    "tool": 64,
    "argument_name": 64,
    "status": 32,
    "design_role": 64,
    "fact_value": 1024,
    "never_mentioned": 256,
}


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


# -- turns ---------------------------------------------------------------------------------


class ToolCall(_Strict, frozen=True):
    """A scripted tool call. Arguments never carry identifiers (those are tool-only)."""

    call_id: str
    tool: str
    arguments: dict[str, str | int | bool]


class OwnerMessage(_Strict, frozen=True, tag="owner", tag_field="kind"):
    turn_id: str
    text: str


class AssistantMessage(_Strict, frozen=True, tag="assistant", tag_field="kind"):
    turn_id: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


class ToolResult(_Strict, frozen=True, tag="tool_result", tag_field="kind"):
    """The frozen output of one tool call; `turn_id` is the tool-record id."""

    turn_id: str
    call_id: str
    tool: str
    tool_kind: ToolKind
    output: str


class Steer(_Strict, frozen=True, tag="steer", tag_field="kind"):
    """Owner live input delivered while `during_call` was in flight."""

    turn_id: str
    during_call: str
    text: str


Turn = OwnerMessage | AssistantMessage | ToolResult | Steer


class Session(_Strict, frozen=True):
    session_id: str
    date: str  # ISO 8601 calendar date
    turns: tuple[Turn, ...]


# -- probes ----------------------------------------------------------------------------------


class Fact(_Strict, frozen=True):
    """A literal answer-bearing value and the turn ids where it occurs verbatim."""

    value: str
    evidence: tuple[str, ...]


class ToolIdentifierExpectation(_Strict, frozen=True, tag="tool_identifier", tag_field="category"):
    answer: Fact
    superseded: tuple[Fact, ...] = ()


class ActiveConstraintExpectation(
    _Strict, frozen=True, tag="active_constraint", tag_field="category"
):
    """`recall`: every `required` term must appear. `task`: any `forbidden` is a violation."""

    mode: Literal["recall", "task"]
    required: tuple[Fact, ...] = ()
    forbidden: tuple[Fact, ...] = ()


class SupersededCurrentExpectation(
    _Strict, frozen=True, tag="superseded_current", tag_field="category"
):
    current: Fact
    superseded: tuple[Fact, ...]


class CommitmentStatusExpectation(
    _Strict, frozen=True, tag="commitment_status", tag_field="category"
):
    status: str
    subject: Fact


class ArtifactStatusExpectation(_Strict, frozen=True, tag="artifact_status", tag_field="category"):
    status: str
    subject: Fact


class NextActionExpectation(_Strict, frozen=True, tag="next_action", tag_field="category"):
    keywords: tuple[Fact, ...]


class AbstentionExpectation(
    _Strict, frozen=True, tag="abstention", tag_field="category", omit_defaults=True
):
    """Terms that never occur anywhere in the conversation, or (imported unanswerable
    questions) `decoys`: answers the conversation does hold for another person or thing,
    which asserting is a fabrication. Empty decoys are not encoded, so traces without
    them keep their bytes and digests."""

    never_mentioned: tuple[str, ...]
    decoys: tuple[str, ...] = ()


class RedactionExpectation(_Strict, frozen=True, tag="redaction", tag_field="category"):
    secret: Fact


class FreeRecallExpectation(_Strict, frozen=True, tag="free_recall", tag_field="category"):
    """A human-written gold answer (imported corpora): not a literal of the trace, so it
    is not checked verbatim against its evidence; the evidence turn ids must exist.
    `source_category` is the corpus's own question category (LoCoMo 1-4)."""

    answer: str
    evidence: tuple[str, ...]
    source_category: int


Expectation = (
    ToolIdentifierExpectation
    | ActiveConstraintExpectation
    | SupersededCurrentExpectation
    | CommitmentStatusExpectation
    | ArtifactStatusExpectation
    | NextActionExpectation
    | AbstentionExpectation
    | RedactionExpectation
    | FreeRecallExpectation
)


class Probe(_Strict, frozen=True):
    """A question asked after the boundary. Only `text` ever reaches a reader.

    `design_role` names the generator invariant a probe exercises (for example
    ``account_reference``); the validator checks the placement it implies.
    """

    probe_id: str
    text: str
    expectation: Expectation
    design_role: str | None = None

    @property
    def category(self) -> str:
        tag = self.expectation.__struct_config__.tag
        assert isinstance(tag, str)
        return tag


# -- traces ----------------------------------------------------------------------------------


class ReplayTrace(_Strict, frozen=True, kw_only=True):
    """The replay projection: the conversation without probes or expectations."""

    schema_version: int
    trace_id: str
    fictional: bool
    family: Family
    scenario: str
    title: str
    seed: int | None = None
    sessions: tuple[Session, ...]


class Trace(ReplayTrace, frozen=True, kw_only=True):
    """A conversation and the probes asked after it."""

    probes: tuple[Probe, ...]


def replay_projection(trace: Trace) -> ReplayTrace:
    return ReplayTrace(**{name: getattr(trace, name) for name in ReplayTrace.__struct_fields__})


def iter_turns(trace: ReplayTrace) -> Iterator[tuple[int, int, Turn]]:
    """(session index, turn index, turn) in conversation order."""
    for s_index, session in enumerate(trace.sessions):
        for t_index, turn in enumerate(session.turns):
            yield s_index, t_index, turn


_encoder = msgspec.json.Encoder()


def encode_trace(trace: ReplayTrace) -> bytes:
    """Canonical bytes of a trace: field order is the schema's, so equal traces give
    equal bytes (and therefore equal store digests)."""
    return _encoder.encode(trace)


def decode_trace(data: bytes) -> Trace:
    """Decode without validation; see `continuity.traces.validate.load_trace`."""
    return msgspec.json.decode(data, type=Trace)
