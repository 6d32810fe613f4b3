"""Tokens and three-word phrases, as the overlap check compares them.

A token is a casefolded run of letters and digits (``[^\\W_]+``); an id is compared whole
(`id_tokens`: a run of the id alphabet, so ``D1:10`` is not ``d1-10``). A phrase is three
adjacent content words: the tokens left once `STOPWORDS` are dropped. The stopwords are
the function words of the ledger prompt's evaluation-independence check
(``tests/memory/test_independence.py``) together with NLTK's English stopword list
(which splits contractions the way the tokenizer does: ``don``, ``t``, ``s``), fixed
here so the rule does not move with any installed package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["STOPWORDS", "Trigram", "id_key", "id_tokens", "tokens", "trigrams"]

_INDEPENDENCE_CHECK = (
    "a an and are as at be been but by can could did do does for from had has have he "
    "her his i if in into is it its me my no not of on or our she so than that the their "
    "them then there these they this those to up us was we were what when where which who "
    "will with would you your"
)
_NLTK_ENGLISH = (
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours "
    "yourself yourselves he him his himself she she's her hers herself it it's its itself "
    "they them their theirs themselves what which who whom this that that'll these those "
    "am is are was were be been being have has had having do does did doing a an the and "
    "but if or because as until while of at by for with about against between into "
    "through during before after above below to from up down in out on off over under "
    "again further then once here there when where why how all any both each few more "
    "most other some such no nor not only own same so than too very s t can will just don "
    "don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn "
    "didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn "
    "mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren "
    "weren't won won't wouldn wouldn't"
)
_TOKEN = re.compile(r"[^\W_]+")
# An id is a run of the trace schema's id alphabet (`ID_PATTERN`), ending in a letter or
# digit: "D1:10" and "d1-10" are two ids, and a sentence's full stop is not part of one.
_ID = re.compile(r"[a-z0-9](?:[a-z0-9._:-]*[a-z0-9])?")
STOPWORDS: frozenset[str] = frozenset(
    word
    for text in (_INDEPENDENCE_CHECK, _NLTK_ENGLISH)
    for entry in text.split()
    for word in _TOKEN.findall(entry)
)

Trigram = tuple[str, str, str]


def tokens(text: str) -> tuple[str, ...]:
    """The casefolded letter-and-digit runs of `text`, in order."""
    return tuple(_TOKEN.findall(text.casefold()))


def id_tokens(text: str) -> list[str]:
    """The casefolded ids in `text`: maximal runs of letters, digits and ``._:-`` that
    start and end with a letter or digit."""
    return _ID.findall(text.casefold())


def id_key(identifier: str) -> str | None:
    """`identifier` as `id_tokens` finds it in a text, or None when it is not one id."""
    found = id_tokens(identifier)
    return found[0] if len(found) == 1 and found[0] == identifier.casefold().strip("._:-") else None


def trigrams(words: tuple[str, ...] | list[str]) -> Iterator[Trigram]:
    """Every three adjacent content words of `words` (stopwords dropped first)."""
    content = [word for word in words if word not in STOPWORDS]
    for index in range(len(content) - 2):
        yield content[index], content[index + 1], content[index + 2]
