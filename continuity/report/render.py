"""Render results as Markdown (summary.md) and a static, self-contained HTML report.

The HTML has no scripts, no network references and no telemetry: tables and inline SVG
charts only, so it opens offline from a file.
"""

from __future__ import annotations

import html
from typing import Any

from continuity.evidence import EXCLUDED_CLASSES
from continuity.probes.availability import AVAILABILITY_COLUMNS
from continuity.probes.scoring import OUTCOMES
from continuity.report.aggregate import Results

__all__ = ["render_html", "render_markdown", "tables"]

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
    real = any(cell.get("model_calls") for cell in r.spend.values())
    return REAL_NOTE if real else OFFLINE_NOTE


def _cost_cell(spend: dict[str, Any]) -> str:
    if not spend.get("model_calls"):
        return "-"
    if spend.get("cost_usd") is not None:
        return f"{spend['cost_usd']:.4f}"
    return f"unknown ({spend['unpriced_calls']} unpriced; known {spend['cost_known_usd']:.4f})"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def tables(r: Results) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, header, rows, note) for every table, shared by both renderings."""
    out: list[tuple[str, list[str], list[list[str]], str]] = []
    rows = []
    for arm in r.arms:
        cell = r.accuracy[arm]["overall"]
        split = " ".join(
            f"r{p['repeat']} {_pct(p['accuracy'])} ({p['n']})" for p in cell["per_repeat"]
        )
        rows.append(
            [
                arm,
                str(cell["n"]),
                _pct(cell["mean"]),
                _num(None if cell["sd"] is None else 100 * cell["sd"]),
                split,
                _num(cell["delta_pp"]),
            ]
        )
    out.append(
        (
            "Accuracy per arm",
            ["arm", "n", "accuracy", "SD (pp)", "per repeat", "delta vs native (pp)"],
            rows,
            "Mean of per-repeat accuracies over valid samples; excluded samples are never scored.",
        )
    )
    rows = [
        [arm]
        + [f"{_pct(r.accuracy[arm][c]['mean'])} ({r.accuracy[arm][c]['n']})" for c in r.categories]
        for arm in r.arms
    ]
    out.append(
        (
            "Accuracy per arm and category",
            ["arm", *r.categories],
            rows,
            "Each cell: mean accuracy (n valid samples). The SD, per-repeat split and delta "
            "of every cell are in the next table.",
        )
    )
    rows = []
    for arm in r.arms:
        for category in r.categories:
            cell = r.accuracy[arm][category]
            rows.append(
                [
                    arm,
                    category,
                    str(cell["n"]),
                    _pct(cell["mean"]),
                    _num(None if cell["sd"] is None else 100 * cell["sd"]),
                    " ".join(
                        f"r{p['repeat']} {_pct(p['accuracy'])} ({p['n']})"
                        for p in cell["per_repeat"]
                    ),
                    _num(cell.get("delta_pp")),
                ]
            )
    out.append(
        (
            "Accuracy per arm and category, in full",
            [
                "arm",
                "category",
                "n",
                "accuracy",
                "SD (pp)",
                "per repeat",
                "delta vs native (pp)",
            ],
            rows,
            "As the per-arm table, for each category.",
        )
    )
    names = list(OUTCOMES)
    out.append(
        (
            "Outcomes",
            ["arm", *names],
            [[arm] + [str(r.outcomes[arm][n]) for n in names] for arm in r.arms],
            "",
        )
    )
    names = list(EXCLUDED_CLASSES)
    out.append(
        (
            "Excluded samples",
            ["arm", *names],
            [[arm] + [str(r.excluded[arm][n]) for n in names] for arm in r.arms],
            "Excluded samples are counted here and never scored as passes or failures.",
        )
    )
    names = list(AVAILABILITY_COLUMNS)
    out.append(
        (
            "Availability and loss attribution",
            ["arm", *names],
            [[arm] + [str(r.availability[arm][n]) for n in names] for arm in r.arms],
            "Where the answer-bearing fact was after the boundary, and where each miss was lost.",
        )
    )
    out.append(
        (
            "Flip rate",
            ["arm", "probes in 2+ repeats", "flips", "rate"],
            [
                [
                    arm,
                    str(r.flip_rate[arm]["probes"]),
                    str(r.flip_rate[arm]["flips"]),
                    _pct(r.flip_rate[arm]["rate"]),
                ]
                for arm in r.arms
            ],
            "",
        )
    )
    if r.tool_use:
        rows = [
            [
                arm,
                str(t["samples"]),
                str(t["with_call"]),
                _pct(t["call_rate"]),
                _pct(t["accuracy_with_call"]),
                _pct(t["accuracy_without_call"]),
            ]
            for arm, t in r.tool_use.items()
        ]
        out.append(
            (
                "Tool use",
                [
                    "arm",
                    "samples",
                    "with a call",
                    "call rate",
                    "accuracy with call",
                    "accuracy without call",
                ],
                rows,
                "Observational: the reader chooses when to call ConversationHistory.",
            )
        )
        rows = [
            [
                arm,
                category,
                str(c["samples"]),
                _pct(c["call_rate"]),
                _pct(c["accuracy_with_call"]),
                _pct(c["accuracy_without_call"]),
            ]
            for arm, t in r.tool_use.items()
            for category, c in t["by_category"].items()
        ]
        out.append(
            (
                "Tool use by category",
                [
                    "arm",
                    "category",
                    "samples",
                    "call rate",
                    "accuracy with call",
                    "accuracy without call",
                ],
                rows,
                "",
            )
        )
    if r.paired:
        rows = [
            [
                arm,
                str(p["pairs"]),
                str(p["both_correct"]),
                str(p["arm_only"]),
                str(p["native_only"]),
                str(p["both_wrong"]),
                _p(p["mcnemar_p"]),
                _num(p["delta_pp"]),
                "-" if p["ci_low"] is None else f"[{p['ci_low']:.1f}, {p['ci_high']:.1f}]",
            ]
            for arm, p in r.paired.items()
        ]
        out.append(
            (
                "Paired comparison with native",
                [
                    "arm",
                    "pairs",
                    "both correct",
                    "arm only",
                    "native only",
                    "both wrong",
                    "McNemar p",
                    "delta (pp)",
                    "95% bootstrap CI (pp)",
                ],
                rows,
                "Same probes, same repeat, both samples valid. Exact two-sided McNemar; "
                "percentile bootstrap over pairs (2,000 resamples).",
            )
        )
    names = [
        "input",
        "cache_read",
        "cache_write",
        "output",
        "compaction_input",
        "compaction_cache_read",
        "compaction_cache_write",
        "compaction_output",
    ]
    rows = [
        [arm, str(r.spend[arm].get("live_turns", "-"))]
        + [str(r.spend[arm][n]) for n in names]
        + [_cost_cell(r.spend[arm])]
        for arm in r.arms
    ]
    rows.append(
        [
            "judge (separately)",
            "-",
            str(r.spend["judge"]["input"]),
            str(r.spend["judge"]["cache_read"]),
            str(r.spend["judge"]["cache_write"]),
            str(r.spend["judge"]["output"]),
            "-",
            "-",
            "-",
            "-",
            _cost_cell(r.spend["judge"]),
        ]
    )
    out.append(
        (
            "Spend (tokens)",
            ["arm", "live turns", *names, "list price (USD)"],
            rows,
            "Probe turns including their compaction summary requests; the compaction_* "
            "columns are the 'of which' summary-request subtotal. Token counts are per "
            "sample: a call one sample replayed from the call cache counts in every sample "
            "that used it. The judge is reported separately. List price: real calls at "
            "catalog prices, each distinct call once; an estimate, not an invoice; unpriced "
            "calls make it unknown, never zero; scripted runs are not billed (-).",
        )
    )
    j = r.judge
    out.append(
        (
            "Judge agreement",
            ["pairs", "agree", "agreement", "judge pass", "proxy pass"],
            [
                [
                    str(j["pairs"]),
                    str(j["agree"]),
                    _pct(j["agreement"]),
                    str(j["judge_pass"]),
                    str(j["proxy_pass"]),
                ]
            ],
            "The optional next-action judge against the keyword proxy. The main tables "
            "always use the proxy.",
        )
    )
    if r.lookup:
        out.append(_lookup_section(r))
    return out


def _lookup_section(r: Results) -> tuple[str, list[str], list[list[str]], str]:
    rows = []
    for arm, cell in r.lookup.items():
        exact, with_failures = cell["exact"], cell["exact_with_failures"]
        rows.append(
            [
                arm,
                ", ".join(cell.get("readers", [])) or "-",
                str(cell["slots_planned"]),
                str(cell["missing"]),
                str(cell["duplicate"]),
                str(cell["unstarted"]),
                str(cell["failed"]),
                str(cell["inventory_infeasible"]),
                str(cell["unknown_provenance"]),
                f"{_pct(exact['rate'])} ({exact['correct']}/{exact['n']})",
                f"{_pct(with_failures['rate'])} ({with_failures['correct']}/"
                f"{with_failures['n']}; {cell['failed_feasible']} failed)",
                str(cell["witnessed_recovery"]),
                _num(cell["mean_calls"]),
                _num(cell["mean_bytes"], 0),
                _num(cell["mean_latency_s"], 2),
                ", ".join(f"{k} {v}" for k, v in cell["exhausted"].items()) or "-",
                str(cell["reader_budget_stops"]),
            ]
        )
    return (
        "Lookup (lookup-allowed-v1)",
        [
            "arm",
            "reader",
            "planned",
            "missing",
            "duplicate",
            "unstarted",
            "failed",
            "inventory-infeasible",
            "unknown provenance",
            "exact",
            "exact with failures",
            "witnessed recovery",
            "calls/slot",
            "bytes/slot",
            "latency s",
            "exhausted",
            "reader budget stops",
        ],
        rows,
        "Every planned slot is kept. Exact: correct over completed eligible tool-identifier "
        "slots (inventory-infeasible slots are in neither part). Exact with failures also "
        "counts failed feasible slots as incorrect; missing and unstarted slots are "
        "coverage only. Witnessed recovery: initially absent, source returned whole with a "
        "verified digest, and correct; descriptive, not causal. Exhaustion is an explicit "
        "mechanics outcome of the metered budget; the scripted reader's answers are not a "
        "semantic evaluation.",
    )


def render_markdown(r: Results) -> str:
    lines = [
        f"# Results: {r.run}",
        "",
        f"{r.units} units; arms: {', '.join(r.arms)}; repeats: {', '.join(map(str, r.repeats))}.",
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
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def _bar_chart(r: Results) -> str:
    width, bar, gap, left = 640, 22, 8, 210
    height = len(r.arms) * (bar + gap) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="Accuracy per arm">'
    ]
    for index, arm in enumerate(r.arms):
        value = r.accuracy[arm]["overall"]["mean"] or 0.0
        y = 10 + index * (bar + gap)
        length = (width - left - 60) * value
        parts.append(
            f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{html.escape(arm)}</text>'
        )
        parts.append(
            f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar}" fill="#4a78b0"/>'
        )
        parts.append(f'<text x="{left + length + 6:.1f}" y="{y + 16}">{100 * value:.1f}%</text>')
    parts.append("</svg>")
    return "".join(parts)


def _availability_chart(r: Results) -> str:
    width, bar, gap, left = 640, 22, 8, 210
    colours = {"in_context": "#3b8d5a", "retrievable": "#d9a23b", "absent": "#b94a48"}
    height = len(r.arms) * (bar + gap) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="Availability per arm">'
    ]
    for index, arm in enumerate(r.arms):
        counts = r.availability[arm]
        total = sum(counts[k] for k in colours) or 1
        y = 10 + index * (bar + gap)
        x = float(left)
        parts.append(
            f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{html.escape(arm)}</text>'
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
        "repeats": ", ".join(map(str, r.repeats)),
    }
    summary = " &middot; ".join(f"{k}: {html.escape(str(v))}" for k, v in meta.items())
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>continuity results: {html.escape(r.run)}</title><style>{style}</style>"
        f"</head><body><h1>continuity results: {html.escape(r.run)}</h1><p>{summary}</p>"
        f'<p class="note">{html.escape(run_note(r))}</p>'
        f"<h2>Overall accuracy</h2>{_bar_chart(r)}"
        f"<h2>Where the facts were after the boundary</h2>{_availability_chart(r)}"
        + "".join(sections)
        + "</body></html>\n"
    )
