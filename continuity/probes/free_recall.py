"""Free recall: an answer against a human-written gold answer (imported corpora), read
by meaning where a rule can be sure, and left doubtful where it cannot.

The gold is read in parts. ``;`` separates the answer from a reason or an alternative
(a gold such as ``Lake cabin; he avoids crowds``): matching any one part suffices.
Within a part, ``,`` and a whole-word ``and`` separate the items of a list, and every
item is needed; a comma inside a date (``April 26, 2028``) or an amount separates
nothing. Numbers written in words are read as digits first
(`continuity.probes.paraphrase.spell_numbers`).

Each item gets one of three verdicts (`continuity.probes.recall_items`, which states the
rule in full): **matched** (surely stated), **missing** (surely not: the answer
contradicts it, or shares nothing distinctive with it) or **doubtful** (neither). In
short, the item's typed values (dates, amounts, times) and frequencies must be asserted
in any standard wording (``fortnightly`` for ``every two weeks``, ``twice weekly`` for
``two times a week``, ``UK`` for ``United Kingdom`` and back:
`continuity.probes.paraphrase`), and its content words held
(`continuity.probes.recall_words`: Porter stems, negation in the clause, British
spellings). Rarity decides: a word rarer than the generic threshold (a `wordfreq` Zipf
frequency of 5.5) must be held for a match, so an answer that shares two of three words
but differs in the distinctive one (``painting class on Saturday`` for ``pottery class
on Saturday``) is never matched. It is missing when the answer states another member of
the word's closed class that the gold does not name (``Sunday``, ``second``, ``3``) or
puts another name in a name's place, and doubtful otherwise (it may be a synonym). Only
generic words may go unsaid, two thirds held, with nothing in their place.

`score_parts` returns the best part as `RecallParts(matched, total, doubtful)`: a part
all matched, else a part whose items are all matched or doubtful, else the part with the
largest share matched. An answer whose list adds members to a fully matched list gold
(``figs, honey and some bread`` for ``figs, honey``) has one doubtful item per extra
member, beyond the gold's. The scorer (`continuity.probes.scoring`) makes all matched
``correct``, all matched or doubtful ``unresolved`` (the judge decides), and anything
else ``abstained`` (a decline, `continuity.probes.abstention`, that offers no guess) or
``fabricated``.

A part whose first item is a bare yes or no (``Yes``, ``Likely no``, ``Presumably
not``) is a polar answer, and the other parts are its reasons. The answer's first
committed word decides (``Probably not``, ``I don't think so``, ``I doubt it`` say no):
the same polarity matches, unless the answer gives a reason of its own (after
``because``, ``since``, ``given``, a spaced dash) that shares no word with the gold's
reasons, which is doubtful; the other polarity is missing. A decline that ends in the
gold's polarity (``not sure, but I'd guess yes``) is doubtful. An answer that commits to
neither is read against the reasons.

An answer that offers the gold among guesses (a sentence that joins candidates with
``or`` and says it is unsure, or ``either X or Y``) does not state it.

Limits, where the rule is silent rather than wrong: synonyms and paraphrases with no
word in common stay doubtful or missing (``spyglass`` for ``telescope``, ``when the
tide's out`` for ``low tide``); antonyms outside the closed classes (``high tide``)
stay doubtful; an item of function words only (``That``) is doubtful at best; a reason
stated without a causal cue is not compared; an extra list member is found only in a
sentence that names two gold items. LoCoMo's own token-F1 is reported beside the
verdict unchanged (`continuity.probes.token_f1`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from continuity.probes.normalise import normalise
from continuity.probes.paraphrase import spell_numbers
from continuity.probes.polarity import sentence_bounds
from continuity.probes.recall_items import Reading, Verdict, item_verdict, reading
from continuity.probes.recall_words import (
    HEDGES,
    NO_WORDS,
    STOP_WORDS,
    YES_WORDS,
    generic,
    held,
    read,
    stated,
    words,
)
from continuity.probes.values import Locale, specifics

__all__ = [
    "STOP_WORDS",
    "RecallParts",
    "attributed",
    "denies",
    "gold_parts",
    "guesses",
    "noncommittal",
    "only_asks",
    "polarity",
    "score_parts",
    "states_decoy",
]


class RecallParts(NamedTuple):
    """The gold's best part against an answer: `matched` items (sure), of `total`, and
    `doubtful` items (neither surely matched nor surely missing). An extra member the
    answer adds to a fully matched list counts as one more doubtful item."""

    matched: int
    total: int
    doubtful: int


# What offers a guess: a declining answer that says one of these still answers.
_GUESS = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|could (?:have )?be(?:en)?|might (?:have )?be(?:en)?"
    r"|may (?:have )?be(?:en)?|my (?:best )?guess|i'd guess|i guess|i'd say|i think it was)\b"
    r"|\beither\b[^.!?;]*\bor\b"  # candidates offered: "either 2027 or 2028"
)
_PART = re.compile(r"\s*;\s*")
_ITEM = re.compile(r"\s*,\s*|\s+and\s+", re.IGNORECASE)


def _shield(text: str, locale: Locale) -> str:
    """`text` with the commas inside its typed values (dates, amounts) made spaces, so
    splitting on commas never cuts a value in two."""
    chars = list(text)
    for mention in specifics(text, locale):
        for i in range(mention.start, mention.end):
            if chars[i] == ",":
                chars[i] = " "
    return "".join(chars)


def _gold_text(gold: str) -> str:
    return spell_numbers(normalise(gold))


def _items(part: str) -> list[tuple[str, str]]:
    """A part's items, each with the part's text before it."""
    items = []
    start = 0
    for cut in [*_ITEM.finditer(part), None]:
        end = cut.start() if cut else len(part)
        raw = part[start:end]
        item = raw.strip(" .!?\"'()")
        if item:
            items.append((item, part[: start + raw.find(item)]))
        start = cut.end() if cut else len(part)
    return items


def _gold_items(gold: str, locale: Locale) -> list[list[tuple[str, str]]]:
    parts = [_items(part) for part in _PART.split(_shield(_gold_text(gold), locale).strip())]
    return [part for part in parts if part]


def gold_parts(gold: str, locale: Locale = "day-first") -> list[list[str]]:
    """The gold's parts (any one suffices), each a list of its items (every one is
    needed); normalised, numbers in digits, none empty."""
    return [[item for item, _ in part] for part in _gold_items(gold, locale)]


def _polar_item(item: str) -> str | None:
    """``yes`` or ``no`` when an item is a (perhaps hedged) yes or no, alone or followed
    by its reason (``Likely yes since he works at a brewery``)."""
    said = [w for w, _, _ in words(item) if w not in HEDGES or w == "unlikely"]
    if not said:
        return None
    if said[0] in ("yes", "no"):
        return said[0]
    if said in (["not"], ["unlikely"]):
        return "no"
    return None


def polarity(text: str) -> str | None:
    """The polarity an answer commits to first: ``yes``, ``no`` or None. Hedges are
    skipped (``probably not`` says no, as does ``I doubt it``); a sentence with only a
    hedge says yes; a sentence that says it cannot tell (`noncommittal`) says neither."""
    for start, end in sentence_bounds(text):
        if _NONCOMMITTAL.search(text[start:end]):
            return None
        hedged = False
        previous = ""
        for word, _, _ in words(text[start:end]):
            if word in NO_WORDS or word.endswith("n't") or (previous, word) == ("i", "doubt"):
                return "no"
            previous = word
            if word in YES_WORDS:
                return "yes"
            hedged = hedged or word in HEDGES
        if hedged:
            return "yes"
    return None


_REQUEST = re.compile(r"(?i)^\W*(?:let me know|please|tell me|could you|can you|would you)\b")
# A decoy put in another person's mouth: "that was Odile", "it was Tomasz who ...".
_ATTRIBUTED = re.compile(
    r"\b(?:[Tt]hat|[Ii]t|[Tt]his)(?:\s+(?:was|is)|'s)\s+(?:actually\s+)?[A-Z][a-z]+"
    r"|\b[A-Z][a-z]+(?:'s|\s+is|\s+was)\s+the\s+one\b"
)
# Non-committal: says neither yes nor no ("hard to say", "not enough to go on").
_NONCOMMITTAL = re.compile(
    r"(?i)\b(?:not\s+(?:enough|sure|certain|clear)|(?:can't|cannot|can\s+not)\s+(?:say|tell)"
    r"|(?:hard|difficult|impossible)\s+to\s+(?:say|tell|know)|no\s+way\s+to\s+(?:say|tell|know)"
    r"|unclear|unsure|either\s+way|(?:maybe|perhaps),?\s+(?:maybe|perhaps)\s+not"
    r"|yes\s+(?:and|or)\s+no)\b"
)


def noncommittal(text: str) -> bool:
    """Whether an answer says it cannot tell (``hard to say``, ``not enough to go on``)."""
    return _NONCOMMITTAL.search(text) is not None


def denies(text: str, gold: str, locale: Locale) -> bool:
    """Whether an answer states a word of the gold under negation (``she didn't give up
    chocolate`` for ``Chocolate``): an answer, not a decline."""
    said = stated(read(text))
    return any(
        (word.stem, not word.negated) in said
        for part in gold_parts(gold, locale)
        for item in part
        for word in read(item)
    )


def only_asks(text: str) -> bool:
    """Whether every sentence of a (normalised) answer is a question or a request: it
    asks back (``Do you mean the spring race or the trail race?``) and states nothing."""
    sentences = [text[a:b].strip() for a, b in sentence_bounds(text)]
    sentences = [s for s in sentences if s]
    return bool(sentences) and all(s.endswith("?") or _REQUEST.match(s) for s in sentences)


def attributed(text: str, position: int) -> bool:
    """Whether the sentence of `text` at `position` gives what it says to someone else
    (``it was Odile who ...``, ``Bram's the one with three``)."""
    for start, end in sentence_bounds(text):
        if start <= position < end:
            return _ATTRIBUTED.search(text[start:end]) is not None
    return False


def states_decoy(text: str, decoy: str, locale: Locale) -> bool:
    """Whether an answer to an unanswerable question states its decoy (the answer the
    conversation holds for another person or thing) as the answer: matched as a gold
    answer is, in sentences that do not give it to someone else (``that was Odile``); a
    guess (``maybe X?``) states it even as a question."""
    kept = []
    for start, end in sentence_bounds(text):
        sentence = text[start:end]
        if _ATTRIBUTED.search(sentence):
            continue
        kept.append(sentence.replace("?", ".") if guesses(sentence) else sentence)
    parts = score_parts(" ".join(kept), decoy, locale, guesses_state=True)
    return parts.matched == parts.total


def guesses(text: str) -> bool:
    """Whether a (normalised) answer offers a guess (``maybe X``, ``it could be X``)."""
    return _GUESS.search(text.casefold()) is not None


# A reason the answer gives for its yes or no.
_CAUSE = re.compile(r"(?i)\b(?:because|since|given|due\s+to|as\s+(?:he|she|they|it))\b|\s-\s")
# A committed yes or no after a decline: "not sure, but I'd guess yes".
_LATE = re.compile(
    r"(?i)\b(?:guess|say|bet|lean(?:ing|s)?\s+(?:towards?|to))\s+(?P<word>yes|no|not)\b"
)


def _own_reason(text: str, reasons: list[list[str]]) -> bool:
    """Whether a polar answer gives a reason of its own (after ``because``, ``since``,
    ``given``, a spaced dash) that shares no word with the gold's reasons."""
    cause = _CAUSE.search(text)
    if cause is None or not reasons:
        return False
    given = read(text[cause.end() :])
    wanted = stated(read(" ".join(item for part in reasons for item in part)))
    return bool(given) and not any(held((w.stem, w.negated), wanted) for w in given)


def _polar(text: str, polar: str, reasons: list[list[str]]) -> Verdict | None:
    """A polar part's verdict: matched by the same first committed polarity (doubtful
    when the answer's own reason differs from the gold's), missing by the other one;
    doubtful when a decline ends in the gold's polarity; None when the answer commits
    to neither (the reasons may still answer)."""
    said = polarity(text)
    if said == polar:
        return "doubtful" if _own_reason(text, reasons) else "matched"
    if said is not None:
        return "missing"
    late = _LATE.search(text) if noncommittal(text) else None
    if late is not None and ("yes" if late["word"] == "yes" else "no") == polar:
        return "doubtful"
    return None


_CHUNK = re.compile(r"\s*,\s*|\s+(?:and|&)\s+", re.IGNORECASE)
_MEMBER_START = frozenset(("a", "an", "the", "some", "his", "her", "their", "my", "our", "your"))
# Words that open a comment on the list rather than a member ("both in 2023").
_COMMENT_START = frozenset(
    ("both", "all", "each", "either", "neither", "none", "along", "around", "across", "through")
)


def _extra_members(answer: Reading, items: list[str]) -> int:
    """How many members the answer's list adds to a matched list gold: in a sentence
    that names two or more gold items as members of a list (split on commas and
    ``and``), the other members that name something (a distinctive word, none of the
    gold's) and start as a noun phrase does (not with a preposition, a pronoun, a
    quantifier such as ``both`` or an adverb)."""
    gold = stated(read(" ".join(items)))
    extra = 0
    for start, end in sentence_bounds(answer.text):
        chunks = [c for c in _CHUNK.split(answer.text[start:end].strip(" .!")) if c]
        said = [read(chunk) for chunk in chunks]
        members = [any(held((w.stem, w.negated), gold) for w in words_) for words_ in said]
        if sum(members) < 2:
            continue
        for chunk, words_, member in zip(chunks, said, members, strict=True):
            first = chunk.split()[0].casefold() if chunk.split() else ""
            opens = first in _MEMBER_START or not (
                first in STOP_WORDS or first in _COMMENT_START or first.endswith("ly")
            )
            # An adverb ("specifically") qualifies the list; it names no member.
            named = [
                w
                for w in words_
                if w.word.isalpha() and not generic(w.word) and not w.word.endswith("ly")
            ]
            if not member and opens and named:
                extra += 1
    return extra


def _part(answer: Reading, part: list[tuple[str, str]], guesses_state: bool) -> RecallParts:
    verdicts = [
        item_verdict(item, answer, before=before, guesses_state=guesses_state)
        for item, before in part
    ]
    matched, doubtful = verdicts.count("matched"), verdicts.count("doubtful")
    if matched == len(part) > 1:
        extra = _extra_members(answer, [item for item, _ in part])
        return RecallParts(matched, matched + extra, extra)
    return RecallParts(matched, len(part), doubtful)


def _best(found: list[RecallParts]) -> RecallParts:
    """The part that decides: a matched one, else one that may be (all items matched or
    doubtful), else the one with the largest share matched."""
    for parts in found:
        if parts.matched == parts.total:
            return parts
    open_ = [p for p in found if p.doubtful and p.matched + p.doubtful == p.total]
    pool = open_ or found
    return max(pool, key=lambda p: p.matched / p.total, default=RecallParts(0, 1, 0))


def score_parts(
    text: str, gold: str, locale: Locale, *, guesses_state: bool = False
) -> RecallParts:
    """The gold's best part for a normalised answer (`RecallParts`; module doc). A gold
    offered among guesses is missing, unless `guesses_state` (a decoy guessed is a decoy
    stated)."""
    parts = _gold_items(gold, locale)
    answer = reading(text, _gold_text(gold), locale)
    if parts and (polar := _polar_item(parts[0][0][0])) is not None:
        verdict = _polar(text, polar, [[item for item, _ in part] for part in parts[1:]])
        if verdict is not None:
            return RecallParts(int(verdict == "matched"), 1, int(verdict == "doubtful"))
        parts = parts[1:]
    return _best([_part(answer, items, guesses_state) for items in parts])
