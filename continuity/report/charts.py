"""The report's inline SVG charts: accuracy with Wilson intervals, paired deltas with
their bootstrap intervals, and where the facts were after the boundary.

Every chart has a labelled axis with a scale and gridlines, and marks what is good or
bad: a delta is green above zero and red below, saturated when its paired 95% interval
excludes zero and pale when it does not. No scripts: plain SVG a browser draws offline.
"""

from __future__ import annotations

import html
import math

from continuity.report.results import Results

__all__ = [
    "accuracy_chart",
    "availability_chart",
    "delta_chart",
    "delta_class",
    "loss_chart",
    "wilson",
]

_WIDTH, _LEFT, _RIGHT, _BAR, _GAP, _TOP = 900, 300, 44, 18, 8, 48
_COLOURS = {
    "up": "#1a7f37",
    "up-pale": "#8cc79b",
    "down": "#c62828",
    "down-pale": "#eb9a9a",
    "flat": "#888888",
}


def wilson(correct: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """The Wilson score interval (95% by default) of `correct` out of `n`; None at n=0."""
    if n <= 0:
        return None
    p = correct / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def delta_class(delta: float | None, low: float | None, high: float | None) -> str:
    """``up``/``down`` by the delta's sign, ``-pale`` unless its interval excludes zero
    (no interval: pale), ``flat`` for zero or no delta."""
    if delta is None or delta == 0:
        return "flat"
    excludes = low is not None and high is not None and (low > 0 or high < 0)
    return ("up" if delta > 0 else "down") + ("" if excludes else "-pale")


def _rows(r: Results) -> list[tuple[str, str, str]]:
    """(label, suite, arm) of every suite and arm that has samples, suite by suite."""
    return [
        (f"{arm} ({suite})" if len(r.suites) > 1 else arm, suite, arm)
        for suite in r.suites
        for arm in r.arms
        if arm in r.accuracy.get(suite, {})
    ]


def _open(label: str, height: int) -> list[str]:
    return [
        f'<svg width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" role="img" aria-label="{html.escape(label)}">'
    ]


def _axis(parts: list[str], bottom: int, ticks: list[tuple[float, str]], title: str) -> None:
    """Gridlines and tick labels at x positions (0..1 of the plot width), and the axis
    title under them."""
    span = _WIDTH - _LEFT - _RIGHT
    for fraction, text in ticks:
        x = _LEFT + span * fraction
        parts.append(
            f'<line x1="{x:.1f}" y1="{_TOP - 6}" x2="{x:.1f}" y2="{bottom}" stroke="#ddd"/>'
            f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{text}</text>'
        )
    parts.append(
        f'<line x1="{_LEFT}" y1="{bottom}" x2="{_WIDTH - _RIGHT}" y2="{bottom}" stroke="#444"/>'
        f'<text x="{_LEFT + span / 2:.1f}" y="{bottom + 30}" text-anchor="middle">'
        f"{html.escape(title)}</text>"
    )


def _title(parts: list[str], title: str, explanation: str) -> None:
    parts.append(
        f'<text x="0" y="14" class="t">{html.escape(title)}</text>'
        f'<text x="0" y="30">{html.escape(explanation)}</text>'
    )


def _label(parts: list[str], y: int, text: str) -> None:
    parts.append(f'<text x="{_LEFT - 8}" y="{y + 13}" text-anchor="end">{html.escape(text)}</text>')


def accuracy_chart(r: Results, *, mechanics: bool) -> str:
    """Overall accuracy per suite and arm (repeats pooled), with its Wilson 95% interval
    over the valid samples. `mechanics` titles it as a check of the pipeline (offline)."""
    rows = _rows(r)
    bottom = _TOP + len(rows) * (_BAR + _GAP)
    height = bottom + 40
    title = "Accuracy (mechanics check: scripted readers)" if mechanics else "Accuracy"
    parts = _open(f"{title} per suite and arm, with 95% Wilson intervals", height)
    _title(parts, title, "bar = mean accuracy; whisker = 95% Wilson interval (repeats pooled)")
    span = _WIDTH - _LEFT - _RIGHT
    _axis(parts, bottom, [(i / 5, f"{20 * i}%") for i in range(6)], "accuracy (resolved samples)")
    for index, (label, suite, arm) in enumerate(rows):
        cell = r.accuracy[suite][arm]["overall"]
        y = _TOP + index * (_BAR + _GAP)
        value = cell.mean or 0.0
        _label(parts, y, label)
        parts.append(
            f'<rect x="{_LEFT}" y="{y}" width="{span * value:.1f}" height="{_BAR}" '
            f'fill="{"#9aa9bd" if mechanics else "#4a78b0"}"><title>{100 * value:.1f}% '
            f"of {cell.n}</title></rect>"
        )
        interval = wilson(sum(p.correct for p in cell.per_repeat), cell.n)
        if interval is not None:
            low, high = (_LEFT + span * v for v in interval)
            mid = y + _BAR / 2
            parts.append(
                f'<path d="M{low:.1f} {mid}H{high:.1f}M{low:.1f} {mid - 5}V{mid + 5}'
                f'M{high:.1f} {mid - 5}V{mid + 5}" stroke="#222" fill="none"/>'
            )
        parts.append(
            f'<text x="{_WIDTH - _RIGHT + 4}" y="{y + 13}">{100 * value:.0f}%</text>'
            if cell.mean is not None
            else ""
        )
    parts.append("</svg>")
    return "".join(parts)


def delta_chart(r: Results) -> str:
    """Each arm's paired delta vs native (percentage points) with its 95% bootstrap
    interval, coloured by direction and significance; empty without paired results."""
    rows = [
        (f"{arm} ({suite})" if len(r.suites) > 1 else arm, p)
        for suite in r.suites
        for arm in r.arms
        if (p := r.paired.get(suite, {}).get(arm)) is not None and p.delta_pp is not None
    ]
    if not rows:
        return ""
    reach = max(abs(v) for _, p in rows for v in (p.delta_pp, p.ci_low, p.ci_high) if v is not None)
    limit = next((step for step in (10, 20, 50, 100) if reach <= step), 100)
    span = _WIDTH - _LEFT - _RIGHT

    def x(value: float) -> float:
        return _LEFT + span * (value + limit) / (2 * limit)

    bottom = _TOP + len(rows) * (_BAR + _GAP)
    parts = _open("Paired delta vs native with 95% bootstrap intervals", bottom + 40)
    _title(
        parts,
        "Paired delta vs native (percentage points)",
        "dot = delta; whisker = 95% paired bootstrap interval; saturated colour = the "
        "interval excludes 0",
    )
    ticks = [(i / 4, f"{-limit + i * limit // 2:+d}".replace("+0", "0")) for i in range(5)]
    _axis(parts, bottom, ticks, "arm minus native, percentage points")
    parts.append(
        f'<line x1="{x(0):.1f}" y1="{_TOP - 6}" x2="{x(0):.1f}" y2="{bottom}" stroke="#444"/>'
    )
    for index, (label, p) in enumerate(rows):
        y = _TOP + index * (_BAR + _GAP)
        mid = y + _BAR / 2
        colour = _COLOURS[delta_class(p.delta_pp, p.ci_low, p.ci_high)]
        _label(parts, y, label)
        if p.ci_low is not None and p.ci_high is not None:
            parts.append(
                f'<path d="M{x(p.ci_low):.1f} {mid}H{x(p.ci_high):.1f}" stroke="{colour}" '
                'stroke-width="3"/>'
            )
        assert p.delta_pp is not None
        parts.append(
            f'<circle cx="{x(p.delta_pp):.1f}" cy="{mid}" r="5" fill="{colour}">'
            f"<title>{p.delta_pp:+.1f} pp over {p.pairs} pairs</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _stacked(r: Results, title: str, explanation: str, colours: dict[str, str]) -> str:
    """One stacked bar per suite and arm: each `colours` column of its availability
    counts as a share of their sum, with the scale and a legend."""
    rows = _rows(r)
    bottom = _TOP + len(rows) * (_BAR + _GAP)
    parts = _open(title, bottom + 60)
    _title(parts, title, explanation)
    span = _WIDTH - _LEFT - _RIGHT
    _axis(parts, bottom, [(i / 5, f"{20 * i}%") for i in range(6)], "share")
    for index, (label, suite, arm) in enumerate(rows):
        counts = r.availability[suite][arm]
        total = sum(counts[k] for k in colours)
        y = _TOP + index * (_BAR + _GAP)
        x = float(_LEFT)
        _label(parts, y, label)
        for name, colour in colours.items():
            length = span * counts[name] / total if total else 0.0
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{length:.1f}" height="{_BAR}" '
                f'fill="{colour}"><title>{name}: {counts[name]:,}</title></rect>'
            )
            x += length
        parts.append(f'<text x="{_WIDTH - _RIGHT + 4}" y="{y + 13}">{total:,}</text>')
    legend = bottom + 48
    for i, (name, colour) in enumerate(colours.items()):
        lx = _LEFT + 170 * i
        parts.append(
            f'<rect x="{lx}" y="{legend - 10}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{lx + 14}" y="{legend}">{name}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def availability_chart(r: Results) -> str:
    """Where each valid sample's answer-bearing fact was after the boundary."""
    return _stacked(
        r,
        "Where the answer-bearing fact was after the boundary",
        "share of each suite and arm's valid samples with such a fact (count at the right)",
        {"in_context": "#3b8d5a", "retrievable": "#d9a23b", "absent": "#b94a48"},
    )


def loss_chart(r: Results) -> str:
    """Where each miss was lost: at the boundary, at retrieval, or present but missed."""
    return _stacked(
        r,
        "Where the misses were lost",
        "share of each suite and arm's attributed misses (count at the right)",
        {
            "lost_at_boundary": "#b94a48",
            "lost_at_retrieval": "#d9a23b",
            "present_but_missed": "#6a5acd",
        },
    )
