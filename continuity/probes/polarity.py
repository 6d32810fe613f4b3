"""Polarity: whether an answer asserts each value it mentions.

A mention is read in its clause. Clauses end at sentence ends, ``;``, ``:``, brackets,
a spaced dash, a contrast (``but``, ``however``, ``although``, ``whereas``) and a comma
that starts a new clause (``, it is ...``). Within a clause:

- a negation cue (``not``, ``n't``, ``never``, ``no``, ``no longer``, ``neither``/``nor``,
  ``instead of``, ``rather than``, ``in place of``) negates the first mention after it,
  and the mentions chained to that one by ``or``/``nor``. A cue that hedges (``not sure``,
  ``if I'm not mistaken``), an interjection (``No, ...``) and a bound (``no later than``,
  ``not until``, ``not before``) negate nothing. A mention followed by ``is wrong``,
  ``is not right``, ``is no longer ...`` is negated too;
- ``if``, ``whether`` and ``unless`` make every mention up to the next comma
  hypothetical, and a sentence that ends in ``?`` asks rather than asserts;
- a temporal clause (``before``, ``after``, ``once``, ``until``/``till``, ``when``, ``as
  soon as``) that speaks of what has not happened makes its mentions hypothetical (``once
  it's sent``, ``before it goes out``, ``when the fee is £40``): the clause runs to the next
  comma or clause end, and its words before the mention carry a present or future marker
  (``is``, ``'s``, ``are``, ``gets``, ``be``, ``will`` ..., or a present-tense ``goes``/
  ``comes``) and no past auxiliary (``was``, ``had`` ...); ``once`` and ``as soon as`` need
  only lack a past form. A clause in the past (``when it was sent``, ``after we mailed
  it``) and a bare preposition (``before 5pm``, ``until the 12 June deadline``) assert as
  usual;
- with `supersession`, a change marks the earlier value as past: ``from X to Y`` after a
  change verb, ``X was replaced by Y``, ``X, now Y``, ``X -> Y``, ``Y (previously X)``,
  ``Y, replacing X``, ``X at first``, ``X is the old one``, and a value that withdrew
  (``X had to drop out``, ``X pulled out``, ``X stepped down``), and a value an explicit
  self-correction withdraws (``X. Actually, scratch that, Y``, ``X - sorry, I mean Y``,
  ``X; correction: Y``). The scorer counts a past
  mention only when the answer asserts no other value of the kind, so a lone
  ``originally X`` still states X.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Literal

__all__ = ["Stance", "clause_bounds", "sentence_bounds", "stances"]

Stance = Literal["asserted", "negated", "past", "hypothetical", "asked"]

_SENTENCE_END = re.compile(r"[.!?]+(?=[\s\"')\]]|$)|\n+")
_CLAUSE_END = re.compile(
    r"[.!?]+(?=[\s\"')\]]|$)|\n+|[;()\[\]]|:(?=\s)|\s-+\s"
    r"|,?\s+(?=(?:but|however|although|though|whereas|whilst|except)\b)"
    r"|,\s+(?=(?:it|it's|its|this|that's|that|the|we|i|i'm|they|he|she|you|so|which|and it)\b)",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|neither|nor|instead of|rather than|in place of|cannot|no)\b"
    r"|n't\b",
    re.IGNORECASE,
)
# After a cue: what makes it a hedge, an interjection or a bound rather than a negation.
_NOT_NEGATING = re.compile(
    r"\s*(?:[,.!?;:]|-\s)"
    r"|\s+(?:\w+\s+){0,2}?(?:sure|certain|mistaken|wrong|positive|confident|100\b)"
    r"|\s+(?:later|earlier|more|less|sooner|fewer)\s+than\b|\s+(?:\w+\s+)?(?:until|till|before)\b"
    r"|\s+(?:only|forget|forgetting|miss|hesitate|worry|neglect)\b",
    re.IGNORECASE,
)
_CHAINED = re.compile(r"\s*,?\s*(?:or|nor|and/or)\s+(?:\w+\s+){0,2}?$", re.IGNORECASE)
_POST_NEGATION = re.compile(
    r"^\W*(?:(?:is|was|are|were|'s)\s+)?(?:not\s+(?:right|correct|valid|current|it)\b"
    r"|wrong\b|incorrect\b|invalid\b|no longer\b)",
    re.IGNORECASE,
)
_CONDITION = re.compile(r"\b(?:if|whether|unless)\b", re.IGNORECASE)
_CONDITION_END = re.compile(r",|[.!?;:()]|\n")
_TEMPORAL = re.compile(r"\b(?:before|after|once|until|till|when|as soon as)\b", re.IGNORECASE)
_TEMPORAL_END = re.compile(r",|[.!?;:()]|\n|\s-+\s|\b(?:but|and|so|then|for now)\b", re.I)
# What a temporal clause's words say about its time: not yet happened, or in the past.
_PRESENT = re.compile(
    r"\b(?:is|are|am|be|been|being|get|gets|getting|will|shall|can|may|has|have|do|does|goes"
    r"|comes|needs?)\b|'s\b|'re\b|'ll\b|'ve\b",
    re.IGNORECASE,
)
_PAST_AUX = re.compile(r"\b(?:was|were|had|did)\b|'d\b", re.IGNORECASE)
_PAST_TENSE = re.compile(r"\b(?:went|came|got|became|\w+ed)\b", re.IGNORECASE)

_CHANGE = (
    r"(?:chang|mov|went|gone|go|updat|revis|reschedul|rebook|increas|decreas|rose|raise|risen"
    r"|fell|fallen|drop|reduc|switch|bump|push|brought|shift|amend|correct|jump|climb|adjust"
    r"|re-?issu|replac|supersed|swapp?|cut)\w*"
)
_PAST_BEFORE = re.compile(
    # "moved from", "pushed it back from", "brought them forward from": a change verb, an
    # optional object pronoun and particle, then "from"
    r"\b(?:up|down|" + _CHANGE + r")(?:\s+(?:it|them|this|that|us))?"
    r"(?:\s+(?:back|forward|up|down|out|over|along))?\s+from\s+(?:\w+\s+){0,2}?$|"
    r"\b(?:previously|formerly|originally|initially|at first|first|earlier|used to be|old|previous"
    r"|original|prior|former|(?:replacing|replaced|superseding|superseded)(?!\s+(?:by|with)\b))"
    r"\s+(?:\w+\s+){0,3}?$",
    re.IGNORECASE,
)
_PAST_AFTER = re.compile(
    r"^\W*(?:(?:was|were|has been|had been|got|is|is now|'s)\s+)?(?:replaced|superseded"
    # "X changed" is past; "X, changed from Y" names X the new value: "from" right before
    # the next value (the window this is matched on ends there)
    r"|(?:changed|moved)(?!\s+(?:(?:back|forward|up|down|over|along)\s+)?from\s*$)"
    r"|cancelled|canceled|withdrawn"
    r"|outdated|obsolete|out of date"
    r"|the (?:old|previous|original|earlier|former|first)\b|at first|originally|initially"
    # "it was X before": the adverb closing its clause, not "X before the meeting"
    r"|previously|earlier|before that|before\s*(?:[.;,!]|$))"
    # Withdrawn: "X had to drop out", "X pulled out", "X has stepped down".
    r"|^\W*(?:(?:had|has|have)\s+(?:had\s+)?to\s+|(?:has|had|have)\s+)?(?:drop(?:ped)?\s+out"
    r"|pull(?:ed)?\s+out|withdr[ae]wn?|withdraw|step(?:ped)?\s+(?:down|aside|back)|bow(?:ed)?\s+out"
    r"|back(?:ed)?\s+out)\b",
    re.IGNORECASE,
)
_CURRENT_BEFORE = re.compile(
    r"(?:\b(?:now|currently|instead|new|latest|updated|revised)(?!\s+from\b)|->|=>|\u2192"
    r"|\b" + _CHANGE + r"\s+(?:\w+\s+){0,3}?(?:to|for|into|by|with)|\bbecame)\s+"
    r"(?:\w+\s+){0,3}?$",
    re.IGNORECASE,
)
# An explicit self-correction between two values: the one before it is withdrawn.
_CORRECTION = re.compile(
    r"\b(?:actually|scratch\s+that|strike\s+that|correction|i\s+mean|i\s+meant|make\s+that"
    r"|no\s*,?\s+wait|i\s+misspoke|my\s+mistake|let\s+me\s+correct|that'?s\s+wrong)\b",
    re.IGNORECASE,
)
_THEN = re.compile(r"^\s*,?\s*(?:and\s+)?(?:then|later|after that)\s+(?:\w+\s+){0,2}?$", re.I)
_CHANGE_VERB = re.compile(r"\b" + _CHANGE, re.IGNORECASE)
_TO = re.compile(r"^\s*(?:\w+\s+){0,2}?(?:to|into|->|=>|\u2192)\s+(?:\w+\s+){0,2}?$", re.IGNORECASE)


def _bounds(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    cuts = [0, *(m.end() for m in pattern.finditer(text)), len(text)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    return _bounds(_SENTENCE_END, text)


def clause_bounds(text: str) -> list[tuple[int, int]]:
    return _bounds(_CLAUSE_END, text)


def _enclosing(bounds: list[tuple[int, int]], position: int) -> tuple[int, int]:
    for start, end in bounds:
        if start <= position < end:
            return start, end
    return (len(bounds) and bounds[-1][0]), max(position, bounds[-1][1] if bounds else 0)


def _negated(
    text: str, spans: Sequence[tuple[int, int]], clauses: list[tuple[int, int]]
) -> set[int]:
    negated: set[int] = set()
    inside = [range(a, b) for a, b in spans]
    for cue in _NEGATION.finditer(text):
        if any(cue.start() in r for r in inside) or _NOT_NEGATING.match(text, cue.end()):
            continue
        _, clause_end = _enclosing(clauses, cue.start())
        after = [i for i, (a, _) in enumerate(spans) if cue.end() <= a < clause_end]
        if not after:
            continue
        negated.add(after[0])
        for previous, index in itertools.pairwise(after):
            if not _CHAINED.match(text[spans[previous][1] : spans[index][0]]):
                break
            negated.add(index)
    for i, (_, end) in enumerate(spans):
        _, clause_end = _enclosing(clauses, end - 1 if end else 0)
        following = [a for a, _ in spans if end <= a]
        stop = min([clause_end, *following])
        if _POST_NEGATION.match(text[end:stop]):
            negated.add(i)
    return negated


def _conditional(text: str, spans: Sequence[tuple[int, int]]) -> set[int]:
    found: set[int] = set()
    for cue in _CONDITION.finditer(text):
        end = _CONDITION_END.search(text, cue.end())
        stop = end.start() if end else len(text)
        found |= {i for i, (a, _) in enumerate(spans) if cue.end() <= a < stop}
    return found


def _temporal(text: str, spans: Sequence[tuple[int, int]]) -> set[int]:
    """Mentions inside a temporal clause about what has not happened yet (module doc)."""
    found: set[int] = set()
    for cue in _TEMPORAL.finditer(text):
        end = _TEMPORAL_END.search(text, cue.end())
        stop = end.start() if end else len(text)
        open_ended = cue.group().lower() in ("once", "as soon as")
        for i, (a, _) in enumerate(spans):
            if not cue.end() <= a < stop:
                continue
            gap = text[cue.end() : a]
            if not gap.strip() or _PAST_AUX.search(gap):
                continue
            future = bool(_PRESENT.search(gap) or _PRESENT.match(text, a))
            if future or (open_ended and not _PAST_TENSE.search(gap)):
                found.add(i)
    return found


def _past(text: str, spans: Sequence[tuple[int, int]], keys: Sequence[object]) -> set[int]:
    past: set[int] = set()
    clauses = clause_bounds(text)
    sentences = sentence_bounds(text)
    for i, (start, end) in enumerate(spans):
        clause_start, clause_end = _enclosing(clauses, start)
        sentence_start, _ = _enclosing(sentences, start)
        # A cue reaches back no further than the previous mention.
        since = max([clause_start, *(b for _, b in spans if b <= start)])
        before = text[since:start]
        later = [j for j, (a, _) in enumerate(spans) if a >= end and keys[j] != keys[i]]
        if _PAST_BEFORE.search(before):
            past.add(i)
        if _PAST_AFTER.match(text[end : min([clause_end, *(spans[j][0] for j in later)])]):
            past.add(i)
        # "changed from X to Y": a change verb earlier in the sentence, then "to" Y.
        if (
            re.search(r"\bfrom\s+(?:\w+\s+){0,2}?$", before, re.IGNORECASE)
            and later
            and _TO.match(text[end : spans[later[0]][0]])
            and _CHANGE_VERB.search(text[sentence_start:start])
        ):
            past.add(i)
        # "X, now Y" / "X was replaced by Y" / "X. It is now Y.": the value before a
        # current marker (in its sentence or the one before) is past.
        previous = max((a for a, _ in sentences if a < sentence_start), default=sentence_start)
        earlier = [j for j, (a, b) in enumerate(spans) if previous <= a and b <= start]
        if (
            earlier
            and keys[earlier[-1]] != keys[i]
            and (
                _CURRENT_BEFORE.search(gap := text[spans[earlier[-1]][1] : start])
                or _CORRECTION.search(gap)
            )
        ):
            past.add(earlier[-1])
    # "originally X, then Y" (both history) beside an asserted value: Y is past too.
    for i in range(1, len(spans)):
        gap = text[spans[i - 1][1] : spans[i][0]]
        if i - 1 in past and _THEN.match(gap) and not _CURRENT_BEFORE.search(gap):
            past.add(i)
    return past


def stances(
    text: str,
    spans: Sequence[tuple[int, int]],
    keys: Sequence[object] | None = None,
    *,
    supersession: bool = True,
) -> list[Stance]:
    """The stance of each mention (`spans`, sorted, over normalised `text`): see the
    module doc. `keys` say which mentions state the same value (a change needs two)."""
    clauses = clause_bounds(text)
    sentences = sentence_bounds(text)
    negated = _negated(text, spans, clauses)
    conditional = _conditional(text, spans) | _temporal(text, spans)
    past = _past(text, spans, keys or list(range(len(spans)))) if supersession else set()
    result: list[Stance] = []
    for i, (start, _) in enumerate(spans):
        _, sentence_end = _enclosing(sentences, start)
        ends = text[:sentence_end].rstrip()
        if ends.endswith("?"):
            result.append("asked")
        elif i in negated:
            result.append("negated")
        elif i in conditional:
            result.append("hypothetical")
        elif i in past:
            result.append("past")
        else:
            result.append("asserted")
    return result
