"""Free recall: an answer against a human-written gold answer (imported corpora).

The gold is read in parts. ``;`` separates the answer from a reason or an alternative
(a gold such as ``Lake cabin; he avoids crowds``): matching any one part suffices.
Within a part, ``,`` and a whole-word ``and`` separate the items of a list, and every
item is needed; a comma inside a date (``April 26, 2028``) or an amount
separates nothing. An item is matched when the answer

- asserts every typed value the item holds (a date, an amount, a time, a number or an
  identifier, found by `continuity.probes.values` in the trace's locale), and
- states at least two thirds (rounded up: one of one, two of two, two of three, three
  of four) of the item's remaining content words, compared by Porter stem (``paintings``
  matches ``painted``; a stem of four letters or more that begins the other counts, so
  ``trans`` states ``transgender``; articles, pronouns, prepositions and auxiliaries are
  not content; ``three`` and ``3`` are the same word);

where a typed value must be asserted (`continuity.probes.polarity`), and a content word
after a negation cue in its clause (``not Leeds``) or in a question does not state the
word (a gold word under negation, ``not tough``, needs the same negation).

A part whose first item is a bare yes or no (``Yes``, ``Likely no``,
``Presumably not``) is a polar answer: it is matched by an answer whose first committed
word has the same polarity (``Probably not``, ``I don't think so`` say no), and the rest
of the part is its reason, not required.

An answer that offers the gold among guesses (a sentence that joins candidates with
``or`` and says it is unsure: ``tennis, volleyball or basketball, I'm not certain``) does
not state it. The outcome is ``correct`` when some part is matched, ``abstained`` when
the answer declines (`continuity.probes.abstention`) without offering a guess (``maybe
X``, ``it could be X``), and ``fabricated`` otherwise.
Known blind spots (README): an answer that lists extra items beside the gold still scores
correct (LoCoMo's token-F1, reported beside it, falls), and a paraphrase with none of
the gold's content words misses (the judge, in real runs, reads it).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import snowballstemmer

from continuity.probes.normalise import normalise
from continuity.probes.polarity import clause_bounds, sentence_bounds, stances
from continuity.probes.relative_dates import gold_days, states_one_of
from continuity.probes.values import Locale, find_value, specifics

__all__ = [
    "STOP_WORDS",
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


def _words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP_WORDS = _words_of(
    """a an the and or of to in on at for with by from as into onto over under about
    after before during than then so is are was were be been being am it its this that
    these those he she they them him her his hers their theirs i me my mine we us our
    you your has have had do does did will would could should can may might must s
    some any very just also really up out there here who whom which what when where why
    how"""
)
_NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen", "twenty",
)  # fmt: skip
_NUMBERS = {word: str(value) for value, word in enumerate(_NUMBER_WORDS)} | {
    "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
    "eighty": "80", "ninety": "90",
}  # fmt: skip
_HEDGES = _words_of(
    "likely unlikely probably presumably possibly perhaps maybe most definitely certainly surely"
)
_YES = _words_of("yes yeah yep yup absolutely definitely certainly sure indeed")
_NO = _words_of("no nope not never unlikely hardly")
_UNSURE = re.compile(
    r"\b(?:not (?:sure|certain)|unsure|could be|might be|may be|maybe|perhaps|possibly|"
    r"either|i think it was one of|one of)\b"
)
# What offers a guess: a declining answer that says one of these still answers.
_GUESS = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|could (?:have )?be(?:en)?|might (?:have )?be(?:en)?"
    r"|may (?:have )?be(?:en)?|my (?:best )?guess|i'd guess|i guess|i'd say|i think it was)\b"
)
_PART = re.compile(r"\s*;\s*")
_ITEM = re.compile(r"\s*,\s*|\s+and\s+", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_STEMMER = snowballstemmer.stemmer("porter")


_VARIANTS = (
    (re.compile(r"ae"), "e"),  # paediatric, anaesthetic
    (re.compile(r"(?<=\w{3})our(?=(?:s|ed|ing|ite|ites|able)?$)"), "or"),  # colour, favourite
    (re.compile(r"(?<=\w{3})is(?=(?:e|ed|es|ing|ation|ations)$)"), "iz"),  # organise
    (re.compile(r"(?<=[aeiou])ll(?=(?:ed|ing|er|ers|ery)$)"), "l"),  # travelled, jewellery
    (re.compile(r"(?<=\w{2})tre$"), "ter"),  # centre, theatre
)


def _spelling(word: str) -> str:
    """British spellings read as American ones, on both sides of a comparison."""
    for pattern, replacement in _VARIANTS:
        word = pattern.sub(replacement, word)
    return word


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(_spelling(_NUMBERS.get(word, word))))


def _shield(text: str, locale: Locale) -> str:
    """`text` with the commas inside its typed values (dates, amounts) made spaces, so
    splitting on commas never cuts a value in two."""
    chars = list(text)
    for mention in specifics(text, locale):
        for i in range(mention.start, mention.end):
            if chars[i] == ",":
                chars[i] = " "
    return "".join(chars)


def gold_parts(gold: str, locale: Locale = "day-first") -> list[list[str]]:
    """The gold's parts (any one suffices), each a list of its items (every one is
    needed); normalised, none empty."""
    parts = []
    for part in _PART.split(_shield(normalise(gold), locale).strip()):
        items = [item.strip(" .!?\"'()") for item in _ITEM.split(part)]
        items = [item for item in items if item]
        if items:
            parts.append(items)
    return parts


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).casefold(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _content(text: str) -> list[str]:
    return [w for w, _, _ in _words(text) if w not in STOP_WORDS]


def _polar_item(item: str) -> str | None:
    """``yes`` or ``no`` when an item is a (perhaps hedged) yes or no, alone or followed
    by its reason (``Likely yes since he works at a brewery``)."""
    words = [w for w, _, _ in _words(item) if w not in _HEDGES or w == "unlikely"]
    if not words:
        return None
    if words[0] in ("yes", "no"):
        return words[0]
    if words in (["not"], ["unlikely"]):
        return "no"
    return None


def polarity(text: str) -> str | None:
    """The polarity an answer commits to first: ``yes``, ``no`` or None. Hedges are
    skipped (``probably not`` says no); a sentence with only a hedge says yes."""
    for start, end in sentence_bounds(text):
        if _NONCOMMITTAL.search(text[start:end]):
            return None
        hedged = False
        for word, _, _ in _words(text[start:end]):
            if word in _NO or word.endswith("n't"):
                return "no"
            if word in _YES:
                return "yes"
            hedged = hedged or word in _HEDGES
        if hedged:
            return "yes"
    return None


_NEGATOR = re.compile(r"\b(?:not|never|no longer|neither|nor|no|nothing|none)\b|n't\b")
# After a cue: an interjection ("No, ...") or a hedge ("not sure") negates nothing.
_NOT_NEGATING = re.compile(r"\s*[,.!?;:]|\s+(?:\w+\s+){0,2}?(?:sure|certain|mistaken)\b")


def _negator(word: str) -> bool:
    return word in _NO or word in ("neither", "nor", "nothing", "none") or word.endswith("n't")


def _read(text: str) -> set[tuple[str, bool]]:
    """(stem, negated) for every content word `text` states: a word after a negation cue
    in its clause is negated; a word in a question is not stated. Number words are
    digits (``three`` is ``3``)."""
    said: set[tuple[str, bool]] = set()
    for sentence_start, sentence_end in sentence_bounds(text):
        if text[sentence_start:sentence_end].rstrip().endswith("?"):
            continue
        for start, end in clause_bounds(text[sentence_start:sentence_end]):
            clause = text[sentence_start + start : sentence_start + end]
            cues = [
                m.end()
                for m in _NEGATOR.finditer(clause.casefold())
                if not _NOT_NEGATING.match(clause, m.end())
            ]
            for word, position, _ in _words(clause):
                if word in STOP_WORDS or _negator(word) or word in _HEDGES:
                    continue
                said.add((_stem(word), any(cue <= position for cue in cues)))
    return said


def _asserts(text: str, value: str, locale: Locale) -> bool:
    found = find_value(text, value, locale)
    read = stances(text, [(m.start, m.end) for m in found], supersession=False)
    return any(stance == "asserted" for stance in read)


def _guessed(text: str, stems: set[str]) -> bool:
    """Whether the sentence that holds the item's words offers it as one of several
    guesses: candidates joined by ``or`` in an answer that says it is unsure."""
    if not _UNSURE.search(text.casefold()):
        return False
    for start, end in sentence_bounds(text):
        sentence = text[start:end].casefold()
        if " or " in sentence and any(_stem(w) in stems for w in _content(sentence)):
            return True
    return False


def _held(word: tuple[str, bool], answer: set[tuple[str, bool]]) -> bool:
    """Whether the answer states a gold word: the same stem and negation, or a stem of at
    least four letters that begins the other (``trans`` for ``transgender``)."""
    if word in answer:
        return True
    stem, negated = word
    return any(
        flag == negated
        and min(len(stem), len(other)) >= 4
        and (stem.startswith(other) or other.startswith(stem))
        for other, flag in answer
    )


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
    r"|unclear|unsure)\b"
)


def noncommittal(text: str) -> bool:
    """Whether an answer says it cannot tell (``hard to say``, ``not enough to go on``)."""
    return _NONCOMMITTAL.search(text) is not None


def denies(text: str, gold: str, locale: Locale) -> bool:
    """Whether an answer states a word of the gold under negation (``she didn't give up
    chocolate`` for ``Chocolate``): an answer, not a decline."""
    said = _read(text)
    return any(
        (stem, not negated) in said
        for part in gold_parts(gold, locale)
        for item in part
        for stem, negated in _read(item)
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
    matched, total = score_parts(" ".join(kept), decoy, locale, guesses_state=True)
    return matched == total


def guesses(text: str) -> bool:
    """Whether a (normalised) answer offers a guess (``maybe X``, ``it could be X``)."""
    return _GUESS.search(text.casefold()) is not None


def _reversed(item: str, text: str) -> bool:
    """Whether the answer puts a dated gold the other way round: ``after`` where the gold
    says ``before`` (or the reverse) and never the gold's own word."""
    gold = {w for w, _, _ in _words(item)}
    said = {w for w, _, _ in _words(text)}
    return any(
        word in gold and other in said and word not in said
        for word, other in (("before", "after"), ("after", "before"))
    )


def _resolved(item: str, text: str, locale: Locale) -> str | None:
    """The item without its relative date phrase when the answer asserts one of the days
    it allows (``12 August 2028`` for ``The Saturday before 14 August 2028``), else None."""
    relative = gold_days(item, locale)
    if relative is None:
        return None
    (start, end), days = relative
    spans = states_one_of(text, days, locale)
    if not any(stance == "asserted" for stance in stances(text, spans, supersession=False)):
        return None
    return item[:start] + " " + item[end:]


def _item_matched(
    item: str, text: str, answer: set[tuple[str, bool]], locale: Locale, guesses_state: bool
) -> bool:
    rest = _resolved(item, text, locale)
    if rest is not None:  # the date is stated; the rest must be too
        wanted = _read(rest)
        return sum(_held(w, answer) for w in wanted) >= math.ceil(2 * len(wanted) / 3)
    typed = specifics(item, locale)
    if any(not _asserts(text, item[m.start : m.end], locale) for m in typed):
        return False
    if typed and _reversed(item, text):
        return False
    rest = item
    for mention in sorted(typed, key=lambda m: m.start, reverse=True):
        rest = rest[: mention.start] + " " + rest[mention.end :]
    wanted = _read(rest)
    if not wanted:
        return bool(typed)
    held = sum(_held(word, answer) for word in wanted)
    enough = held >= math.ceil(2 * len(wanted) / 3)
    return enough and (guesses_state or not _guessed(text, {w for w, _ in wanted}))


def score_parts(
    text: str, gold: str, locale: Locale, *, guesses_state: bool = False
) -> tuple[int, int]:
    """(matched, total) items of the gold's best part for a normalised answer. A gold
    offered among guesses is not matched, unless `guesses_state` (a decoy guessed is a
    decoy stated)."""
    answer = _read(text)
    best = (0, 1)
    for items in gold_parts(gold, locale):
        polar = _polar_item(items[0])
        if polar is not None:
            if polarity(text) == polar:
                return 1, 1
            continue
        matched = sum(_item_matched(item, text, answer, locale, guesses_state) for item in items)
        if matched == len(items):
            return matched, len(items)
        if matched / len(items) > best[0] / best[1]:
            best = (matched, len(items))
    return best
