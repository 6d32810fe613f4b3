"""LoCoMo's own token-F1, reported beside the project's free-recall outcome.

This follows LoCoMo's evaluation (``task_eval/evaluation.py`` of snap-research/locomo)
so a number here can be set beside published ones:

- normalising: lowercase, punctuation removed (commas first), the words ``a``, ``an``,
  ``the`` and ``and`` removed, whitespace collapsed;
- each token Porter-stemmed (snowballstemmer's original Porter algorithm; NLTK's
  default mode adds a few extensions, so a rare stem may differ);
- F1 of the multiset overlap between answer and gold tokens;
- by LoCoMo category: 1 (multi-hop) splits both sides on commas and averages, over gold
  parts, the best F1 against any answer part; 3 keeps the gold's first ``;`` alternative;
  2 and 4 compare whole. Category 5 (unanswerable) has no F1 here: it is scored as an
  abstention.

It is a second number, never the outcome: token overlap rewards an answer that repeats
the question's words and punishes a correct paraphrase.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache

import snowballstemmer

__all__ = ["locomo_f1", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_STEMMER = snowballstemmer.stemmer("porter")


def _normalise(text: str) -> str:
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def _tokens(text: str) -> list[str]:
    return [_stem(w) for w in _normalise(text).split()]


def token_f1(answer: str, gold: str) -> float:
    """The F1 of the stemmed token overlap of `answer` and `gold` (0.0 when none)."""
    predicted, expected = _tokens(answer), _tokens(gold)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if not same:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(answer: str, gold: str, category: int) -> float:
    """LoCoMo's F1 for a question of `category` (1-4).

    Raises:
        ValueError: for category 5 or any other, which has no token-F1.
    """
    if category == 1:
        answers = [part.strip() for part in answer.split(",")]
        golds = [part.strip() for part in gold.split(",")]
        return sum(max(token_f1(a, g) for a in answers) for g in golds) / len(golds)
    if category == 3:
        return token_f1(answer, gold.split(";")[0].strip())
    if category in (2, 4):
        return token_f1(answer, gold)
    raise ValueError(f"LoCoMo category {category} has no token-F1")
