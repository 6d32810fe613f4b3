"""Aligned plain-text tables for the terminal (`doit arms`, `doit runs`)."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping, Sequence

__all__ = ["terminal_width", "text_table"]

# A pipe or a file has no width: tables written there fit this many columns.
_DEFAULT_WIDTH = 100


def terminal_width() -> int:
    """The terminal's width in columns (``$COLUMNS`` wins), else 100."""
    return shutil.get_terminal_size((_DEFAULT_WIDTH, 24)).columns


def text_table(
    rows: Sequence[Mapping[str, str]], columns: Sequence[str], width: int | None = None
) -> str:
    """`rows` as columns padded to their widest cell, a header line first; trailing
    spaces trimmed. Empty when there are no rows.

    With `width`, a table wider than that is printed as one block per row instead: the
    first column's value, then ``column: value`` lines, values wrapped to `width`."""
    if not rows:
        return ""
    widths = {c: max(len(c), *(len(row[c]) for row in rows)) for c in columns}
    if width is not None and sum(widths.values()) + 2 * (len(columns) - 1) > width:
        return _blocks(rows, columns, width)
    lines = [list(columns), *([row[c] for c in columns] for row in rows)]
    return "\n".join(
        "  ".join(cell.ljust(widths[c]) for c, cell in zip(columns, line, strict=True)).rstrip()
        for line in lines
    )


def _blocks(rows: Sequence[Mapping[str, str]], columns: Sequence[str], width: int) -> str:
    first, rest = columns[0], columns[1:]
    label = max(len(c) for c in rest) + 2  # "name: " padded
    blocks = []
    for row in rows:
        lines = [row[first]]
        for column in rest:
            head = f"  {column + ':':<{label}}"
            body = textwrap.wrap(row[column], max(20, width - len(head)), break_on_hyphens=False)
            body = body or [""]
            lines.append(head + body[0])
            lines += [" " * len(head) + more for more in body[1:]]
        blocks.append("\n".join(line.rstrip() for line in lines))
    return "\n\n".join(blocks)
