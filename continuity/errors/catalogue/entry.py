"""One catalogue entry per error code, and the shorthand the entry modules write it in."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Entry", "Kind", "Row", "section"]

# raised: an error of its class carries it. reported: written as a result, a reason, a
# label, an exit line or an HTTP answer, never raised. reserved: emitted nowhere yet.
Kind = Literal["raised", "reported", "reserved"]


class Entry(msgspec.Struct, frozen=True):
    """One stable code: the class in `continuity.errors` that carries it, what it means
    (one line, present tense) and the module or doit rule that emits it."""

    code: str
    error: str
    meaning: str
    source: str
    kind: Kind = "raised"
    suffix: str = ""  # what follows the code after a colon, e.g. ":<id>"
    also: tuple[str, ...] = ()  # other classes that carry the same code


class Row(msgspec.Struct, frozen=True):
    """An entry without its class and source, which its `section` gives."""

    code: str
    meaning: str
    kind: Kind = "raised"
    suffix: str = ""
    also: tuple[str, ...] = ()


def section(error: str, source: str, *rows: Row) -> tuple[Entry, ...]:
    """The entries of `rows`, each carried by `error` and emitted by `source`."""
    return tuple(
        Entry(r.code, error, r.meaning, source, kind=r.kind, suffix=r.suffix, also=r.also)
        for r in rows
    )
