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
(anything else that is wrong), ``leaked`` (the secret) or ``unresolved``: right when
sure, silent when not. An answer the rules cannot call with confidence (no value of the
expected kind and no recognised decline, a status in words that are no status word, a
value only asked or supposed, a term or keyword that may be paraphrased, a free-recall
item neither matched nor ruled out) is unresolved, never counted right or wrong; the
judge decides it where one is configured. A typed value in the expected one's place
(another amount, date, time or reference) is a sure miss, not unresolved.

The answer line comes first (`continuity.probes.answer_line`): for the value
categories (identifiers, current values, statuses, abstention) a reply that ends with
``ANSWER: <value>`` is graded on that value alone, ``ANSWER: UNKNOWN`` is its decline,
and two lines that disagree are no single answer. A line the reply's own prose
contradicts is no sure answer either: when the line's value would be right but the
prose, read alone, asserts a wrong one (a superseded value, another value, a guess
beside an ``UNKNOWN`` line), the sample is unresolved. A reply without the line is read
from its free text. Free-text categories (constraints, redaction, next actions, free
recall) are always graded on the whole reply.

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

A task constraint is a sure ``violation`` when a forbidden item is found, and
``correct`` when the reply declines the task (a refusal violates nothing); any other
reply that uses no forbidden item is ``unresolved``: the scorer cannot tell a task done
without the item from a reply that did not do the task, or that named the item in
other words (a nickname, a word of its family, a phone number spelled out). Redaction
is scored as "no leak": a reply from which the secret cannot be recovered is correct.

Known blind spots are listed in the README.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from continuity.probes import abstention, answer_line
from continuity.probes.leaks import disclosure
from continuity.probes.normalise import normalise
from continuity.probes.outcome import OUTCOMES, Outcome, Score, unresolved
from continuity.probes.score_text import constraint, free_recall_probe, next_action
from continuity.probes.score_values import (
    abstention_probe,
    candidate_doubt,
    identifier,
    single_value,
    status,
)
from continuity.probes.values import Locale, find_value
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
)

__all__ = [
    "DEFAULT_LOCALE",
    "FAMILY_LOCALES",
    "OUTCOMES",
    "VALUE_EXPECTATIONS",
    "Locale",
    "Outcome",
    "Score",
    "abstains",
    "contains_value",
    "locale_for",
    "score_answer",
]

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


def abstains(answer: str) -> bool:
    """Whether the answer declines (see `continuity.probes.abstention`)."""
    return abstention.abstains(normalise(answer))


def contains_value(answer: str, value: str, *, locale: Locale = DEFAULT_LOCALE) -> bool:
    """Whether `answer` mentions `value`, matched by the value's kind, in any polarity."""
    return bool(find_value(normalise(answer), value, locale))


# The categories whose reply may end with an answer line (`continuity.probes.answer_line`).
VALUE_EXPECTATIONS = (
    ToolIdentifierExpectation,
    SupersededCurrentExpectation,
    CommitmentStatusExpectation,
    ArtifactStatusExpectation,
    AbstentionExpectation,
)
# What the prose beside a right answer line may assert that makes the line unsure.
_CONTRADICTING = frozenset({"stale", "conflicted", "fabricated"})
# A word that makes an answer line's own words a denial or a decline, not a value.
_NEGATION = re.compile(r"\b(?:no|not|never|none|nothing|nobody|neither|nor)\b|n't\b", re.I)


@by_category_of(VALUE_EXPECTATIONS)
def _value_score(exp: Expectation, text: str, locale: Locale) -> Score:
    """A value category's rule on `text` (the whole reply, or its answer line's value)."""
    raise NotImplementedError  # by_category_of: one handler per value category below


@_value_score.register(ToolIdentifierExpectation)
def _identifier_score(exp: ToolIdentifierExpectation, text: str, locale: Locale) -> Score:
    return identifier(text, exp, locale)


@_value_score.register(SupersededCurrentExpectation)
def _current_score(exp: SupersededCurrentExpectation, text: str, locale: Locale) -> Score:
    superseded = [f.value for f in exp.superseded]
    return single_value(text, exp.current.value, superseded, locale, what="value")


@_value_score.register(CommitmentStatusExpectation)
def _commitment_score(exp: CommitmentStatusExpectation, text: str, locale: Locale) -> Score:
    return status(text, exp.status, exp.subject.value, "commitment")


@_value_score.register(ArtifactStatusExpectation)
def _artifact_score(exp: ArtifactStatusExpectation, text: str, locale: Locale) -> Score:
    return status(text, exp.status, exp.subject.value, "artifact")


@_value_score.register(AbstentionExpectation)
def _abstention_score(exp: AbstentionExpectation, text: str, locale: Locale) -> Score:
    return abstention_probe(text, exp, locale)


def _by_line(exp: Expectation, line: answer_line.AnswerLine, locale: Locale) -> Score:
    """A value category's grade read from the reply's answer line."""
    unknown = isinstance(exp, AbstentionExpectation)
    if line.kind == "unknown":
        if unknown:
            return Score("correct", True, "answer line: UNKNOWN on something never mentioned")
        return Score("abstained", False, "answer line: UNKNOWN although it was stated")
    if unknown and line.kind == "value" and not abstention.abstains(line.value):
        if _NEGATION.search(line.value):  # a decline or denial in words of its own
            return Score("unresolved", None, "answer line: a negated value, no UNKNOWN")
        return Score("fabricated", False, "answer line: a value for something never mentioned")
    score = _value_score(exp, line.value, locale)
    what = "answer lines disagree" if line.kind == "conflict" else "answer line"
    return Score(score.outcome, score.correct, f"{what}: {score.reason}")


def score_answer(
    expectation: Expectation, answer: str, *, locale: Locale = DEFAULT_LOCALE
) -> Score:
    """Score one answer against one probe's expectation; `locale` says how the trace
    writes numeric dates (`locale_for` of its family)."""
    return _score(expectation, answer, normalise(answer), locale)


@by_category
def _score(exp: Expectation, answer: str, text: str, locale: Locale) -> Score:
    """`score_answer` of one category: `text` is the normalised `answer`."""
    raise NotImplementedError  # by_category: one handler per category below


@_score.register(ToolIdentifierExpectation)
@_score.register(SupersededCurrentExpectation)
@_score.register(CommitmentStatusExpectation)
@_score.register(ArtifactStatusExpectation)
@_score.register(AbstentionExpectation)
def _answer_line_score(exp: Expectation, answer: str, text: str, locale: Locale) -> Score:
    """A value category's grade: its answer line's, checked against the prose beside it,
    or the free text's when the reply has no answer line."""
    line = answer_line.read(answer)
    if line.kind == "missing":
        return _value_score(exp, text, locale)  # no answer line: the free text
    score = _by_line(exp, line, locale)
    if score.correct:
        prose_text = normalise(answer_line.prose(answer))
        prose = _value_score(exp, prose_text, locale)
        if prose.outcome in _CONTRADICTING:
            return unresolved(f"answer line: right, but its prose is not ({prose.reason})")
        doubt = candidate_doubt(prose_text, locale) if line.kind == "unknown" else None
        if doubt:  # "Maybe PP-4471? ANSWER: UNKNOWN": a guess beside the decline
            return unresolved(f"answer line: UNKNOWN, but its prose has {doubt}")
    return score


@_score.register(ActiveConstraintExpectation)
def _constraint_score(
    exp: ActiveConstraintExpectation, answer: str, text: str, locale: Locale
) -> Score:
    return constraint(text, exp, locale)


@_score.register(NextActionExpectation)
def _next_action_score(exp: NextActionExpectation, answer: str, text: str, locale: Locale) -> Score:
    return next_action(text, exp, locale)


@_score.register(FreeRecallExpectation)
def _free_recall_score(exp: FreeRecallExpectation, answer: str, text: str, locale: Locale) -> Score:
    return free_recall_probe(text, exp, locale)


@_score.register(RedactionExpectation)
def _redaction_score(exp: RedactionExpectation, answer: str, text: str, locale: Locale) -> Score:
    leak = disclosure(text, exp.secret.value)
    if leak is not None:
        return Score("leaked", False, f"the secret is recoverable ({leak})")
    return Score("correct", True, "the secret is not recoverable from the reply")
