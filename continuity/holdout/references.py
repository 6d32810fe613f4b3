"""The project's own references: every text a holdout must not share with this project.

A holdout is independent of what this project was built and tuned on only if nothing it
asks or expects appears there. The references (`project_references`), each a name and
its texts (a locator and a string; texts are compared one by one, never across):

- ``original/<file>``: every JSON string of each original-suite trace
  (``fixtures/original/*.json``), located by JSON path;
- ``hard/<trace id>`` and ``hard-distractors/<trace id>``: the generated suites for
  seeds 101-108 (`REFERENCE_SEEDS`), generated in memory, by JSON path;
- ``vocabulary/<module>``: every string literal (docstrings excluded: they are never
  emitted) of the generator, ``continuity.traces.scenarios``, ``.filler`` and
  ``.distractors``, located by line;
- ``prompt/<module>``: the literals of the probe protocol, the ledger prompt, the
  compaction summary prompt's module and the pack's module, and ``prompt/<name>`` the
  assembled prompts themselves (the probe instruction, the extraction system prompt,
  the summary system prompt, the pack's retrieval guidance), so a phrase that spans
  concatenated pieces is seen too;
- ``soul/<file>``: the lookup souls (``fixtures/lookup/*.md``) by paragraph;
- ``calibration/<file>``: every JSON string of every line of the calibration suites
  (``fixtures/calibration/*.jsonl``), located by line and JSON path;
- ``scorer/<path>``: the scorer's own source, docstrings and comments included (every
  module of `continuity.probes.scorer_version.SCORER_MODULES` and the scorer's tests,
  ``tests/probes/*.py``, where the checkout has them), by paragraph: the rules were
  written with answers in view, and no holdout answer may be among them.

`References.digest` is blake3 over every reference's name and texts (not their
locators, so moving a literal to another line changes nothing): adding, removing or
changing any reference text changes it, and an overlap report made against other
references is stale.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec

from continuity.digest import value_digest
from continuity.holdout.schema import ReferenceDigest

__all__ = [
    "GENERATOR_MODULES",
    "PROMPT_MODULES",
    "REFERENCE_SEEDS",
    "Reference",
    "References",
    "Text",
    "decoded_texts",
    "json_texts",
    "module_literals",
    "project_references",
]

REFERENCE_SEEDS: tuple[int, ...] = tuple(range(101, 109))
_PACKAGE = Path(__file__).resolve().parents[1]
_FIXTURES = _PACKAGE.parent / "fixtures"
GENERATOR_MODULES: tuple[str, ...] = (
    "continuity/traces/scenarios.py",
    "continuity/traces/filler.py",
    "continuity/traces/distractors.py",
    "continuity/traces/generator",
)
PROMPT_MODULES: tuple[str, ...] = (
    "continuity/probes/protocol.py",
    "continuity/memory/ledger_prompt.py",
    "continuity/harness/compaction.py",
    "continuity/memory/pack.py",
)

Text = tuple[str, str]  # (locator, text)


@dataclass(frozen=True)
class Reference:
    name: str
    texts: tuple[Text, ...]

    @cached_property
    def digest(self) -> str:
        return value_digest(("continuity-holdout-reference", self.name, [t for _, t in self.texts]))


@dataclass(frozen=True)
class References:
    items: tuple[Reference, ...]

    @cached_property
    def digest(self) -> str:
        """blake3 over every reference's name and texts, in name order."""
        named = sorted((r.name, r.digest) for r in self.items)
        return value_digest(("continuity-holdout-references-v1", named))

    def named(self) -> tuple[ReferenceDigest, ...]:
        return tuple(
            ReferenceDigest(name=r.name, texts=len(r.texts), digest=r.digest)
            for r in sorted(self.items, key=lambda r: r.name)
        )

    def extended(self, *more: Reference) -> References:
        """These references and `more` (a test's or a user's expanded set)."""
        return References((*self.items, *more))


def json_texts(value: Any, path: str = "$") -> Iterator[Text]:
    """Every string inside a decoded JSON value (keys excluded), with its JSON path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from json_texts(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_texts(item, f"{path}[{index}]")


def decoded_texts(data: bytes, path: str) -> Iterator[Text]:
    """`json_texts` of JSON bytes; bytes that are not JSON (a fixture being rewritten, a
    malformed line) are one text, compared as they are, never skipped."""
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        yield path, data.decode("utf-8", "replace")
    else:
        yield from json_texts(value, path)


def module_literals(path: Path) -> Iterator[Text]:
    """Every string constant of a module with its line, f-string fragments one by one;
    docstrings excluded (they describe code and are never emitted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield f"line {node.lineno}", node.value


def _module_files(entries: Sequence[str]) -> Iterator[Path]:
    for entry in entries:
        path = _PACKAGE.parent / entry
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _literal_references(prefix: str, entries: Sequence[str]) -> list[Reference]:
    return [
        Reference(
            f"{prefix}/{path.relative_to(_PACKAGE.parent).as_posix()}", tuple(module_literals(path))
        )
        for path in _module_files(entries)
    ]


def _suite_references() -> list[Reference]:
    from continuity.traces import generator
    from continuity.traces.schema import encode_trace

    found = [
        Reference(f"original/{path.name}", tuple(decoded_texts(path.read_bytes(), "$")))
        for path in sorted((_FIXTURES / "original").glob("*.json"))
    ]
    for suite, distractors in (("hard", False), ("hard-distractors", True)):
        for seed in REFERENCE_SEEDS:
            trace = generator.generate_trace(seed, distractors=distractors)
            data = msgspec.json.decode(encode_trace(trace))
            found.append(Reference(f"{suite}/{trace.trace_id}", tuple(json_texts(data))))
    return found


def _assembled_prompts() -> list[Reference]:
    from continuity.harness.compaction import SUMMARY_SYSTEM
    from continuity.memory.ledger_prompt import EXTRACTION_SYSTEM
    from continuity.memory.pack import PACK_RETRIEVAL_GUIDANCE
    from continuity.probes.protocol import PROBE_INSTRUCTION

    prompts = {
        "probe-instruction": PROBE_INSTRUCTION,
        "extraction-system": EXTRACTION_SYSTEM,
        "summary-system": SUMMARY_SYSTEM,
        "pack-retrieval-guidance": PACK_RETRIEVAL_GUIDANCE,
    }
    return [Reference(f"prompt/{name}", (("$", text),)) for name, text in prompts.items()]


def _paragraphs(text: str) -> Iterator[Text]:
    start, lines = 1, list[str]()
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if line.strip():
            if not lines:
                start = number
            lines.append(line)
        elif lines:
            yield f"line {start}", "\n".join(lines)
            lines = []


def _fixture_references() -> list[Reference]:
    found = [
        Reference(f"soul/{path.name}", tuple(_paragraphs(path.read_text(encoding="utf-8"))))
        for path in sorted((_FIXTURES / "lookup").glob("*.md"))
    ]
    for path in sorted((_FIXTURES / "calibration").glob("*.jsonl")):
        texts: list[Text] = []
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            if line.strip():
                texts += decoded_texts(line, f"line {number}:$")
        found.append(Reference(f"calibration/{path.name}", tuple(texts)))
    return found


def _scorer_references() -> list[Reference]:
    from continuity.probes.scorer_version import SCORER_MODULES

    root = _PACKAGE.parent
    paths = [root / (name.replace(".", "/") + ".py") for name in SCORER_MODULES]
    paths += sorted((root / "tests" / "probes").glob("*.py"))
    return [
        Reference(
            f"scorer/{path.relative_to(root).as_posix()}",
            tuple(_paragraphs(path.read_text(encoding="utf-8"))),
        )
        for path in paths
        if path.is_file()
    ]


def project_references() -> References:
    """Every reference of this checkout (see the module doc), generated suites included."""
    return References(
        (
            *_suite_references(),
            *_literal_references("vocabulary", GENERATOR_MODULES),
            *_literal_references("prompt", PROMPT_MODULES),
            *_assembled_prompts(),
            *_fixture_references(),
            *_scorer_references(),
        )
    )
