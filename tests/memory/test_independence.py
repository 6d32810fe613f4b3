"""Evaluation independence: the extraction prompt and the selection's ranking constants
share no stopword-stripped three-word phrase with any string or template the trace
generator writes (fragments split by interpolations included).

This cannot prove conceptual independence (label precision stays optimistic; see the
README's "The ledger arm"); it proves no generator wording was copied into what the
extractor is told or how sources are ranked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

GENERATOR = [
    *sorted((REPO / "continuity" / "traces" / "generator").glob("*.py")),
    REPO / "continuity" / "traces" / "scenarios.py",
    REPO / "continuity" / "traces" / "filler.py",
    REPO / "continuity" / "traces" / "distractors.py",
]
EXTRACTION = [
    REPO / "continuity" / "memory" / "ledger_prompt.py",
    REPO / "continuity" / "memory" / "ledger.py",
    REPO / "continuity" / "memory" / "upkeep_selection.py",
]
_FUNCTION_WORDS = (
    "a an and are as at be been but by can could did do does for from had has have he "
    "her his i if in into is it its me my no not of on or our she so than that the their "
    "them then there these they this those to up us was we were what when where which who "
    "will with would you your"
)
STOPWORDS = frozenset(_FUNCTION_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+")


def _literals(path: Path) -> Iterator[str]:
    """Every string constant of a module, f-string fragments one by one (docstrings
    excluded: they describe code, they are never sent)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and id(node) not in docstrings:
            yield str(node.value)  # type: ignore[attr-defined]


def _trigrams(text: str) -> set[tuple[str, str, str]]:
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
    return {(words[i], words[i + 1], words[i + 2]) for i in range(len(words) - 2)}


def _phrases(paths: list[Path]) -> dict[tuple[str, str, str], str]:
    found: dict[tuple[str, str, str], str] = {}
    for path in paths:
        for literal in _literals(path):
            for gram in _trigrams(literal):
                found.setdefault(gram, f"{path.relative_to(REPO)}: {literal[:60]!r}")
    return found


def _sent() -> dict[tuple[str, str, str], str]:
    """The extraction text as it is actually assembled and sent: the whole system
    prompt, a request's framing around a span, and a rendered ledger (so phrases that
    span concatenated pieces are scanned too)."""
    from continuity.memory.ledger import Ledger, LedgerEntry, empty_generation, next_generation
    from continuity.memory.ledger import render as render_ledger
    from continuity.memory.ledger_prompt import EXTRACTION_SYSTEM, extraction_request
    from continuity.memory.upkeep_selection import Span

    entry = LedgerEntry(id="e1", kind="commitment", text="x", status="SENT", cites=(1,))
    generation = next_generation(empty_generation(), Ledger(entries=(entry,)), "op")
    span = Span(ordinal=1, index=0, kind="tool", text="", bytes=0, digest="", short_owner=False)
    request = extraction_request(generation, [span], session_id="s", provider="p", model="m")
    texts = [EXTRACTION_SYSTEM, render_ledger(generation)]
    texts += [getattr(m, "text", "") for m in request.messages]
    return {gram: "sent: " + text[:60] for text in texts for gram in _trigrams(text)}


def _shared(
    generator: dict[tuple[str, str, str], str], extraction: dict[tuple[str, str, str], str]
) -> list[tuple[str, str, str]]:
    return sorted(set(generator) & set(extraction))


def test_the_extraction_prompt_shares_no_phrase_with_the_generator() -> None:
    generator = _phrases(GENERATOR)
    extraction = {**_phrases(EXTRACTION), **_sent()}
    assert len(generator) > 500 and len(extraction) > 50  # the scan reads real text
    shared = _shared(generator, extraction)
    assert shared == [], [(gram, generator[gram], extraction[gram]) for gram in shared[:5]]


def test_the_check_catches_a_planted_phrase() -> None:
    """A prompt that copied a generator phrase (with other stopwords around it) is
    caught, wherever in the prompt it sits."""
    from continuity.memory.ledger_prompt import EXTRACTION_SYSTEM

    generator = _phrases(GENERATOR)
    copied = sorted(generator)[len(generator) // 2]
    planted = EXTRACTION_SYSTEM + " and the " + " of the ".join(copied) + "."
    found = {gram: "planted" for gram in _trigrams(planted)}
    assert copied in _shared(generator, found)
