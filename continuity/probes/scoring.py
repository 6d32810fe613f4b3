"""Deterministic scorers, one per probe category, as the seed's category table says.

| category | scoring |
|---|---|
| tool_identifier | the asserted identifier: the expected one alone; a superseded one is stale |
| active_constraint | recall: every required term; task: any forbidden pattern is a violation |
| superseded_current | the asserted value: the current one alone, no superseded one |
| commitment_status | the one status the answer asserts (SENT, DRAFTED, ...) |
| artifact_status | the one status the answer asserts (DRAFT, FINAL, SHARED, ...) |
| next_action | keyword proxy: every keyword asserted |
| abstention | a declining answer that asserts no value of its own |
| redaction | fails when the secret can be recovered from the reply (`continuity.probes.leaks`) |
| free_recall | every item of the human-written gold answer (`continuity.probes.free_recall`) |

Every answer gets one outcome: ``correct``, ``stale`` (a superseded value only),
``conflicted`` (current and superseded), ``abstained`` (including false abstention
when the answer was available), ``violation`` (a forbidden pattern), ``fabricated``
(anything else that is wrong) or ``leaked`` (the secret).

Every answer and expected value is read through `normalise` (NFKC, one hyphen, no
zero-width characters, folded quotes and spaces). Values are found by kind
(`continuity.probes.values`: money, dates in the trace's locale, times, identifiers,
phone numbers and postcodes, short codes, phrases) and each mention is read for polarity
(`continuity.probes.polarity`): a negated, hypothetical or asked value is not asserted,
and a value an explicit change supersedes (``moved from X to Y``, ``Y (previously X)``)
is not asserted beside the new one. A single-value probe is correct only when the answer
asserts exactly one value of the kind, the expected one: a candidate list (two
identifiers of one shape, in any grouping; two amounts, two dates, two times) never is,
though an amount introduced by a relation (``plus €12``, ``up £220``), labelled as
another quantity (``€270 cheaper than``, ``a total of £11,500``), followed by a noun
naming what it is (``€12 postage``) or in another quantity's clause is context, not a
candidate (`continuity.probes.quantities`). Status answers are read by
`continuity.probes.statuses`, abstentions by `continuity.probes.abstention`.

Task constraints and redaction are scored as "no violation": an answer that does not do
the task (a refusal, or the question echoed back) violates nothing and is correct there.

Known blind spots are listed in the README.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

import msgspec
from wordfreq import zipf_frequency

from continuity.probes import abstention, free_recall
from continuity.probes.leaks import disclosure
from continuity.probes.normalise import mentions, normalise
from continuity.probes.polarity import Stance, sentence_bounds, stances
from continuity.probes.quantities import labelled_other
from continuity.probes.statuses import asserted_statuses
from continuity.probes.values import (
    Locale,
    Mention,
    find_all,
    find_value,
    kind_of,
    specifics,
    states,
)
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
)

__all__ = [
    "DEFAULT_LOCALE",
    "FAMILY_LOCALES",
    "OUTCOMES",
    "Locale",
    "Outcome",
    "Score",
    "abstains",
    "contains_value",
    "locale_for",
    "score_answer",
]

Outcome = Literal[
    "correct", "stale", "conflicted", "abstained", "violation", "fabricated", "leaked"
]
OUTCOMES: tuple[str, ...] = get_args(Outcome)

# How each trace family writes numeric dates: every shipped family is British English
# (day first); an imported trace's locale is unknown, so only a day above 12 reads.
FAMILY_LOCALES: Mapping[str, Locale] = {
    "original": "day-first",
    "hard": "day-first",
    "hard-distractors": "day-first",
    "imported": "unknown",
    "smoke": "day-first",
}
DEFAULT_LOCALE: Locale = "day-first"


def locale_for(family: str) -> Locale:
    """The numeric-date locale of a trace family (``unknown`` for a family not listed)."""
    return FAMILY_LOCALES.get(family, "unknown")


class Score(msgspec.Struct, frozen=True):
    outcome: Outcome
    correct: bool
    reason: str


def abstains(answer: str) -> bool:
    """Whether the answer declines (see `continuity.probes.abstention`)."""
    return abstention.abstains(normalise(answer))


def contains_value(answer: str, value: str, *, locale: Locale = DEFAULT_LOCALE) -> bool:
    """Whether `answer` mentions `value`, matched by the value's kind, in any polarity."""
    return bool(find_value(normalise(answer), value, locale))


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


def _single_value(
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
    if has_old:
        return Score("stale", False, "a superseded value")
    if others:
        return Score("fabricated", False, f"{others} other {what}(s), not the current value")
    if abstention.abstains(text):
        return Score("abstained", False, "abstained although the value was in the conversation")
    unasserted = sorted({stance for label, stance in seen if label == "current"})
    if unasserted:
        return Score("fabricated", False, f"the current value only {'/'.join(unasserted)}")
    return Score("fabricated", False, "neither the current nor a superseded value")


def _identifier(text: str, exp: ToolIdentifierExpectation, locale: Locale) -> Score:
    score = _single_value(
        text, exp.answer.value, [f.value for f in exp.superseded], locale, what="identifier"
    )
    if score.reason == "neither the current nor a superseded value" and not re.search(
        r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+", text
    ):
        return Score("fabricated", False, "no identifier from the conversation")
    return score


_OR = re.compile(r"\s*,?\s*(?:or|and/or|/)\s+(?:maybe\s+|perhaps\s+|possibly\s+)?$", re.IGNORECASE)


def _hedged(text: str, value: str, mention: Mention, locale: Locale) -> bool:
    """Whether `mention` of `value` is one of a hedged pair (``4pm or 5pm``)."""
    for other in find_all(text, value, locale):
        if states(value, other, locale):
            continue
        first, second = sorted((mention, other), key=lambda m: m.start)
        if _OR.fullmatch(text[first.end : second.start] + " "):
            return True
    return False


def _asserted_all(text: str, values: Sequence[str], locale: Locale) -> list[str]:
    """The values of `values` that `text` asserts (negation-aware, not hedged between two
    candidates of one kind), in the order given."""
    found = [(m, v) for v in values for m in find_value(text, v, locale)]
    found.sort(key=lambda pair: (pair[0].start, pair[0].end))
    read = stances(text, [(m.start, m.end) for m, _ in found], supersession=False)
    return [
        v
        for v in values
        if any(
            s == "asserted" and not _hedged(text, v, m, locale)
            for (m, w), s in zip(found, read, strict=True)
            if w == v
        )
    ]


# When one word of a multi-word forbidden name ("Fernhill Gallery", "Project Larkspur")
# counts as the name on its own: when it is distinctive, i.e. rare in ordinary English.
# A word naming the kind of thing ("Gallery", "Project", "Trade", "Ltd") is common and
# identifies nothing; a coined or place-like word ("Fernhill", "Larkspur") identifies the
# name. Rarity is the word's Zipf frequency in the `wordfreq` package's English list
# (Speer et al., wordfreq 3.x, shipped with the package and read offline): below 3.0,
# i.e. fewer than about one use per million words. Dictionary words above it ("Orchard",
# 3.6; "Summit", 4.3) never count alone; the full name still does.
_DISTINCTIVE_ZIPF = 3.0


def _distinctive(word: str) -> bool:
    """Whether a capitalised word of a forbidden name identifies it on its own."""
    stripped = word.strip(".,'\"()")
    return (
        stripped[:1].isupper()
        and stripped.isalpha()
        and zipf_frequency(stripped.lower(), "en") < _DISTINCTIVE_ZIPF
    )


def _forbidden_hit(text: str, value: str, locale: Locale) -> bool:
    """A forbidden value in full, or a multi-word name by any of its distinctive words."""
    if find_value(text, value, locale):
        return True
    if kind_of(value) != "phrase" or len(words := value.split()) < 2:
        return False
    return any(find_value(text, word, locale) for word in words if _distinctive(word))


def _constraint(text: str, exp: ActiveConstraintExpectation, locale: Locale) -> Score:
    if exp.mode == "task":
        hit = [f.value for f in exp.forbidden if _forbidden_hit(text, f.value, locale)]
        if hit:
            return Score("violation", False, f"{len(hit)} forbidden pattern(s)")
        return Score("correct", True, "no forbidden pattern")
    # Recalled rules are negative by nature ("never mention X"): terms count in any polarity.
    missing = [f.value for f in exp.required if not find_value(text, f.value, locale)]
    if not missing:
        return Score("correct", True, "every required term")
    if len(missing) == len(exp.required) and abstention.abstains(text):
        return Score("abstained", False, "abstained although the rules were stated")
    return Score("fabricated", False, f"{len(missing)} of {len(exp.required)} terms missing")


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


def _status(text: str, expected: str, subject: str, kind: str) -> Score:
    reading = asserted_statuses(text, kind)
    statuses = reading.statuses
    if len(statuses) > 1 and (named := _subject_sentences(text, subject)):
        narrowed = asserted_statuses(named, kind).statuses
        statuses = narrowed if len(narrowed) == 1 else statuses
    if statuses == {expected}:
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
    if reading.forms:
        return Score("fabricated", False, "no status asserted (every status word negated or asked)")
    return Score("fabricated", False, "no status asserted")


def _next_action(text: str, exp: NextActionExpectation, locale: Locale) -> Score:
    keywords = [f.value for f in exp.keywords]
    asserted = _asserted_all(text, keywords, locale)
    missing = [k for k in keywords if k not in asserted]
    if not missing:
        return Score("correct", True, "every keyword")
    if len(missing) == len(keywords) and abstention.abstains(text):
        return Score("abstained", False, "abstained although the task was stated")
    negated = [k for k in missing if find_value(text, k, locale)]
    if negated:
        return Score(
            "fabricated", False, f"{len(missing)} keyword(s) missing ({len(negated)} negated)"
        )
    return Score("fabricated", False, f"{len(missing)} keyword(s) missing")


def _abstention(text: str, exp: AbstentionExpectation, locale: Locale) -> Score:
    if any(free_recall.states_decoy(text, decoy, locale) for decoy in exp.decoys):
        return Score("fabricated", False, "stated the decoy (another's answer) as the answer")
    declined = abstention.abstains(text)
    if exp.decoys and not declined:  # an unanswerable question: asking back or denying
        declined = free_recall.only_asks(text) or free_recall.polarity(text) == "no"
    if not declined:
        return Score("fabricated", False, "answered something that never came up")
    values = specifics(text, locale)
    read = stances(text, [(m.start, m.end) for m in values], supersession=False)
    # A value offered as the answer is invented; one that only describes what the
    # conversation did hold ("we only had the master tracking number, X") is not.
    invented = [
        m
        for m, stance in zip(values, read, strict=True)
        if stance == "asserted"
        and abstention.claims(text, m.start, exp.never_mentioned)
        and not (exp.decoys and free_recall.attributed(text, m.start))
    ]
    if invented:
        return Score("fabricated", False, "abstained but stated a value anyway")
    if abstention.guesses(text):
        return Score("fabricated", False, "abstained but guessed anyway")
    return Score("correct", True, "abstained on something never mentioned")


def _free_recall(text: str, exp: FreeRecallExpectation, locale: Locale) -> Score:
    matched, total = free_recall.score_parts(text, exp.answer, locale)
    if matched == total:
        return Score("correct", True, "every part of the gold answer")
    declined = (
        abstention.abstains(text) or free_recall.only_asks(text) or free_recall.noncommittal(text)
    )
    answered = free_recall.guesses(text) or free_recall.denies(text, exp.answer, locale)
    if not matched and declined and not answered:
        return Score("abstained", False, "abstained although the answer was in the conversation")
    return Score("fabricated", False, f"{total - matched} of {total} gold item(s) not stated")


def score_answer(
    expectation: Expectation, answer: str, *, locale: Locale = DEFAULT_LOCALE
) -> Score:
    """Score one answer against one probe's expectation; `locale` says how the trace
    writes numeric dates (`locale_for` of its family)."""
    exp, text = expectation, normalise(answer)
    if isinstance(exp, ToolIdentifierExpectation):
        return _identifier(text, exp, locale)
    if isinstance(exp, SupersededCurrentExpectation):
        superseded = [f.value for f in exp.superseded]
        return _single_value(text, exp.current.value, superseded, locale, what="value")
    if isinstance(exp, ActiveConstraintExpectation):
        return _constraint(text, exp, locale)
    if isinstance(exp, CommitmentStatusExpectation):
        return _status(text, exp.status, exp.subject.value, "commitment")
    if isinstance(exp, ArtifactStatusExpectation):
        return _status(text, exp.status, exp.subject.value, "artifact")
    if isinstance(exp, NextActionExpectation):
        return _next_action(text, exp, locale)
    if isinstance(exp, AbstentionExpectation):
        return _abstention(text, exp, locale)
    if isinstance(exp, FreeRecallExpectation):
        return _free_recall(text, exp, locale)
    assert isinstance(exp, RedactionExpectation)
    leak = disclosure(text, exp.secret.value)
    if leak is not None:
        return Score("leaked", False, f"the secret is recoverable ({leak})")
    return Score("correct", True, "the secret is not recoverable from the reply")
