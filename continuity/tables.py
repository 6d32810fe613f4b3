"""Aligned plain-text tables for the terminal (`doit arms`, `doit runs`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["text_table"]


def text_table(rows: Sequence[Mapping[str, str]], columns: Sequence[str]) -> str:
    """`rows` as columns padded to their widest cell, a header line first; trailing
    spaces trimmed. Empty when there are no rows."""
    if not rows:
        return ""
    widths = {c: max(len(c), *(len(row[c]) for row in rows)) for c in columns}
    lines = [list(columns), *([row[c] for c in columns] for row in rows)]
    return "\n".join(
        "  ".join(cell.ljust(widths[c]) for c, cell in zip(columns, line, strict=True)).rstrip()
        for line in lines
    )
