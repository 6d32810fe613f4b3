"""The report's tables as HTML that fits a 1,280 px window.

The tables are the ones summary.md has (continuity.report.sections, as (title,
header, rows, note)); here they are laid out for a browser: a table with a ``suite``
column is shown once per suite without it, integers get thousands separators,
underscored headers may wrap at their underscores (and nowhere inside a word), tables
wider than `MAX_COLUMNS` are split into parts that repeat the row's key columns, each in
a wrapper that scrolls sideways if it is still too wide, and deltas are coloured by
direction and by whether the paired 95% interval excludes zero. The report collapses
its detail tables into closed ``<details>`` (``collapsed``).
"""

from __future__ import annotations

import html
import re

from continuity.report.charts import delta_class
from continuity.report.results import Results
from continuity.report.sections import Table

__all__ = ["DELTA_HEADERS", "MAX_COLUMNS", "grouped", "suite_table", "table_html", "wrappable"]

MAX_COLUMNS = 9
DELTA_HEADERS = ("delta vs native (pp)", "delta (pp)", "change (pp)")
_KEYS = ("suite", "arm", "category", "figure", "repeat", "trace", "probe", "unit")
_INTEGER = re.compile(r"-?\d{4,}")


def grouped(cell: str) -> str:
    """`cell` with thousands separators when it is a plain integer (7153149 ->
    7,153,149); anything else as it is."""
    return f"{int(cell):,}" if _INTEGER.fullmatch(cell) else cell


def suite_table(table: Table, suite: str) -> Table | None:
    """The rows of `suite` of a table whose first column is ``suite``, without that
    column; None when the suite has no row."""
    title, header, rows, note = table
    picked = [row[1:] for row in rows if row and row[0] == suite]
    return (title, header[1:], picked, note) if picked else None


def wrappable(text: str) -> str:
    """`text` HTML-escaped, with a line-break opportunity after each underscore."""
    # <wbr> lets a long snake_case name wrap at its underscores instead of widening.
    return html.escape(text).replace("_", "_<wbr>")


def _delta_cell(r: Results, suite: str | None, header: list[str], row: list[str], i: int) -> str:
    """The class of a delta cell: its direction and, where the row is a whole arm's
    (no category column), whether that arm's paired interval excludes zero."""
    text = row[i].replace("+", "")
    try:
        value = float(text)
    except ValueError:
        return "flat"
    arm = row[header.index("arm")] if "arm" in header else None
    paired = r.paired.get(suite or "", {}).get(arm or "") if "category" not in header else None
    if "95% bootstrap CI (pp)" in header:
        low_high = re.findall(r"-?\d+(?:\.\d+)?", row[header.index("95% bootstrap CI (pp)")])
        if len(low_high) == 2:
            return delta_class(value, float(low_high[0]), float(low_high[1]))
    if paired is not None:
        return delta_class(value, paired.ci_low, paired.ci_high)
    return delta_class(value, None, None)


def _parts(header: list[str]) -> list[list[int]]:
    """Column indices of each part of a table split to at most `MAX_COLUMNS` columns,
    each part repeating the leading key columns."""
    if len(header) <= MAX_COLUMNS:
        return [list(range(len(header)))]
    keys = 0
    while keys < len(header) - 1 and header[keys] in _KEYS:
        keys += 1
    keys = max(keys, 1)
    rest = list(range(keys, len(header)))
    size = MAX_COLUMNS - keys
    return [list(range(keys)) + rest[i : i + size] for i in range(0, len(rest), size)]


def table_html(
    r: Results, table: Table, suite: str | None = None, anchor: str = "", *, collapsed: bool = False
) -> str:
    """One table (split when wide) with its title as an ``h3`` and its note, each part
    in a wrapper that scrolls sideways rather than squeeze the table. `collapsed` puts
    it in a closed ``<details>`` whose summary is the title and the row count."""
    title, header, rows, note = table
    parts = _parts(header)
    heading = [f'<h3 id="{anchor}">' if anchor else "<h3>", html.escape(title), "</h3>"]
    out = []
    if note:
        out.append(f'<p class="n">{html.escape(note)}</p>')
    if not rows:
        out.append('<p class="n">(none)</p>')
    for number, columns in enumerate(parts if rows else [], 1):
        if len(parts) > 1:
            out.append(f'<p class="part">part {number} of {len(parts)}</p>')
        out.append(_part_html(r, suite, header, rows, columns))
    if not collapsed:
        return "".join(heading + out)
    count = f"{len(rows):,} row{'s' * (len(rows) != 1)}" if rows else "none"
    return (
        f'<details class="tbl"><summary>{"".join(heading)} <span class="n">({count})</span>'
        f"</summary>{''.join(out)}</details>"
    )


def _part_html(
    r: Results, suite: str | None, header: list[str], rows: list[list[str]], columns: list[int]
) -> str:
    """One part of a table (the given columns), in its scrolling wrapper."""
    head = "".join(f"<th>{wrappable(header[i])}</th>" for i in columns)
    body = []
    for row in rows:
        cells = []
        for i in columns:
            text = html.escape(grouped(row[i]))
            if header[i] in DELTA_HEADERS and row[i] not in ("-", ""):
                cells.append(f'<td class="{_delta_cell(r, suite, header, row, i)}">{text}</td>')
            else:
                cells.append(f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="tw"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
