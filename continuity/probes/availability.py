"""Availability analysis: was the answer still there, and where was it lost?

For every probe and arm, the evaluator decides from the reader's actual post-boundary
context and the retained store whether the answer-bearing fact is

- ``in_context``: every answer-bearing needle is in what the reader had *before* the
  probe question: the messages of its first probe request up to the last one before the
  probe turn (the question and the protocol's instruction never count, so a question
  that names its subject cannot make that subject "available");
- ``retrievable``: not all in context, but each missing needle is found through
  ConversationHistory within the lookup budget (8 calls, 126,976 bytes) by the
  evaluator's reference path: one search for the needle at limit 10, then every 8 KiB
  get page of each hit until the needle is seen (store and pack arms only);
- ``absent``: neither.

Matching is the scorers' own: text goes through `normalise` once, and a needle is found
by `mentions` whole-token matching (case-insensitive, identifiers with any separators,
never inside a longer token: ``noon`` is not in ``afternoon``).

A free-recall probe (an imported corpus's human-written answer, which is no literal of
the trace) has the text of each of its evidence turns as its needles: the fact is in
context when every evidence turn survived the boundary word for word, and retrievable
when the reference path finds each one. A summary that restates an evidence turn in
other words does not hold it by this measure, which is therefore a lower bound for
arms that summarise (compaction, the pack's generated summary).

A status probe's needle (commitment and artifact status) is its status-bearing
evidence, not the subject's name: the subject and a word of the expected status
(``sent``; ``drafted``, ``draft``, ``unsent``; ``final``; ...) in one unit of text. The
unit is derived from the trace: the narrowest of sentence, paragraph and message in
which one of the subject's evidence turns states the subject with its status ("I've
sent the fault report email" is a sentence; "Done and sent. The launch invitation went
out" is a paragraph). So a context where the status is gone but the subject survives (a
compaction summary listing open items by name, or only the question) does not hold the
fact, while a summary that restates the status in its own words ("the fault report
email was sent") still does. A trace whose evidence never states the status is refused
(``status_evidence_missing``).

It also records whether a superseded value is in context. With the score, a miss is
labelled ``lost_at_boundary`` (absent), ``lost_at_retrieval`` (retrievable but not in
context) or ``present_but_missed`` (in context). Categories whose correct answer does not
need the fact (abstention, redaction, task constraints) are ``not_applicable``. This
needs no model, so it is meaningful offline.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from continuity.errors import HistoryError, TraceError
from continuity.memory.retained import RetainedStore
from continuity.probes.normalise import mentions, normalise
from continuity.traces.categories import by_category, by_category_of
from continuity.traces.schema import (
    AbstentionExpectation,
    ActiveConstraintExpectation,
    ArtifactStatusExpectation,
    CommitmentStatusExpectation,
    Expectation,
    FreeRecallExpectation,
    NextActionExpectation,
    RedactionExpectation,
    SupersededCurrentExpectation,
    ToolIdentifierExpectation,
    ToolResult,
    Trace,
)

if TYPE_CHECKING:
    # Only `loss` names it: a unit's worker and probe children (which need availability,
    # never scoring) do not import the scorer's word lists and stemmers.
    from continuity.probes.scoring import Score

__all__ = [
    "AVAILABILITY_COLUMNS",
    "LOOKUP_BYTES",
    "LOOKUP_CALLS",
    "SCOPES",
    "STATUS_WORDS",
    "Availability",
    "ContextText",
    "Fact",
    "Loss",
    "NeedleState",
    "Needles",
    "Scope",
    "availability",
    "fact_count",
    "found_in",
    "loss",
    "needles_for",
    "reference_lookup",
    "status_needle",
]

LOOKUP_CALLS = 8
LOOKUP_BYTES = 126_976
# The availability table's columns: fact states, then superseded presence, then losses.
AVAILABILITY_COLUMNS: tuple[str, ...] = (
    "in_context",
    "retrievable",
    "absent",
    "not_applicable",
    "superseded_present",
    "lost_at_boundary",
    "lost_at_retrieval",
    "present_but_missed",
)
Fact = Literal["in_context", "retrievable", "absent", "not_applicable"]
Loss = Literal["lost_at_boundary", "lost_at_retrieval", "present_but_missed"]
Scope = Literal["sentence", "paragraph", "message"]
SCOPES: tuple[Scope, ...] = ("sentence", "paragraph", "message")

# The words that state each status of the probes' closed status vocabularies.
STATUS_WORDS: dict[str, tuple[str, ...]] = {
    "SENT": ("sent",),
    "DRAFTED": ("drafted", "draft", "drafts", "unsent"),
    "SCHEDULED": ("scheduled",),
    "CANCELLED": ("cancelled", "canceled"),
    "DECLINED": ("declined",),
    "DRAFT": ("draft", "drafts", "drafted"),
    "FINAL": ("final", "finalised", "finalized"),
    "SHARED": ("shared",),
    "ARCHIVED": ("archived",),
    "SUPERSEDED": ("superseded",),
}
# A status needle: subject, status words and scope joined by the ASCII unit separator,
# which no trace text contains (it is a control character the schema's prose never has).
_JOIN = "\x1f"
# A passage needle (a free-recall evidence turn's whole text) starts with the ASCII
# record separator: its words must appear in order, with any punctuation between them.
_PASSAGE = "\x1e"
_PASSAGE_GAP = r"[^A-Za-z0-9]{1,8}"
_PARAGRAPH = re.compile(r"\n\s*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Needles(msgspec.Struct, frozen=True):
    """The values whose presence decides availability (evaluator-side only)."""

    fact: list[str]
    superseded: list[str]


class NeedleState(msgspec.Struct, frozen=True):
    """What the probe child found for one needle, content-free."""

    in_context: bool
    retrievable: bool | None  # None: no retained store offered in this arm
    calls: int = 0
    bytes: int = 0


class Availability(msgspec.Struct, frozen=True):
    fact: Fact
    superseded_present: bool
    reference_calls: int
    reference_bytes: int


def status_needle(subject: str, status: str, scope: Scope) -> str:
    """The needle for `subject` stated with `status` within one `scope` of text."""
    words = STATUS_WORDS.get(status.upper(), (status.lower(),))
    return _JOIN.join((subject, "|".join(words), scope))


def _statement(sentence: str) -> bool:
    """Whether a sentence can state a status: a question asks, it does not state."""
    return bool(sentence.strip()) and not sentence.rstrip(" )\"'").endswith("?")


def _units(text: str, scope: Scope) -> list[str]:
    """`text` cut into units of `scope` (raw, not yet normalised), each made of its
    statements only (questions left out)."""
    paragraphs = [
        " ".join(s for s in _SENTENCE.split(p) if _statement(s)) for p in _PARAGRAPH.split(text)
    ]
    if scope == "message":
        return [" ".join(p for p in paragraphs if p)]
    if scope == "paragraph":
        return [p for p in paragraphs if p]
    return [s for p in _PARAGRAPH.split(text) for s in _SENTENCE.split(p) if _statement(s)]


# Status word groups for spotting a list of options (DRAFT and DRAFTED share one).
_STATUS_GROUPS = sorted({frozenset(words) for words in STATUS_WORDS.values()}, key=sorted)
_STATUS_GROUPS = [g for g in _STATUS_GROUPS if not any(g < other for other in _STATUS_GROUPS)]


def _lists_options(unit: str) -> bool:
    """Whether a unit names three or more statuses: a list of options states none."""
    named = sum(any(mentions(unit, w, normalised=True) for w in group) for group in _STATUS_GROUPS)
    return named >= 3


class ContextText:
    """Text a needle is looked for in: one or more messages, each normalised once."""

    def __init__(self, messages: Iterable[str]) -> None:
        self.messages = [m for m in messages if m]
        self._flat: str | None = None
        self._units: dict[Scope, list[str]] = {}

    def flat(self) -> str:
        if self._flat is None:
            self._flat = normalise("\n".join(self.messages))
        return self._flat

    def units(self, scope: Scope) -> list[str]:
        if scope not in self._units:
            self._units[scope] = [normalise(u) for m in self.messages for u in _units(m, scope)]
        return self._units[scope]

    def holds(self, needle: str) -> bool:
        """Whether this text states `needle` (a value, a passage or a status needle)."""
        if needle.startswith(_PASSAGE):
            return _passage_pattern(needle[1:]).search(self.flat()) is not None
        if _JOIN not in needle:
            return mentions(self.flat(), needle, normalised=True)
        subject, words, scope = needle.split(_JOIN)
        if scope not in SCOPES or not mentions(self.flat(), subject, normalised=True):
            return False
        return any(
            mentions(unit, subject, normalised=True)
            and any(mentions(unit, word, normalised=True) for word in words.split("|"))
            and not _lists_options(unit)
            for unit in self.units(SCOPES[SCOPES.index(scope)])
        )


@functools.lru_cache(maxsize=4096)
def _passage_pattern(passage: str) -> re.Pattern[str]:
    """A passage's words in order, whatever punctuation or spacing sits between them."""
    runs = [re.escape(run) for run in re.findall(r"[A-Za-z0-9]+", normalise(passage))]
    return re.compile(
        r"(?<![A-Za-z0-9])" + _PASSAGE_GAP.join(runs) + r"(?![A-Za-z0-9])", re.IGNORECASE
    )


def found_in(text: str, needle: str) -> bool:
    """Whether `text` (one message or record) states `needle`."""
    return ContextText([text]).holds(needle)


def _turn_text(trace: Trace) -> dict[str, str]:
    return {
        turn.turn_id: turn.output if isinstance(turn, ToolResult) else turn.text
        for session in trace.sessions
        for turn in session.turns
    }


def _status_needle(
    exp: CommitmentStatusExpectation | ArtifactStatusExpectation, texts: dict[str, str]
) -> str:
    """The narrowest scope in which an evidence turn states the subject's status.

    Raises:
        TraceError: ``status_evidence_missing`` when no evidence turn does.
    """
    evidence = [texts[e] for e in exp.subject.evidence if e in texts]
    for scope in SCOPES:
        needle = status_needle(exp.subject.value, exp.status, scope)
        if any(found_in(text, needle) for text in evidence):
            return needle
    raise TraceError(
        f"no evidence turn of {exp.subject.value!r} states it as {exp.status}",
        code="status_evidence_missing",
        location=",".join(exp.subject.evidence),
    )


@by_category
def needles_for(expectation: Expectation, trace: Trace) -> Needles:
    """The needles of a probe of `trace` (status needles are derived from its evidence).

    Raises:
        TraceError: ``status_evidence_missing`` (see `_status_needle`).
    """
    raise NotImplementedError  # by_category: one handler per category below


@needles_for.register(CommitmentStatusExpectation)
@needles_for.register(ArtifactStatusExpectation)
def _status_needles(
    exp: CommitmentStatusExpectation | ArtifactStatusExpectation, trace: Trace
) -> Needles:
    return Needles([_status_needle(exp, _turn_text(trace))], [])


@needles_for.register(FreeRecallExpectation)
def _passage_needles(exp: FreeRecallExpectation, trace: Trace) -> Needles:
    texts = _turn_text(trace)
    return Needles([_PASSAGE + texts[turn_id] for turn_id in exp.evidence], [])


# The categories whose needles are their expectation's own values (the trace unread).
_OWN_VALUES = (
    ToolIdentifierExpectation,
    SupersededCurrentExpectation,
    ActiveConstraintExpectation,
    NextActionExpectation,
    AbstentionExpectation,
    RedactionExpectation,
)


@by_category_of(_OWN_VALUES)
def _value_needles(exp: Expectation) -> Needles:
    """The needles of a category in `_OWN_VALUES`."""
    raise NotImplementedError  # by_category_of: one handler per category below


@_value_needles.register(ToolIdentifierExpectation)
def _identifier_needles(exp: ToolIdentifierExpectation) -> Needles:
    return Needles([exp.answer.value], [f.value for f in exp.superseded])


@_value_needles.register(SupersededCurrentExpectation)
def _current_needles(exp: SupersededCurrentExpectation) -> Needles:
    return Needles([exp.current.value], [f.value for f in exp.superseded])


@_value_needles.register(ActiveConstraintExpectation)
def _constraint_needles(exp: ActiveConstraintExpectation) -> Needles:
    if exp.mode == "recall":
        return Needles([f.value for f in exp.required], [])
    return Needles([], [])  # a task constraint


@_value_needles.register(NextActionExpectation)
def _next_action_needles(exp: NextActionExpectation) -> Needles:
    return Needles([f.value for f in exp.keywords], [])


@_value_needles.register(AbstentionExpectation)
@_value_needles.register(RedactionExpectation)
def _no_needles(exp: AbstentionExpectation | RedactionExpectation) -> Needles:
    return Needles([], [])


@needles_for.register(ToolIdentifierExpectation)
@needles_for.register(SupersededCurrentExpectation)
@needles_for.register(ActiveConstraintExpectation)
@needles_for.register(NextActionExpectation)
@needles_for.register(AbstentionExpectation)
@needles_for.register(RedactionExpectation)
def _own_needles(exp: Expectation, trace: Trace) -> Needles:
    return _value_needles(exp)


@by_category
def fact_count(expectation: Expectation) -> int:
    """How many of a probe's needles are fact needles (the rest are superseded values):
    what splits recorded needle states, without the trace."""
    raise NotImplementedError  # by_category: one handler per category below


@fact_count.register(CommitmentStatusExpectation)
@fact_count.register(ArtifactStatusExpectation)
def _status_fact_count(expectation: CommitmentStatusExpectation | ArtifactStatusExpectation) -> int:
    return 1


@fact_count.register(FreeRecallExpectation)
def _passage_fact_count(expectation: FreeRecallExpectation) -> int:
    return len(expectation.evidence)


@fact_count.register(ToolIdentifierExpectation)
@fact_count.register(SupersededCurrentExpectation)
@fact_count.register(ActiveConstraintExpectation)
@fact_count.register(NextActionExpectation)
@fact_count.register(AbstentionExpectation)
@fact_count.register(RedactionExpectation)
def _own_fact_count(expectation: Expectation) -> int:
    return len(_value_needles(expectation).fact)


def _query(needle: str) -> str:
    """The reference path's search query for a needle: a status needle searches for its
    subject and status words; a passage needle searches for its words."""
    if needle.startswith(_PASSAGE):
        return needle[1:]
    if _JOIN not in needle:
        return needle
    subject, words, _ = needle.split(_JOIN)
    return f"{subject} {' '.join(words.split('|'))}"


def reference_lookup(
    store: RetainedStore, value: str, *, calls: int = LOOKUP_CALLS, budget_bytes: int = LOOKUP_BYTES
) -> NeedleState:
    """The evaluator's reference path for one needle, charged like a reader's calls. A
    record holds the needle when its text read so far states it (`ContextText.holds`,
    the same matching as the in-context check)."""
    used_calls = used_bytes = 0

    def charge(payload: msgspec.Struct) -> bool:
        nonlocal used_calls, used_bytes
        used_calls += 1
        used_bytes += len(msgspec.json.encode(payload))
        return used_calls <= calls and used_bytes <= budget_bytes

    try:
        page = store.search(_query(value), limit=10)
    except HistoryError:
        return NeedleState(False, False, 1, 0)
    if not charge(page):
        return NeedleState(False, False, used_calls, used_bytes)
    for hit in page.hits:
        seen = ""  # the record's text so far: a value may straddle two pages
        cursor: str | None = None
        while True:
            if used_calls >= calls:
                return NeedleState(False, False, used_calls, used_bytes)
            record = store.get(hit.packed_id, cursor=cursor)
            if not charge(record):
                return NeedleState(False, False, used_calls, used_bytes)
            seen += record.text
            if found_in(seen, value):
                return NeedleState(False, True, used_calls, used_bytes)
            cursor = record.next_cursor
            if cursor is None:
                break
    return NeedleState(False, False, used_calls, used_bytes)


def availability(
    facts: int, fact_states: Sequence[NeedleState], superseded_states: Sequence[NeedleState]
) -> Availability:
    """The fact's availability from the states of a probe's `facts` fact needles (see
    `fact_count`) and of its superseded values."""
    if not facts:
        return Availability("not_applicable", any(s.in_context for s in superseded_states), 0, 0)
    in_context = all(s.in_context for s in fact_states)
    # The values not in context must all be found within ONE lookup budget: a
    # multi-value probe does not get a fresh budget per value.
    missing = [s for s in fact_states if not s.in_context]
    used_calls = sum(s.calls for s in missing)
    used_bytes = sum(s.bytes for s in missing)
    reachable = (
        all(s.retrievable for s in missing)
        and used_calls <= LOOKUP_CALLS
        and used_bytes <= LOOKUP_BYTES
    )
    fact: Fact = "in_context" if in_context else "retrievable" if reachable else "absent"
    return Availability(
        fact=fact,
        superseded_present=any(s.in_context for s in superseded_states),
        reference_calls=used_calls,
        reference_bytes=used_bytes,
    )


def loss(available: Availability, score: Score) -> Loss | None:
    """Where a miss was lost; None for a correct answer or a fact that does not apply."""
    if score.correct or available.fact == "not_applicable":
        return None
    if available.fact == "absent":
        return "lost_at_boundary"
    if available.fact == "retrievable":
        return "lost_at_retrieval"
    return "present_but_missed"
