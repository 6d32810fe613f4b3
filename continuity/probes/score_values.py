"""The value categories' rules: one asserted value (identifiers, current values), one
status, and abstention. Each reads the normalised answer and returns a `Score`; see
`continuity.probes.scoring` for the rules in prose."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from continuity.probes import abstention, free_recall
from continuity.probes.normalise import mentions, normalise
from continuity.probes.outcome import ASKED_BACK, Score, unresolved
from continuity.probes.polarity import Stance, sentence_bounds, stances
from continuity.probes.quantities import labelled_other
from continuity.probes.statuses import asserted_statuses, status_spans
from continuity.probes.values import (
    Locale,
    Mention,
    Unreadable,
    find_all,
    kind_of,
    specifics,
    states,
    unreadable,
)
from continuity.traces.schema import AbstentionExpectation, ToolIdentifierExpectation

__all__ = [
    "abstention_probe",
    "candidate_doubt",
    "carries_numbers",
    "identifier",
    "nothing_to_read",
    "single_value",
    "status",
]


def nothing_to_read(text: str, locale: Locale, expected: str | None = None) -> Score:
    """The verdict on an answer that states none of the values a probe looks for and
    does not decline in words the scorer knows (the caller checked): asking back is a
    non-answer (fabricated); a value of the `expected` value's kind that cannot be read
    to one value (`continuity.probes.values.unreadable`: an unknown currency, an
    ambiguous numeric date) is unresolved; a specific value of another form (an amount,
    a date, a reference) is an invented one (fabricated); anything else is unresolved,
    since a paraphrase, another language or an unrecognised decline may hide behind it.
    Without `expected` (an abstention probe, which asks for no value) every specific
    value, readable or not, is an invented one."""
    if free_recall.only_asks(text):
        return ASKED_BACK
    values = specifics(text, locale)
    if expected is not None:
        if unreadable(text, expected, locale):
            return unresolved("a value of the expected kind that does not read as one value")
        values = [m for m in values if not isinstance(m.key, Unreadable)]
    read = stances(text, [(m.start, m.end) for m in values], supersession=False)
    if any(stance == "asserted" for stance in read):
        if expected is not None and carries_numbers(_unread(text, values), expected):
            # "Fr. 3400.-" for CHF 3,400, "4 Mär 2028" for 4 March 2028: every number of
            # the expected value is there, in a rendering the reader of values lacks.
            return unresolved("another form, holding every number of the expected value")
        return Score("fabricated", False, "another value, of a form the probe does not match")
    return unresolved("no value of the expected kind and no recognised decline")


# A number as written: digit groups joined by thousands separators count as one number.
_NUMBER = re.compile(r"(?<![\d])\d+(?:[,.'\u2019\u00a0\u202f ]\d{3})*(?!\d)")
_SEPARATORS = re.compile(r"[,.'\u2019\u00a0\u202f ]")


def _unread(text: str, values: Sequence[Mention]) -> str:
    """`text` without the values it states in a form the scorer reads (an amount, a
    time, a date, a code): what is left holds the bare numbers."""
    for m in sorted(values, key=lambda m: m.start, reverse=True):
        if not (isinstance(m.key, str) and m.key.isdigit()):
            text = text[: m.start] + " " + text[m.end :]
    return text


def _numbers(text: str) -> set[int]:
    return {int(_SEPARATORS.sub("", m.group())) for m in _NUMBER.finditer(text)}


def carries_numbers(text: str, expected: str) -> bool:
    """Whether `text` holds every number of an `expected` amount, date or time (``3400``
    for ``CHF 3,400``; ``4`` and ``2028`` for ``4 March 2028``): then a value it states
    in a form the scorer does not read may be the expected one, and is no sure invention.
    The caller leaves out the values it does read (``$19.30`` is a price, whatever its
    digits). Identifiers and phrases are matched whole, never by their numbers."""
    if kind_of(expected) not in ("money", "date", "time"):
        return False
    wanted = _numbers(normalise(expected))
    return bool(wanted) and wanted <= _numbers(text)


def _label(mention: Mention, current: str, superseded: Sequence[str], locale: Locale) -> str:
    if states(current, mention, locale):
        return "current"
    for value in superseded:
        if states(value, mention, locale):
            return "superseded"
    return f"other:{mention.key!r}"


def _read(
    text: str, current: str, superseded: Sequence[str], locale: Locale
) -> tuple[list[str], list[tuple[str, Stance | Literal["context"]]]]:
    """The labels of the values the answer asserts, and every mention's label and stance."""
    found: dict[tuple[int, int], Mention] = {}
    for value in (current, *superseded):
        for mention in find_all(text, value, locale):
            found.setdefault((mention.start, mention.end), mention)
    ordered = sorted(found.values(), key=lambda m: (m.start, m.end))
    labels = [_label(m, current, superseded, locale) for m in ordered]
    read: list[Stance | Literal["context"]] = [
        *stances(text, [(m.start, m.end) for m in ordered], labels)
    ]
    if kind_of(current) == "money":  # "€270 cheaper than", "a total of £11,500": context
        ends = [0, *(m.end for m in ordered)]
        anchors = [
            (m.start, m.end)
            for m, label in zip(ordered, labels, strict=True)
            if not label.startswith("other:")
        ]
        for i, (mention, label) in enumerate(zip(ordered, labels, strict=True)):
            if label.startswith("other:") and labelled_other(
                text, mention.start, mention.end, ends[i], anchors
            ):
                read[i] = "context"
    asserted = [label for label, stance in zip(labels, read, strict=True) if stance == "asserted"]
    if not asserted:  # a lone "originally X" still states X
        asserted = [label for label, stance in zip(labels, read, strict=True) if stance == "past"]
    return asserted, list(zip(labels, read, strict=True))


def single_value(
    text: str, current: str, superseded: Sequence[str], locale: Locale, *, what: str
) -> Score:
    asserted, seen = _read(text, current, superseded, locale)
    distinct = set(asserted)
    others = len({label for label in distinct if label.startswith("other:")})
    has_current, has_old = "current" in distinct, "superseded" in distinct
    if has_current and not has_old and not others:
        return Score("correct", True, "current value only")
    if has_old and (has_current or others):
        if has_current and not others:
            return Score("conflicted", False, "current and superseded values")
        return Score("conflicted", False, f"a superseded value among {len(distinct)} {what}s")
    if has_current:
        return Score(
            "fabricated", False, f"candidate list: the value among {others} other {what}(s)"
        )
    if (has_old or others) and unreadable(text, current, locale):
        # Beside a value it cannot read, which may be the current one: no sure call.
        return unresolved(f"a {what} it reads beside one that does not read as one value")
    if has_old:
        return Score("stale", False, "a superseded value")
    if others:
        return Score("fabricated", False, f"{others} other {what}(s), not the current value")
    if abstention.abstains(text):
        return Score("abstained", False, "abstained although the value was in the conversation")
    unasserted = sorted({stance for label, stance in seen if label == "current"})
    if unasserted == ["negated"]:
        return Score("fabricated", False, "the current value only negated")
    if unasserted:  # "Was it X?", "if it were X": a guess the answer does not commit to
        return unresolved(f"the current value only {'/'.join(unasserted)}")
    if any(stance == "negated" for _, stance in seen):
        return Score("fabricated", False, "a value denied and none stated")
    return nothing_to_read(text, locale, current)


def identifier(text: str, exp: ToolIdentifierExpectation, locale: Locale) -> Score:
    superseded = [f.value for f in exp.superseded]
    return single_value(text, exp.answer.value, superseded, locale, what="identifier")


def _subject_sentences(text: str, subject: str) -> str:
    """The sentences of `text` that name the subject (by its phrase or its head noun)."""
    head = subject.split()[-1] if subject.split() else subject
    chosen = [
        text[a:b]
        for a, b in sentence_bounds(text)
        if mentions(text[a:b], subject, normalised=True)
        or mentions(text[a:b], head, normalised=True)
    ]
    return " ".join(chosen)


def _declines_beside(text: str, kind: str) -> bool:
    """Whether `text` declines in a clause that holds no status word: "not shared yet"
    and "nothing has been shared" state a status (negated), where "the status is not
    specified" declines to give one."""
    spans = status_spans(text, kind)
    return any(
        not any(a <= start < b for start, _ in spans)
        for a, b in abstention.abstention_clauses(text)
    )


def status(text: str, expected: str, subject: str, kind: str) -> Score:
    reading = asserted_statuses(text, kind)
    statuses = reading.statuses
    if len(statuses) > 1 and (named := _subject_sentences(text, subject)):
        narrowed = asserted_statuses(named, kind).statuses
        statuses = narrowed if len(narrowed) == 1 else statuses
    if statuses == {expected}:
        if _declines_beside(text, kind):  # "the status is not specified ... it was sent"
            return unresolved(f"asserted status {expected}, beside a decline")
        return Score("correct", True, f"asserted status {expected}")
    listed = ", ".join(sorted(statuses))
    if len(statuses) > 1:
        if abstention.abstains(text):
            return Score("abstained", False, f"no single status ({listed}) and a refusal")
        return Score("fabricated", False, f"{len(statuses)} statuses asserted ({listed})")
    if statuses:
        return Score("fabricated", False, f"asserted status {listed}, not {expected}")
    if abstention.abstains(text):
        return Score("abstained", False, "abstained although the status was stated")
    # "It hasn't been sent", "it will be sent later" when it was: the status denied or
    # put off. "It could be FINAL, SHARED or ARCHIVED": several offered, none settled.
    denied = {s for s, how in reading.unasserted if how in ("negated", "hypothetical")}
    offered = {s for s, how in reading.unasserted if how in ("hypothetical", "asked")}
    if expected in denied or len(offered) > 1:
        return Score("fabricated", False, "no status asserted (every status word negated or asked)")
    if free_recall.only_asks(text):
        return ASKED_BACK
    if reading.forms:
        # "Still in my drafts, waiting before it goes out", "not sent and not cancelled",
        # "was it sent? Yes": other statuses denied, or the expected one only asked, say
        # nothing sure of this one, which may be in words the reader lacks.
        return unresolved("no status asserted, and the expected one not denied")
    # "It went out this morning", "I filed it away": a status in words the reader of
    # status words does not hold is not a wrong status.
    return unresolved("no status word and no recognised decline")


def abstention_probe(text: str, exp: AbstentionExpectation, locale: Locale) -> Score:
    declined = abstention.abstains(text)
    if exp.decoys and not declined:  # an unanswerable question: asking back or denying
        declined = free_recall.only_asks(text) or free_recall.polarity(text) == "no"
    if any(free_recall.states_decoy(text, decoy, locale) for decoy in exp.decoys):
        if declined:  # "she never had one; the terrier is Ben's": maybe another's answer
            return unresolved("stated the decoy beside a decline, perhaps as another's")
        return Score("fabricated", False, "stated the decoy (another's answer) as the answer")
    if not declined:
        return nothing_to_read(text, locale)
    values = specifics(text, locale)
    read = stances(text, [(m.start, m.end) for m in values], supersession=False)
    # A value offered as the answer is invented; one that only describes what the
    # conversation did hold ("we only had the master tracking number, X") is not.
    offered = [
        (m, stance)
        for m, stance in zip(values, read, strict=True)
        if abstention.claims(text, m.start, exp.never_mentioned)
        and not (exp.decoys and free_recall.attributed(text, m.start))
    ]
    if any(stance == "asserted" for _, stance in offered):
        return Score("fabricated", False, "abstained but stated a value anyway")
    if abstention.guesses(text):
        return Score("fabricated", False, "abstained but guessed anyway")
    if doubt := candidate_doubt(text, locale):
        return unresolved(f"abstained, then {doubt}")
    if offered:  # "a serial number (X) was not found": a value tied to what was asked
        return unresolved("abstained, beside a value named with the thing asked about")
    return Score("correct", True, "abstained on something never mentioned")


def candidate_doubt(text: str, locale: Locale) -> str | None:
    """What, beside a decline, may offer a candidate answer anyway: a hedge (``maybe
    PP-4471?``, ``probably a lemon cake``), or a question naming something specific (``was
    it Saffron & Salt?``): asking back with a candidate is a guess framed as a question.
    The scorer cannot tell such a guess from a softened decline, so neither is a sure
    abstention; None when there is nothing of the kind."""
    if abstention.HEDGE.search(text):
        return "a hedge that may offer a guess"
    values: list[Mention] | None = None  # read only when a question asks what the thing is
    for start, end in sentence_bounds(text):
        sentence = text[start:end].rstrip()
        if not sentence.endswith("?") or abstention.abstention_clauses(sentence):
            continue
        if not _IDENTITY_QUESTION.search(sentence):
            continue  # "want me to ask Dana?" offers help, not an answer
        if _NAMED.search(sentence, 1):
            return "a question that names a candidate"
        values = specifics(text, locale) if values is None else values
        if any(start <= m.start < end for m in values):
            return "a question that names a candidate"
    return None


# A capitalised word after a sentence's first word: a name, offered as a candidate when
# the sentence asks what the thing is (``Was it Saffron & Salt?``).
_NAMED = re.compile(r"(?<=\s)[A-Z][a-z]+")
# A question about what the thing itself is: "was it ...", "is that ...", "could it be
# ...": the grammar of proposing a candidate answer. Offering help ("want me to ask
# Dana?") or another referent ("did you mean Benedikt's dog?") is not.
_IDENTITY_QUESTION = re.compile(
    r"\b(?:(?:is|was|were|are|isn't|wasn't)\s+(?:it|that|this|they)"
    r"|(?:could|might|would)\s+(?:it|that|this)\s+(?:have\s+)?be)\b",
    re.IGNORECASE,
)
