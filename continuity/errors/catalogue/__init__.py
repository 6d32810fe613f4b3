"""The catalogue of every error code `continuity` emits, as data, and its Markdown page.

`ENTRIES` holds one `Entry` per code: the class in `continuity.errors` that carries it,
what it means, the module or doit rule that emits it, and whether it is raised or only
reported (a result, a reason, a label, an exit line). `render_markdown` turns the table
into docs/errors.md, grouped by class along the class tree; regenerate the page with
``python3 -m continuity.errors.catalogue > docs/errors.md`` (a test compares them).

Nothing imports this package at run time: `continuity.errors`, which the outside-agent
sandbox binds (`continuity.agents.sandbox.SDK_FILES`), stays free of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import continuity.errors as errors
from continuity.errors.catalogue import areas, harness, results, spend, usage
from continuity.errors.catalogue.entry import Entry, Kind

__all__ = ["ENTRIES", "Entry", "Kind", "class_tree", "main", "render_markdown"]

ENTRIES: tuple[Entry, ...] = (
    *usage.ENTRIES,
    *areas.ENTRIES,
    *spend.ENTRIES,
    *results.ENTRIES,
    *harness.ENTRIES,
)

_HEAD = """\
# Error codes

<!-- Rendered from continuity/errors/catalogue by
     python3 -m continuity.errors.catalogue > docs/errors.md
     Edit the catalogue, not this page: a test keeps the two equal. -->

Every error `continuity` raises on purpose is a `ContinuityError` (`continuity.errors`)
with a stable code and a location; `str(error)` is always
`<code>: <message> (at <location>)`. A user can grep the code.

- A class raised without a more specific code carries its *default* code.
- A code written `code:<id>` carries a suffix after a colon.
- A *reported* code is written as a result, a reason, a label, an exit line or an HTTP
  answer, never raised; a *reserved* code is emitted nowhere yet.
- `GateFailed` exits with status 3. `Interrupted` (SIGINT, SIGTERM) is a
  `KeyboardInterrupt` beside the tree, never caught as an error: it prints one line and
  exits 130 or 143 (`continuity.interrupts`).
"""


def class_tree() -> Iterator[tuple[int, type[errors.ContinuityError]]]:
    """Every class of the tree that `continuity.errors` exports, with its depth, depth
    first in the order the classes are defined."""

    def walk(
        cls: type[errors.ContinuityError], depth: int
    ) -> Iterator[tuple[int, type[errors.ContinuityError]]]:
        yield depth, cls
        for sub in cls.__subclasses__():
            if getattr(errors, sub.__name__, None) is sub:
                yield from walk(sub, depth + 1)

    return walk(errors.ContinuityError, 0)


def _anchor(name: str) -> str:
    return name.lower()


def _notes(entry: Entry, default: str) -> str:
    notes = []
    if entry.code == default:
        notes.append("default code")
    if entry.kind != "raised":
        notes.append(f"{entry.kind}, never raised")
    if entry.also:
        notes.append("also carried by " + ", ".join(f"`{a}`" for a in entry.also))
    return f" *({'; '.join(notes)})*" if notes else ""


def _section(cls: type[errors.ContinuityError], entries: Sequence[Entry]) -> list[str]:
    parent = cls.__mro__[1].__name__
    lines = [f"## `{cls.__name__}`", ""]
    if cls is not errors.ContinuityError:
        lines += [f"A `{parent}`.", ""]
    lines += ["| Code | Meaning | Emitted by |", "| --- | --- | --- |"]
    for entry in entries:
        meaning = entry.meaning + _notes(entry, cls.default_code)
        lines.append(f"| `{entry.code}{entry.suffix}` | {meaning} | `{entry.source}` |")
    return [*lines, ""]


def render_markdown(entries: Sequence[Entry] = ENTRIES) -> str:
    """docs/errors.md: the class tree, then each class's codes in catalogue order."""
    by_class: dict[str, list[Entry]] = {}
    for entry in entries:
        by_class.setdefault(entry.error, []).append(entry)
    tree = list(class_tree())
    lines = [_HEAD, "## The class tree", ""]
    for depth, cls in tree:
        count = len(by_class.get(cls.__name__, ()))
        link = f"[`{cls.__name__}`](#{_anchor(cls.__name__)})"
        lines.append(f"{'  ' * depth}- {link} ({count} code{'' if count == 1 else 's'})")
    lines.append("")
    for _depth, cls in tree:
        lines += _section(cls, by_class.get(cls.__name__, []))
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> None:
    """Write the Markdown page to stdout."""
    import sys

    sys.stdout.write(render_markdown())
