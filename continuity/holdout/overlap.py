"""`doit holdout_overlap`: does anything a holdout asks or expects appear in this project?

A result on a holdout means something only if the project was not built or tuned on it.
What would carry the holdout into the project is what it *asks and expects*, so that is
what is checked, against every reference text (`continuity.holdout.references`):

- **values**: the expected values of every probe: free-recall answers, abstention decoys
  and never-mentioned terms, and every fact value (answers, superseded and current
  values, required and forbidden terms, subjects, keywords, secrets);
- **ids**: the family id and every session, turn, tool-call and probe id of its trace;
- **phrases**: the three-word phrases of every probe's text and of every value.

The rules (`RULES_VERSION`):

- Text becomes tokens: casefolded runs of letters and digits (``[^\\W_]+``), so matching
  is case-insensitive and whole-token (``D3:12`` is ``d3 12``; ``ORD-4821`` never matches
  inside ``ORD-48213``).
- A value is compared only when it is **distinctive**: it holds a rare token, and
  at least four letters and digits in all (`MIN_DISTINCTIVE_CHARS`). A token is rare when
  it mixes letters and digits (``D3``, ``TN2J4LH``), or when its `wordfreq` Zipf frequency
  in English is below 3.0 (`RARE_ZIPF`, roughly one in a million words). A number is a
  word like any other here: `wordfreq` knows how often numbers occur, so a year such as
  ``2022``, a count, a day of the month or a round amount is common and ``4821`` is rare.
  A common word or number is in any text of the references' size by chance (a model's
  reply that mentions a year is enough), and finding it there says nothing about where
  the holdout came from. (Rules v1 took any token with a digit as rare; it reported a
  real model's reply holding ``2019`` as a copy of LoCoMo's answer ``2019``.) An id is
  distinctive with a digit or a rare word and four letters and digits: it is matched only
  as the same whole id, so ``toy-north-1`` is specific where the value ``1`` is not.
- A value or id **overlaps** a reference text that holds all of its tokens, in order and
  adjacent.
- A **phrase** is three adjacent content words: stopwords (`STOPWORDS`: the function
  words of the ledger prompt's independence check together with NLTK's English list)
  are dropped first, then every run of three is a phrase. A phrase overlaps a reference
  text that has the same phrase, computed the same way.

The conversation itself (turn texts, tool outputs) is not compared: it is what the reader
reads, it shares ordinary phrases with any dialogue, and no result depends on the
project knowing it in advance; questions and answers are what a tuned project would have
copied. The check is one-directional: the references' own values are not looked for in
the holdout. It cannot prove conceptual independence; it proves that no distinctive value,
id or three-word phrase of the holdout was copied into the suites, the generator, the
prompts or the calibration data.

The report (``overlap.json``, schema ``continuity-holdout-overlap-v1``, and
``overlap.md``) is content-free: each overlap names its kind, the family, the item's JSON
path in the trace, the sha256 of the matched tokens and the reference (name and where
the first hit is); no holdout or conversation text is written. It binds the manifest and
spec sha256, the references digest and the rules digest; either digest differing from
the current one makes the report stale (``holdout_overlap_stale``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
from wordfreq import zipf_frequency

from continuity.digest import code_digest, value_digest
from continuity.errors import HoldoutError
from continuity.holdout.references import References
from continuity.holdout.schema import (
    OVERLAP_SCHEMA,
    Overlap,
    OverlapCounts,
    OverlapKind,
    OverlapReport,
    encode_json,
)
from continuity.holdout.source import read_bounded
from continuity.holdout.tokens import STOPWORDS, id_key, id_tokens, tokens, trigrams
from continuity.holdout.validate import ValidatedSource
from continuity.outputs import write_output
from continuity.traces.schema import Fact, Trace

__all__ = [
    "MIN_DISTINCTIVE_CHARS",
    "RARE_ZIPF",
    "REPORT_MAX_BYTES",
    "RULES_CODE",
    "RULES_VERSION",
    "STOPWORDS",
    "Item",
    "check_overlap",
    "distinctive",
    "holdout_items",
    "read_report",
    "render_markdown",
    "rules_digest",
    "write_report",
]

RULES_VERSION = "holdout-overlap-rules-v2"
RULES_CODE = (
    "continuity.holdout.overlap",
    "continuity.holdout.references",
    "continuity.holdout.tokens",
)
RARE_ZIPF = 3.0
# A report lists each overlap once per reference; far more than any real source needs.
REPORT_MAX_BYTES = 256 * 1024 * 1024
MIN_DISTINCTIVE_CHARS = 4
# The expectation fields that hold expected values as plain strings (facts hold theirs
# in `Fact.value`); a status or a mode is a label from a fixed list, not a value.
_VALUE_FIELDS = frozenset({"answer", "never_mentioned", "decoys"})


def rules_digest() -> str:
    """The digest of the overlap rules: their code and the word-frequency data."""
    return value_digest(
        (RULES_VERSION, code_digest(RULES_CODE), importlib.metadata.version("wordfreq"))
    )


@functools.lru_cache(maxsize=65536)
def _rare(word: str) -> bool:
    return zipf_frequency(word, "en") < RARE_ZIPF


def _rare_token(word: str) -> bool:
    has_digit = any(c.isdigit() for c in word)
    if has_digit and not word.isdigit():
        return True  # letters and digits together: a code, never an English word
    return (word.isalpha() or has_digit) and _rare(word)


def distinctive(words: tuple[str, ...], *, ident: bool = False) -> bool:
    """Whether a value's (or, with `ident`, an id's) tokens are distinctive enough to
    compare. An id is only ever matched as the same whole id, never inside prose, so any
    digit makes one distinctive (``toy-north-1``); a value is matched inside any text."""
    if sum(len(w) for w in words) < MIN_DISTINCTIVE_CHARS:
        return False
    if ident and any(c.isdigit() for w in words for c in w):
        return True
    return any(_rare_token(w) for w in words)


@dataclass(frozen=True)
class Item:
    """One holdout value, id or phrase source, with where it sits in its trace."""

    kind: OverlapKind
    family_id: str
    location: str
    text: str


def _expectation_values(expectation: object, path: str) -> Iterator[tuple[str, str]]:
    for name in expectation.__struct_fields__:  # type: ignore[attr-defined]
        value = getattr(expectation, name)
        at = f"{path}.{name}"
        if isinstance(value, Fact):
            yield f"{at}.value", value.value
        elif isinstance(value, str) and name in _VALUE_FIELDS:
            yield at, value
        elif isinstance(value, tuple):
            for index, item in enumerate(value):
                if isinstance(item, Fact):
                    yield f"{at}[{index}].value", item.value
                elif isinstance(item, str) and name in _VALUE_FIELDS:
                    yield f"{at}[{index}]", item


def _ids(trace: Trace) -> Iterator[tuple[str, str]]:
    yield "$.trace_id", trace.trace_id
    for s, session in enumerate(trace.sessions):
        yield f"$.sessions[{s}].session_id", session.session_id
        for t, turn in enumerate(session.turns):
            at = f"$.sessions[{s}].turns[{t}]"
            yield f"{at}.turn_id", turn.turn_id
            for c, call in enumerate(getattr(turn, "tool_calls", ())):
                yield f"{at}.tool_calls[{c}].call_id", call.call_id
    for p, probe in enumerate(trace.probes):
        yield f"$.probes[{p}].probe_id", probe.probe_id


def holdout_items(trace: Trace) -> Iterator[Item]:
    """Every value and id of a trace (phrases come from values and probe texts)."""
    family = trace.trace_id
    for location, text in _ids(trace):
        yield Item("id", family, location, text)
    for p, probe in enumerate(trace.probes):
        yield Item("phrase", family, f"$.probes[{p}].text", probe.text)
        for location, text in _expectation_values(probe.expectation, f"$.probes[{p}].expectation"):
            yield Item("value", family, location, text)


@dataclass
class _Hit:
    hits: int
    first: str


class _Index:
    """The holdout's distinctive values (token sequences anchored on their rarest token),
    its distinctive ids and its phrases, to be found in one pass over every reference."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.sequences: list[tuple[int, tuple[str, ...]]] = []
        self.anchors: dict[str, list[tuple[int, int]]] = {}
        self.ids: dict[str, list[int]] = {}
        self.phrases: dict[tuple[str, str, str], list[int]] = {}
        self.counts: Counter[str] = Counter()
        for number, item in enumerate(items):
            words = tokens(item.text)
            if item.kind == "id":
                self.counts["ids"] += 1
                key = id_key(item.text)
                if key is not None and distinctive(words, ident=True):
                    self.counts["distinctive_ids"] += 1
                    self.ids.setdefault(key, []).append(number)
                continue
            if item.kind == "value":
                self.counts["values"] += 1
                if words and distinctive(words):
                    self.counts["distinctive_values"] += 1
                    self._anchor(number, words)
            for gram in trigrams(words):
                self.phrases.setdefault(gram, []).append(number)

    def _anchor(self, number: int, words: tuple[str, ...]) -> None:
        offset = min(
            range(len(words)), key=lambda i: (zipf_frequency(words[i], "en"), -len(words[i]))
        )
        self.sequences.append((number, words))
        self.anchors.setdefault(words[offset], []).append((len(self.sequences) - 1, offset))

    def scan(self, text: str, found: dict[tuple[int, str], _Hit], where: str) -> int:
        """Record every value, id and phrase of this index that `text` holds (keyed by
        item and ``"seq"``, or item and phrase); return the text's token count."""
        words = tokens(text)
        for position, word in enumerate(words):
            for sequence, offset in self.anchors.get(word, ()):
                number, wanted = self.sequences[sequence]
                start = position - offset
                if start >= 0 and words[start : start + len(wanted)] == wanted:
                    _count(found, (number, "seq"), where)
        if self.ids:
            for identifier in id_tokens(text):
                for number in self.ids.get(identifier, ()):
                    _count(found, (number, "seq"), where)
        for gram in trigrams(words):
            for number in self.phrases.get(gram, ()):
                _count(found, (number, " ".join(gram)), where)
        return len(words)


def _count(found: dict[tuple[int, str], _Hit], key: tuple[int, str], where: str) -> None:
    hit = found.get(key)
    if hit is None:
        found[key] = _Hit(1, where)
    else:
        hit.hits += 1


def check_overlap(validated: ValidatedSource, references: References) -> OverlapReport:
    """Compare every holdout item with every reference text (see the module doc)."""
    items = [item for family in validated.families for item in holdout_items(family.trace)]
    index = _Index(items)
    overlaps: list[Overlap] = []
    texts = reference_tokens = 0
    for reference in references.items:
        found: dict[tuple[int, str], _Hit] = {}
        for locator, text in reference.texts:
            texts += 1
            reference_tokens += index.scan(text, found, locator)
        overlaps += _overlaps(items, found, reference.name)
    overlaps.sort(key=lambda o: (o.kind, o.family_id, o.location, o.reference, o.term_sha256))
    kinds = Counter(o.kind for o in overlaps)
    counts = OverlapCounts(
        families=len(validated.families),
        values=index.counts["values"],
        distinctive_values=index.counts["distinctive_values"],
        ids=index.counts["ids"],
        distinctive_ids=index.counts["distinctive_ids"],
        phrases=len(index.phrases),
        references=len(references.items),
        reference_texts=texts,
        reference_tokens=reference_tokens,
        overlaps=len(overlaps),
        by_kind={kind: kinds.get(kind, 0) for kind in ("value", "id", "phrase")},
    )
    return OverlapReport(
        schema=OVERLAP_SCHEMA,
        manifest_sha256=validated.files.source.manifest_sha256,
        spec_sha256=validated.files.spec_sha256,
        references_digest=references.digest,
        rules_digest=rules_digest(),
        references=references.named(),
        counts=counts,
        overlaps=tuple(overlaps),
    )


def _overlaps(
    items: list[Item], found: dict[tuple[int, str], _Hit], reference: str
) -> list[Overlap]:
    result = []
    for (number, term), hit in found.items():
        item = items[number]
        if term != "seq":
            words: tuple[str, ...] = tuple(term.split(" "))
        elif item.kind == "id":
            words = (id_key(item.text) or item.text,)
        else:
            words = tokens(item.text)
        result.append(
            Overlap(
                kind="phrase" if term != "seq" else item.kind,
                family_id=item.family_id,
                location=item.location,
                term_sha256=hashlib.sha256(" ".join(words).encode("utf-8")).hexdigest(),
                tokens=len(words),
                reference=reference,
                reference_at=hit.first,
                hits=hit.hits,
            )
        )
    return result


def render_markdown(report: OverlapReport, source: str) -> str:
    """``overlap.md``: the counts and every overlap (content-free, like the JSON)."""
    c = report.counts
    lines = [
        f"# Holdout overlap: {source}",
        "",
        f"- manifest sha256 `{report.manifest_sha256}`, spec sha256 `{report.spec_sha256}`",
        f"- references digest `{report.references_digest}` ({c.references} references, "
        f"{c.reference_texts:,} texts, {c.reference_tokens:,} tokens)",
        f"- rules digest `{report.rules_digest}`",
        f"- compared: {c.distinctive_values} of {c.values} values and {c.distinctive_ids} of "
        f"{c.ids} ids (the distinctive ones), {c.phrases:,} phrases, {c.families} families",
        f"- overlaps: {c.overlaps} ({', '.join(f'{k} {v}' for k, v in c.by_kind.items())})",
        "",
    ]
    if not report.overlaps:
        lines.append("No overlap: the source may be frozen (`doit holdout_freeze`).")
        return "\n".join(lines) + "\n"
    lines += [
        "| kind | family | location | term sha256 | tokens | reference | at | hits |",
        "|---|---|---|---|---:|---|---|---:|",
    ]
    lines += [
        f"| {o.kind} | {o.family_id} | `{o.location}` | `{o.term_sha256[:16]}` | {o.tokens} | "
        f"{o.reference} | `{o.reference_at}` | {o.hits} |"
        for o in report.overlaps
    ]
    return "\n".join(lines) + "\n"


def write_report(report: OverlapReport, output: Path, source: str) -> Path:
    """Write ``overlap.json`` and ``overlap.md`` into `output`; return the JSON's path.

    Raises:
        HoldoutError: ``holdout_overlap_found`` after writing, when any overlap exists.
    """
    path = output / "overlap.json"
    write_output(path, encode_json(report))
    write_output(output / "overlap.md", render_markdown(report, source).encode("utf-8"))
    if report.overlaps:
        kinds = ", ".join(f"{v} {k}" for k, v in report.counts.by_kind.items() if v)
        raise HoldoutError(
            f"{len(report.overlaps)} overlaps with the project's references ({kinds}); "
            f"the report is in {path} and {output / 'overlap.md'}",
            code="holdout_overlap_found",
            location=str(path),
        )
    return path


def read_report(path: Path) -> OverlapReport:
    """An overlap report as written, decoded.

    Raises:
        HoldoutError: ``holdout_file_unreadable``, ``holdout_overlap_invalid``.
    """
    data = read_bounded(path, REPORT_MAX_BYTES, too_large="holdout_overlap_invalid")
    try:
        report = msgspec.json.decode(data, type=OverlapReport)
    except msgspec.MsgspecError as exc:
        raise HoldoutError(
            f"not an overlap report: {str(exc)[:200]}",
            code="holdout_overlap_invalid",
            location=str(path),
        ) from None
    if report.schema != OVERLAP_SCHEMA:
        raise HoldoutError(
            f"schema {report.schema[:60]!r}; want {OVERLAP_SCHEMA}",
            code="holdout_overlap_invalid",
            location=str(path),
        )
    return report
