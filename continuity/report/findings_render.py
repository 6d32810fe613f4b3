"""The key findings (continuity.report.findings) as the box report.html opens with and
the short section summary.md opens with.

The box holds one table per suite, a row per arm: accuracy with its coverage, how many
facts the probes asked for and where they were after the boundary (in context,
retrievable, lost; counts and shares, and a bar), then the suite's largest paired delta
vs its baseline arm with its 95% interval, and above them the sentence that reads them.
Each row carries its counts as ``data-`` attributes, so a test reads the numbers back
from the browser's DOM.
"""

from __future__ import annotations

import html

from continuity.report.findings import ArmFinding, Findings, LargestDelta, SuiteFindings, share
from continuity.report.paired import BASELINE_ARMS
from continuity.report.sections import pct

__all__ = ["FINDINGS_STYLE", "PLACES_NOTE", "findings_html", "findings_markdown", "largest_line"]

PLACES_NOTE = (
    "facts: the probed facts an answer needed (one per sample); in context: still in the "
    "reader's context after the boundary; retrievable: reachable through a tool; lost: "
    "neither. Accuracy is over resolved samples; coverage is resolved ÷ valid."
)
FINDINGS_STYLE = (
    "#findings{border:2px solid #4a78b0;border-radius:6px;background:#f7faff;"
    "padding:0.2rem 1rem 0.6rem;margin:1rem 0}#findings h2{margin-top:0.6rem}"
    "#findings h3{margin:0.4rem 0 0.2rem}.reading{font-size:1.05em;margin:0.3rem 0 0.6rem}"
    # suites side by side when both fit, else one under the other
    ".kf-suites{display:flex;flex-wrap:wrap;gap:0 2rem}.kf-suite{flex:0 1 auto;max-width:100%}"
    "#findings table{margin:0.2rem 0 0.3rem}#findings td,#findings th{white-space:nowrap}"
    "#findings th{max-width:none}#findings td.dim{color:#777}svg.places{vertical-align:middle}"
    ".kk{white-space:nowrap}"
    ".key{display:inline-block;width:0.8em;height:0.8em;margin:0 0.2em 0 0.5em}"
)

_COLOURS = (("in_context", "#3b8d5a"), ("retrievable", "#d9a23b"), ("lost", "#b94a48"))
_BAR = 120


def _bar(f: ArmFinding) -> str:
    """A small stacked bar of the arm's facts: in context, retrievable, lost."""
    p = f.places
    if not p.facts:
        return ""
    x, parts = 0.0, []
    for name, colour in _COLOURS:
        width = _BAR * getattr(p, name) / p.facts
        parts.append(f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="12" fill="{colour}"/>')
        x += width
    return (
        f'<svg class="places" width="{_BAR}" height="12" viewBox="0 0 {_BAR} 12" role="img" '
        f'aria-label="{html.escape(_places_label(f))}">{"".join(parts)}</svg>'
    )


def _places_label(f: ArmFinding) -> str:
    p = f.places
    return f"{p.in_context} in context, {p.retrievable} retrievable, {p.lost} lost of {p.facts}"


def _count(count: int, total: int) -> str:
    return f"{share(count, total)} ({count:,})" if total else "-"


def _coverage(f: ArmFinding) -> str:
    return f"{pct(f.coverage)} ({f.resolved:,}/{f.valid:,})" if f.valid else "-"


def _row(f: ArmFinding, real: bool) -> str:
    p = f.places
    data = (
        f'data-arm="{html.escape(f.arm)}" data-facts="{p.facts}" '
        f'data-in-context="{p.in_context}" data-retrievable="{p.retrievable}" '
        f'data-lost="{p.lost}"'
    )
    dim = "" if real else ' class="dim"'
    cells = [
        f"<td>{html.escape(f.arm)}</td>",
        f"<td{dim}>{pct(f.accuracy)}</td>",
        f"<td{dim}>{_coverage(f)}</td>",
        f"<td>{p.facts:,}</td>",
        f"<td>{_count(p.in_context, p.facts)}</td>",
        f"<td>{_count(p.retrievable, p.facts)}</td>",
        f"<td>{_count(p.lost, p.facts)}</td>",
        f"<td>{_bar(f)}</td>",
    ]
    return f"<tr {data}>{''.join(cells)}</tr>"


def largest_line(d: LargestDelta | None, baseline: str | None = None) -> str:
    """The suite's largest paired delta vs its baseline, with its interval and pairs;
    without one, why: the suite ran no baseline arm, or (`baseline`: the one it ran) no
    other arm was paired with it."""
    if d is None and baseline is not None:
        return f"No paired delta: no other arm was paired with {baseline}."
    if d is None:
        native, agent = BASELINE_ARMS
        return (
            f"No paired delta: the suite ran no baseline arm ({native}, or {agent} for an "
            "outside agent) to pair with."
        )
    if d.delta_pp == 0:
        return f"Paired delta vs {d.baseline}: 0.0 pp on every arm (no arm differs)."
    ci = (
        f"95% CI {d.ci_low:+.1f} to {d.ci_high:+.1f}"
        if d.ci_low is not None and d.ci_high is not None
        else "no interval"
    )
    side = "excludes 0" if d.excludes_zero else "includes 0"
    return (
        f"Largest paired delta vs {d.baseline}: {d.arm}, {d.delta_pp:+.1f} pp "
        f"({ci}, {side}; {d.pairs:,} pairs)."
    )


def _suite_html(s: SuiteFindings, real: bool) -> str:
    head = "".join(
        f"<th>{name}</th>"
        for name in (
            "arm",
            "accuracy",
            "coverage",
            "facts",
            "in context",
            "retrievable",
            "lost",
            "share",
        )
    )
    rows = "".join(_row(f, real) for f in s.arms)
    return (
        f'<div class="kf-suite" data-suite="{html.escape(s.suite)}">'
        f"<h3>Suite: {html.escape(s.suite)}</h3>"
        f'<div class="tw"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
        f'</table></div><p class="n">{html.escape(largest_line(s.largest, s.baseline))}</p></div>'
    )


def findings_html(f: Findings) -> str:
    """The key-findings box: the reading, a table per suite, the largest deltas."""
    suites = "".join(_suite_html(s, f.real) for s in f.suites)
    return (
        '<section id="findings"><h2>Key findings</h2>'
        f'<p class="reading">{html.escape(f.reading)}</p>'
        f'<div class="kf-suites">{suites}</div>'
        f'<p class="n">{html.escape(PLACES_NOTE)} Share:{_legend()}</p></section>'
    )


def _legend() -> str:
    """The bar's colours, named."""
    return "".join(
        f'<span class="kk"><span class="key" style="background:{colour}"></span>'
        f"{name.replace('_', ' ')}</span>"
        for name, colour in _COLOURS
    )


def findings_markdown(f: Findings) -> list[str]:
    """The key findings as summary.md's first section: the reading, one table, and a
    line per suite with its largest paired delta."""
    lines = ["## Key findings", "", f.reading, ""]
    lines += ["| suite | arm | accuracy | coverage | facts | in context | retrievable | lost |"]
    lines += ["|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [
        f"| {s.suite} | {a.arm} | {pct(a.accuracy)} | {_coverage(a)} | {a.places.facts} | "
        f"{_count(a.places.in_context, a.places.facts)} | "
        f"{_count(a.places.retrievable, a.places.facts)} | "
        f"{_count(a.places.lost, a.places.facts)} |"
        for s in f.suites
        for a in s.arms
    ]
    lines.append("")
    lines += [f"- {s.suite}: {largest_line(s.largest, s.baseline)}" for s in f.suites]
    return [*lines, ""]
