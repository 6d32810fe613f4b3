"""Render results as Markdown (summary.md) and a static, self-contained HTML report.

The HTML has no scripts, no network references and no telemetry: tables and inline SVG
charts only, so it opens offline from a file.
"""

from __future__ import annotations

import html
from typing import Any

from continuity.report.lookup_render import lookup_sections
from continuity.report.results import Results
from continuity.report.scorer_render import scorer_line, scorer_tables
from continuity.report.sections import (
    Table,
    accuracy_tables,
    flip_table,
    judge_tables,
    paired_table,
    pressure_table,
    sample_count_tables,
    spend_table,
    tool_use_tables,
)

__all__ = [
    "OFFLINE_NOTE",
    "REAL_NOTE",
    "protocol_line",
    "render_html",
    "render_markdown",
    "run_note",
    "tables",
]

OFFLINE_NOTE = (
    "Offline runs use scripted readers: these numbers show that every arm crossed "
    "its boundary and that scoring and accounting ran. They say nothing about "
    "model quality."
)
REAL_NOTE = (
    "Real run: answers came from the plan's model endpoint (every call is in the spend "
    "table). Accuracy describes that model on these fictional traces; with few traces "
    "and repeats, read the intervals, not just the means."
)


def run_note(r: Results) -> str:
    """The report's caveat: offline (scripted readers) or real (model calls made)."""
    real = any(cell.model_calls for cell in r.spend.values())
    return REAL_NOTE if real else OFFLINE_NOTE


def tables(r: Results) -> list[Table]:
    """(title, header, rows, note) for every table, shared by both renderings."""
    out: list[Table] = [
        *accuracy_tables(r),
        *sample_count_tables(r),
        pressure_table(r),
        flip_table(r),
        *tool_use_tables(r),
        *paired_table(r),
        *scorer_tables(r),
        spend_table(r),
        *judge_tables(r),
    ]
    if r.lookup:
        out += lookup_sections(r.lookup)
    return out


def protocol_line(r: Results) -> str:
    """The header line naming the probe protocol, and saying plainly when the run's
    results are not comparable with runs under the current protocol."""
    line = f"Probe protocol: {', '.join(r.probe_protocols)}."
    return f"{line} {r.protocol_note}" if r.protocol_note else line


def _md_cell(text: str) -> str:
    """A Markdown table cell: a pipe would end the cell, a newline the row."""
    return " ".join(text.split()).replace("|", "\\|")


def render_markdown(r: Results) -> str:
    lines = [
        f"# Results: {r.run}",
        "",
        f"{r.units} units; arms: {', '.join(r.arms)}; suites: {', '.join(r.suites)}; "
        f"repeats: {', '.join(map(str, r.repeats))}.",
        "",
        protocol_line(r),
        "",
        scorer_line(r),
        "",
        f"> {run_note(r)}",
        "",
    ]
    for title, header, rows, note in tables(r):
        lines += [f"## {title}", ""]
        if note:
            lines += [note, ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def _chart_rows(r: Results) -> list[tuple[str, str, str]]:
    """(label, suite, arm) of every suite and arm that has samples."""
    return [
        (f"{arm} ({suite})" if len(r.suites) > 1 else arm, suite, arm)
        for suite in r.suites
        for arm in r.arms
        if arm in r.accuracy.get(suite, {})
    ]


def _bar_chart(r: Results) -> str:
    width, bar, gap, left = 640, 22, 8, 250
    rows = _chart_rows(r)
    height = len(rows) * (bar + gap) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="Accuracy per suite and arm">'
    ]
    for index, (label, suite, arm) in enumerate(rows):
        value = r.accuracy[suite][arm]["overall"].mean or 0.0
        y = 10 + index * (bar + gap)
        length = (width - left - 60) * value
        parts.append(
            f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{html.escape(label)}</text>'
        )
        parts.append(
            f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar}" fill="#4a78b0"/>'
        )
        parts.append(f'<text x="{left + length + 6:.1f}" y="{y + 16}">{100 * value:.1f}%</text>')
    parts.append("</svg>")
    return "".join(parts)


def _availability_chart(r: Results) -> str:
    width, bar, gap, left = 640, 22, 8, 250
    colours = {"in_context": "#3b8d5a", "retrievable": "#d9a23b", "absent": "#b94a48"}
    rows = _chart_rows(r)
    height = len(rows) * (bar + gap) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="Availability per suite and arm">'
    ]
    for index, (label, suite, arm) in enumerate(rows):
        counts = r.availability[suite][arm]
        total = sum(counts[k] for k in colours) or 1
        y = 10 + index * (bar + gap)
        x = float(left)
        parts.append(
            f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{html.escape(label)}</text>'
        )
        for name, colour in colours.items():
            length = (width - left - 20) * counts[name] / total
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{length:.1f}" height="{bar}" '
                f'fill="{colour}"><title>{name}: {counts[name]}</title></rect>'
            )
            x += length
    legend_y = height - 10
    x = left
    for name, colour in colours.items():
        parts.append(
            f'<rect x="{x}" y="{legend_y - 10}" width="10" height="10" '
            f'fill="{colour}"/><text x="{x + 14}" y="{legend_y}">{name}</text>'
        )
        x += 120
    parts.append("</svg>")
    return "".join(parts)


def render_html(r: Results) -> str:
    sections = []
    for title, header, rows, note in tables(r):
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        caption = f"<p>{html.escape(note)}</p>" if note else ""
        sections.append(
            f"<h2>{html.escape(title)}</h2>{caption}<table><thead><tr>{head}"
            f"</tr></thead><tbody>{body}</tbody></table>"
        )
    style = (
        "body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem;color:#222}"
        "table{border-collapse:collapse;margin:0.5rem 0 1.5rem}"
        "td,th{border:1px solid #ccc;padding:0.25rem 0.5rem;text-align:right}"
        "td:first-child,th:first-child{text-align:left}"
        "svg text{font-size:12px;font-family:system-ui,sans-serif}"
        ".note{background:#fff8e1;padding:0.5rem 1rem}"
    )
    meta: dict[str, Any] = {
        "units": r.units,
        "arms": ", ".join(r.arms),
        "suites": ", ".join(r.suites),
        "repeats": ", ".join(map(str, r.repeats)),
    }
    summary = " &middot; ".join(f"{k}: {html.escape(str(v))}" for k, v in meta.items())
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>continuity results: {html.escape(r.run)}</title><style>{style}</style>"
        f"</head><body><h1>continuity results: {html.escape(r.run)}</h1><p>{summary}</p>"
        f"<p>{html.escape(protocol_line(r))}</p>"
        f"<p>{html.escape(scorer_line(r))}</p>"
        f'<p class="note">{html.escape(run_note(r))}</p>'
        f"<h2>Overall accuracy</h2>{_bar_chart(r)}"
        f"<h2>Where the facts were after the boundary</h2>{_availability_chart(r)}"
        + "".join(sections)
        + "</body></html>\n"
    )
