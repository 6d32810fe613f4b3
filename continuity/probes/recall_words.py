"""Content words for free recall: what a text states word by word, and what each word
decides.

`read` turns normalised text into its content words in order (`Said`): each a Porter
stem, whether a negation cue before it in its clause negates it, its clause, and whether
it is written as a name (capitalised, and not first in its sentence unless the next word
is capitalised too). Articles, pronouns,
prepositions, auxiliaries, negation cues and hedges are not content. A word in a
question states nothing. A word in capitals (``IT``, ``US``) is an acronym and content.
Number words are digits (``three`` is ``3``, ``12s`` is
``12``), ordinals one form (``first`` is ``1st``), British spellings American ones.

What a word decides, by its rarity and its class:

- **Generic** words are common in English: a `wordfreq` Zipf frequency of 5.5 or more
  (about one use in 3,000 words: ``time``, ``day``, ``new``, ``first``), read from the
  package's shipped English list. They say little about which thing is meant.
- **Closed classes** are sets of mutually exclusive words (`CLASSES`): small numbers,
  ordinals, weekdays, months (not ``May`` or ``March``, which are also verbs), seasons
  (not ``fall``), basic colours and compass points. Two different members of a class
  contradict each other (``Saturday`` is not ``Sunday``); a closed-class word is never
  generic.
- **Names** are words a gold writes capitalised after its first word (``Turnip`` in
  ``Sir Bartholomew Turnip``). Another name in a name's place contradicts it.

`slot` finds what an answer says in the place of a gold word it lacks: the answer's
content word next to where it holds the gold word's neighbour.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, NamedTuple

import snowballstemmer
from wordfreq import zipf_frequency

from continuity.probes.polarity import clause_bounds, sentence_bounds

__all__ = [
    "CLASSES",
    "GENERIC_ZIPF",
    "HEDGES",
    "NO_WORDS",
    "STOP_WORDS",
    "YES_WORDS",
    "Said",
    "Slot",
    "closed_class",
    "generic",
    "held",
    "read",
    "slot",
    "stated",
    "stem",
    "words",
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
HEDGES = _words_of(
    "likely unlikely probably presumably possibly perhaps maybe most definitely certainly surely"
)
YES_WORDS = _words_of("yes yeah yep yup absolutely definitely certainly sure indeed")
NO_WORDS = _words_of("no nope not never unlikely hardly")
# At or above this Zipf frequency (wordfreq's English list) a word is generic: about one
# use in 3,000 words or more. Below it a word is distinctive enough to decide an item.
GENERIC_ZIPF = 5.5

_NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen", "twenty",
)  # fmt: skip
_NUMBERS = {word: str(value) for value, word in enumerate(_NUMBER_WORDS)} | {
    "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
    "eighty": "80", "ninety": "90",
}  # fmt: skip
_ORDINAL_WORDS = (
    "zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
    "ninth", "tenth", "eleventh", "twelfth",
)  # fmt: skip
_ORDINALS = {word: f"{n}th" for n, word in enumerate(_ORDINAL_WORDS) if n}
# Month abbreviations that are no other common word ("jan", "mar" and "may" are).
_MONTH_ABBREVIATIONS = {
    "feb": "february", "apr": "april", "jun": "june", "jul": "july", "aug": "august",
    "sep": "september", "sept": "september", "oct": "october", "nov": "november",
    "dec": "december",
}  # fmt: skip
_ORDINAL_DIGITS = re.compile(r"(\d{1,3})(?:st|nd|rd|th)")
_PLURAL_NUMBER = re.compile(r"(\d{1,3})s")  # "under-12s", "the 90s"

_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday"
_MONTHS = "january february april june july august september october november december"
CLASSES: dict[str, frozenset[str]] = {
    "weekday": _words_of(_WEEKDAYS),
    "month": _words_of(_MONTHS),
    "season": _words_of("spring summer autumn winter"),
    "colour": _words_of("red orange yellow green blue purple pink brown black white grey gray"),
    "compass": _words_of("north south east west"),
}
_CLASS_OF = {word: name for name, members in CLASSES.items() for word in members}

_VARIANTS = (
    (re.compile(r"ae"), "e"),  # paediatric, anaesthetic
    (re.compile(r"(?<=\w{3})our(?=(?:s|ed|ing|ite|ites|able)?$)"), "or"),  # colour, favourite
    (re.compile(r"(?<=\w{3})is(?=(?:e|ed|es|ing|ation|ations)$)"), "iz"),  # organise
    (re.compile(r"(?<=[aeiou])ll(?=(?:ed|ing|er|ers|ery)$)"), "l"),  # travelled, jewellery
    (re.compile(r"(?<=\w{2})tre$"), "ter"),  # centre, theatre
    (re.compile(r"^grey$"), "gray"),
)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_STEMMER = snowballstemmer.stemmer("porter")


def _spelling(word: str) -> str:
    """British spellings read as American ones, on both sides of a comparison."""
    for pattern, replacement in _VARIANTS:
        word = pattern.sub(replacement, word)
    return word


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """The form two words are compared in (see the module doc); `word` is casefolded."""
    if word in _NUMBERS:
        return _NUMBERS[word]
    if word in _ORDINALS:
        return _ORDINALS[word]
    word = _MONTH_ABBREVIATIONS.get(word, word)
    if m := _ORDINAL_DIGITS.fullmatch(word) or _PLURAL_NUMBER.fullmatch(word):
        return m.group(1) + ("th" if word[-2:] in ("st", "nd", "rd", "th") else "")
    return str(_STEMMER.stemWord(_spelling(word)))


def closed_class(word: str) -> tuple[str, str] | None:
    """(class, value) of a casefolded word of a closed class (module doc), else None."""
    key = stem(word)
    if key.isdigit() and len(key) <= 2:
        return "number", key
    if key.endswith("th") and key[:-2].isdigit():
        return "ordinal", key
    word = _MONTH_ABBREVIATIONS.get(word, word)
    bare = word[:-1] if word.endswith("s") and word[:-1] in _CLASS_OF else word
    if bare in _CLASS_OF:
        return _CLASS_OF[bare], _spelling(bare)
    return None


@lru_cache(maxsize=8192)
def generic(word: str) -> bool:
    """Whether a casefolded content word is generic (module doc)."""
    return closed_class(word) is None and zipf_frequency(word, "en") >= GENERIC_ZIPF


def words(text: str) -> list[tuple[str, int, int]]:
    """(casefolded word, start, end) for every word of `text`."""
    return [(m.group(0).casefold(), m.start(), m.end()) for m in _WORD.finditer(text)]


class Said(NamedTuple):
    """One content word of a text, in order."""

    stem: str
    negated: bool
    word: str  # casefolded
    start: int
    clause: int
    name: bool  # capitalised, and not first in its sentence unless a name follows


_NEGATOR = re.compile(r"\b(?:not|never|no longer|neither|nor|no|nothing|none)\b|n't\b")
# After a cue: an interjection ("No, ...") or a hedge ("not sure") negates nothing.
_NOT_NEGATING = re.compile(r"\s*[,.!?;:]|\s+(?:\w+\s+){0,2}?(?:sure|certain|mistaken)\b")


def _negator(word: str) -> bool:
    return word in NO_WORDS or word in ("neither", "nor", "nothing", "none") or word.endswith("n't")


def _function_word(word: str) -> bool:
    """Not content: a stop word (also contracted: ``he's``, ``i'm``), a negation cue or a
    hedge."""
    return (
        word in STOP_WORDS or word.split("'")[0] in STOP_WORDS or _negator(word) or word in HEDGES
    )


def read(text: str) -> list[Said]:
    """Every content word `text` states, in order (module doc)."""
    said: list[Said] = []
    clause_index = 0
    for sentence_start, sentence_end in sentence_bounds(text):
        sentence = text[sentence_start:sentence_end]
        if sentence.rstrip().endswith("?"):
            continue
        first = True
        for start, end in clause_bounds(sentence):
            clause = sentence[start:end]
            cues = [
                m.end()
                for m in _NEGATOR.finditer(clause.casefold())
                if not _NOT_NEGATING.match(clause, m.end())
            ]
            found = words(clause)
            for i, (word, position, end) in enumerate(found):
                # A capital starts a name after a sentence's first word, and at its
                # start when the next word has one too ("Matt Patterson performed").
                follows = i + 1 < len(found) and clause[found[i + 1][1]].isupper()
                name = clause[position].isupper() and (not first or follows)
                first = False
                # An acronym is content even when it spells a stop word ("IT", "US").
                acronym = len(word) > 1 and clause[position:end].isupper()
                if _function_word(word) and not acronym:
                    continue
                negated = any(cue <= position for cue in cues)
                at = sentence_start + start + position
                said.append(Said(stem(word), negated, word, at, clause_index, name))
            clause_index += 1
    return said


def stated(said: list[Said]) -> set[tuple[str, bool]]:
    """(stem, negated) for every word of `said`."""
    return {(word.stem, word.negated) for word in said}


def held(word: tuple[str, bool], answer: set[tuple[str, bool]]) -> bool:
    """Whether the answer states a gold word: the same stem and negation, or a stem of at
    least four letters that begins the other (``trans`` for ``transgender``)."""
    if word in answer:
        return True
    key, negated = word
    return any(
        flag == negated
        and min(len(key), len(other)) >= 4
        and (key.startswith(other) or other.startswith(key))
        for other, flag in answer
    )


class Slot(NamedTuple):
    """What the answer says in a gold word's place: ``unknown`` when it holds neither
    neighbour of the word, ``empty`` when a held neighbour has no other content word
    beside it, ``filled`` with the answer's `word` there (beside the gold's neighbour
    `beside`) otherwise."""

    kind: Literal["unknown", "empty", "filled"]
    word: Said | None
    beside: Said | None


def slot(gold: list[Said], index: int, answer: list[Said], gold_stems: set[str]) -> Slot:
    """The place in `answer` of the gold word `gold[index]` (see `Slot`). A word of the
    answer that is a gold word (`gold_stems`) fills no place."""

    def is_gold(word: Said) -> bool:
        return held((word.stem, False), {(s, False) for s in gold_stems})

    found = False
    for side in (-1, 1):
        position = index + side
        if not 0 <= position < len(gold):
            continue
        neighbour = (gold[position].stem, gold[position].negated)
        for j, word in enumerate(answer):
            if not held(neighbour, {(word.stem, word.negated)}):
                continue
            found = True
            k = j - side  # the gold word sits on the other side of its neighbour
            other = answer[k] if 0 <= k < len(answer) else None
            if other is not None and other.clause == word.clause and not is_gold(other):
                return Slot("filled", other, gold[position])
    return Slot("empty" if found else "unknown", None, None)
