"""Render a `Comparison` as Markdown (``compare.md``) and static HTML (``compare.html``).

The HTML has no scripts and no network references: tables with a fixed layout that fit
a 1,280 px viewport, each delta coloured by its direction (red down, green up) and
strongly when it is significant (`continuity.report.compare_results.SIGNIFICANCE`).
Rendering only reads the comparison.
"""

from __future__ import annotations

import html

from continuity.report.compare_results import Comparison, Delta, Flip, RegressedProbe, RunSide
from continuity.report.html_tables import wrappable

__all__ = ["render_compare_html", "render_compare_markdown"]

_ANSWER_CHARS = 120  # answers are cut in the tables; compare.json keeps them whole
_Row = list[str]
# (heading, header, rows, each with the delta that colours it, if any)
_Section = tuple[str, _Row, list[tuple[_Row, Delta | None]]]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _pp(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _interval(delta: Delta) -> str:
    if delta.ci_low is None or delta.ci_high is None:
        return "-"
    return f"[{delta.ci_low:+.1f}, {delta.ci_high:+.1f}]"


def _p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else "<0.001"


def _verdict(delta: Delta) -> str:
    if not delta.delta_pp:
        return "no change"
    direction = "drop" if delta.delta_pp < 0 else "gain"
    return f"significant {direction}" if delta.significant else f"{direction}, not significant"


def _cells(delta: Delta) -> _Row:
    return [
        f"{delta.pairs:,}",
        _pct(delta.base_accuracy),
        _pct(delta.head_accuracy),
        _pp(delta.delta_pp),
        f"{delta.base_only:,}",
        f"{delta.head_only:,}",
        _p(delta.mcnemar_p),
        _interval(delta),
        _verdict(delta),
    ]


_DELTA_HEADER = [
    "pairs",
    "base",
    "head",
    "Δ pp",
    "correct → wrong",
    "wrong → correct",
    "McNemar p",
    "95% interval",
    "verdict",
]


_SAMPLE_HEADER = ["suite", "arm", "trace", "probe", "category"]


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _ANSWER_CHARS else flat[: _ANSWER_CHARS - 1] + "…"


def _flip_row(flip: Flip) -> _Row:
    return [
        flip.suite,
        flip.arm,
        flip.trace_id,
        flip.probe_id,
        flip.category,
        str(flip.repeat),
        flip.direction,
        _cut(flip.base_answer),
        _cut(flip.head_answer),
    ]


def _probe_row(probe: RegressedProbe) -> _Row:
    return [
        probe.suite,
        probe.arm,
        probe.trace_id,
        probe.probe_id,
        probe.category,
        f"{probe.base_correct}/{probe.repeats}",
        f"{probe.head_correct}/{probe.repeats}",
    ]


def _sections(c: Comparison) -> list[_Section]:
    """Every table of the comparison, in page order."""
    overall: list[tuple[_Row, Delta | None]] = []
    categories: list[tuple[_Row, Delta | None]] = []
    for suite in c.suites:
        for arm, cell in c.deltas[suite].items():
            overall.append(([suite, arm, *_cells(cell.overall)], cell.overall))
            categories.extend(
                ([suite, arm, name, *_cells(delta)], delta)
                for name, delta in cell.by_category.items()
            )
    flips: list[tuple[_Row, Delta | None]] = [(_flip_row(f), None) for f in c.flips]
    probes: list[tuple[_Row, Delta | None]] = [(_probe_row(p), None) for p in c.regressed_probes]
    return [
        ("Overall, per suite and arm", ["suite", "arm", *_DELTA_HEADER], overall),
        ("Per category", ["suite", "arm", "category", *_DELTA_HEADER], categories),
        (
            f"Samples that flipped ({len(c.flips):,})",
            [
                "suite",
                "arm",
                "trace",
                "probe",
                "category",
                "repeat",
                "flip",
                "base answer",
                "head answer",
            ],
            flips,
        ),
        (
            f"Probes that regressed ({len(c.regressed_probes):,})",
            [*_SAMPLE_HEADER, "base correct", "head correct"],
            probes,
        ),
    ]


def _listed(values: list[str], width: int | None = None) -> str:
    cut = [v[:width] + "…" if width and len(v) > width else v for v in values]
    return ", ".join(cut)


def _origin(side: RunSide) -> str:
    """Who ran the run and when, from its run.json."""
    o = side.origin
    if o is None:
        return "no run.json: its readers, plan, commit and dates are unknown"
    dirty = " (dirty checkout)" if o.dirty else ""
    several = f" ({o.invocations} invocations)" if o.invocations > 1 else ""
    return (
        f"reader {_listed(o.readers)}; plan {_listed(o.plan_digests, 12)}; "
        f"commit {_listed(o.commits, 12)}{dirty}; {o.started} to {o.finished}{several}"
    )


def _intro(c: Comparison) -> list[str]:
    s = c.slots
    return [
        f"Base: {c.base.name} ({c.base.path}, {c.base.units:,} units; {c.base.grades}); "
        f"{_origin(c.base)}",
        f"Head: {c.head.name} ({c.head.path}, {c.head.units:,} units; {c.head.grades}); "
        f"{_origin(c.head)}",
        f"Probe protocol: {c.probe_protocol}. Grades: --scorer {c.scorer}; {c.scorer_check}.",
        f"Slots: {s.paired:,} paired (resolved in both runs; the only ones counted), "
        f"{s.only_base:,} only in base, {s.only_head:,} only in head, {s.excluded:,} "
        f"excluded in one run or both, {s.unresolved:,} dropped as unresolved in one run or "
        "both (valid, but neither the scorer nor a judge gave a right/wrong call).",
        f"Deltas are head minus base, in percentage points; {c.significance}.",
    ]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_compare_markdown(c: Comparison) -> str:
    """The comparison as Markdown."""
    lines = [f"# continuity compare: {c.base.name} vs {c.head.name}", ""]
    lines += [f"- {line}" for line in _intro(c)] + [""]
    for heading, header, rows in _sections(c):
        lines += [f"## {heading}", ""]
        if not rows:
            lines += ["None.", ""]
            continue
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row, _ in rows]
        lines.append("")
    return "\n".join(lines)


def _tone(delta: Delta) -> str:
    """The CSS class of a delta: direction, and strong when significant."""
    if not delta.delta_pp:
        return "same"
    direction = "down" if delta.delta_pp < 0 else "up"
    return f"{direction}-sig" if delta.significant else direction


_STYLE = (
    "body{font:14px/1.4 system-ui,sans-serif;margin:16px auto;max-width:1240px;"
    "padding:0 8px;color:#1b1b1b}"
    "table{border-collapse:collapse;width:100%;table-layout:fixed;margin:8px 0 20px}"
    "th,td{border:1px solid #ccc;padding:3px 5px;text-align:left;overflow-wrap:anywhere;"
    "font-size:12.5px}th{background:#f2f2f2}"
    "td.same{color:#555}td.up{color:#1a6b2a}td.down{color:#a11d1d}"
    "td.up-sig{background:#cdeccf;color:#0b4a17;font-weight:600}"
    "td.down-sig{background:#f6caca;color:#6e0b0b;font-weight:600}"
    "ul{padding-left:20px}"
)


def _html_table(header: _Row, rows: list[tuple[_Row, Delta | None]]) -> str:
    # Answers get the room; every other column shares the rest (fixed layout: the table
    # never grows past the page, long words wrap).
    cols = "".join('<col style="width:22%">' if h.endswith("answer") else "<col>" for h in header)
    out = [
        f"<table><colgroup>{cols}</colgroup><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in header)
        + "</tr>"
    ]
    for row, delta in rows:
        cells = []
        for i, value in enumerate(row):
            tinted = delta is not None and header[i] in ("Δ pp", "95% interval", "verdict")
            attr = f' class="{_tone(delta)}"' if tinted and delta is not None else ""
            # Names (categories, probe ids) wrap at their underscores, not mid-word.
            text = html.escape(value) if header[i].endswith("answer") else wrappable(value)
            cells.append(f"<td{attr}>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def render_compare_html(c: Comparison) -> str:
    """The comparison as one static HTML page (no scripts, no network references)."""
    title = f"continuity compare: {c.base.name} vs {c.head.name}"
    body = [f"<h1>{html.escape(title)}</h1>", "<ul>"]
    body += [f"<li>{html.escape(line)}</li>" for line in _intro(c)]
    body.append("</ul>")
    for heading, header, rows in _sections(c):
        body.append(f"<h2>{html.escape(heading)}</h2>")
        body.append(_html_table(header, rows) if rows else "<p>None.</p>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )
