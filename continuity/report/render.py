"""Render results as Markdown (summary.md) and a static, self-contained HTML report.

The HTML has no scripts, no network references and no telemetry: tables and inline SVG
charts only, so it opens offline from a file. It leads with the key findings
(continuity.report.findings_render), then the run header (from the run manifest,
continuity.runner.manifest) and a table of contents, the overview charts
(continuity.report.charts), one section per suite and the run-wide tables
(continuity.report.html_tables, each closed in a ``<details>``), and, given a
`ReportContext`, the sample index and per-sample drill-down
(continuity.report.html_samples). Offline runs lead with availability and loss
attribution; their accuracy is marked as a mechanics check. summary.md leads with the
same key findings.
"""

from __future__ import annotations

import html
import re

from msgspec import UNSET

from continuity.agents.identity import BANNER, NOT_FROM_MODEL, SANDBOXED, UNSANDBOXED
from continuity.report.charts import accuracy_chart, availability_chart, delta_chart, loss_chart
from continuity.report.findings import findings, is_real
from continuity.report.findings_render import FINDINGS_STYLE, findings_html, findings_markdown
from continuity.report.html_samples import drilldown_html, index_html
from continuity.report.html_tables import suite_table, table_html
from continuity.report.lookup_render import lookup_sections
from continuity.report.results import ReportContext, Results
from continuity.report.scorer_render import answer_line_tables, scorer_line, scorer_tables
from continuity.report.sections import (
    Table,
    accuracy_tables,
    flip_table,
    free_recall_tables,
    judge_tables,
    paired_table,
    pressure_table,
    sample_count_tables,
    spend_table,
    tool_use_tables,
)
from continuity.report.upkeep_render import upkeep_tables
from continuity.runner.manifest import RunManifest

__all__ = [
    "OFFLINE_NOTE",
    "REAL_NOTE",
    "agent_banner",
    "local_note",
    "protocol_line",
    "render_html",
    "render_markdown",
    "report_title",
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
    return REAL_NOTE if is_real(r) else OFFLINE_NOTE


def local_note(r: Results) -> str | None:
    """What a real run on an unlisted local model shows (None for any other run)."""
    if r.local_model is UNSET:
        return None
    return (
        f"Local model. The reader, {r.local_model}, is on this machine and in no price "
        "list. These results show that the real path ran end to end: requests the "
        "server accepted, answers, evidence and scores. A small local model's accuracy "
        "says little about what a capable model keeps across these boundaries."
    )


def tables(r: Results) -> list[Table]:
    """(title, header, rows, note) for every table, shared by both renderings."""
    out: list[Table] = [
        *accuracy_tables(r),
        *free_recall_tables(r),
        *sample_count_tables(r),
        pressure_table(r),
        flip_table(r),
        *tool_use_tables(r),
        *paired_table(r),
        *scorer_tables(r),
        *answer_line_tables(r),
        spend_table(r),
        *upkeep_tables(r),
        *judge_tables(r),
    ]
    if r.lookup:
        out += lookup_sections(r.lookup)
    return out


def agent_banner(r: Results) -> str | None:
    """The fixed banner of a run of outside agents (None for any other run)."""
    if r.agent is UNSET:
        return None
    a = r.agent
    isolation = UNSANDBOXED.format(unsandboxed=a.unsandboxed, total=a.total)
    declared = f"; {a.declared} from an adapter that declares it post-processes" * bool(a.declared)
    answers = NOT_FROM_MODEL.format(not_from_model=a.not_from_model, declared=declared)
    return BANNER.format(
        agents=f"Agent: {', '.join(a.agents)}; each answer came through its own adapter "
        "(CAP/0), the probe as its next owner turn.",
        verified=a.verified,
        total=a.total,
        contradicted=a.contradicted,
        not_crossed=a.not_crossed,
        replay_failed=a.replay_failed,
        answers=answers if a.not_from_model else "",
        isolation=isolation if a.unsandboxed else SANDBOXED,
        unverifiable=(
            "; whether every model call went through the proxy (network not isolated)"
            if a.unsandboxed
            else ""
        ),
        signatures="NOT equal" if a.copies_unverified else "equal",
    )


def protocol_line(r: Results) -> str:
    """The header line naming the probe protocol, and saying plainly when the run's
    results are not comparable with runs under the current protocol."""
    line = f"Probe protocol: {', '.join(r.probe_protocols)}."
    return f"{line} {r.protocol_note}" if r.protocol_note else line


def _md_cell(text: str) -> str:
    """A Markdown table cell: a pipe would end the cell, a newline the row."""
    return " ".join(text.split()).replace("|", "\\|")


_DIGEST = re.compile(r"[0-9a-f]{12,}")


def _arm_list(arms: list[str]) -> str:
    """Up to three arms by name; more as the first three and how many others."""
    return ", ".join(arms) if len(arms) <= 3 else f"{', '.join(arms[:3])} +{len(arms) - 3} arms"


def report_title(r: Results, c: ReportContext | None = None) -> str:
    """The report's title. A run named by a digest (a real run's default directory is
    its plan digest) or a real run gets what it ran instead: its reader model(s), suites,
    arms and (from the run manifest) the day it started, joined by `` · ``; any other
    run keeps its name. The run's name is always in the header."""
    if not (is_real(r) or _DIGEST.fullmatch(r.run)):
        return r.run
    m = c.manifest if c is not None else None
    readers = m.distinct(lambda i: i.reader) if m is not None else []
    if not readers and c is not None:
        readers = list(c.reader_models)
    parts = [", ".join(reader.split(":", 1)[-1] for reader in readers)] if readers else []
    parts += [", ".join(r.suites), _arm_list(r.arms)]
    if m is not None:
        parts.append(m.started[:10])
    return " · ".join(part for part in parts if part)


def render_markdown(r: Results, context: ReportContext | None = None) -> str:
    """summary.md: the title, what ran, the key findings, the run's notes, then every
    table (`tables`)."""
    title = report_title(r, context)
    named = f" (run {r.run})" if title != r.run else ""
    lines = [
        f"# Results: {title}{named}",
        "",
        f"{r.units} units; arms: {', '.join(r.arms)}; suites: {', '.join(r.suites)}; "
        f"repeats: {', '.join(map(str, r.repeats))}.",
        "",
        *findings_markdown(findings(r)),
        protocol_line(r),
        "",
        scorer_line(r),
        "",
        f"> {run_note(r)}",
        "",
    ]
    if (banner := agent_banner(r)) is not None:
        lines[-1:-1] = ["", f"> **{banner.replace('. ', '.** ', 1)}"]
    if (local := local_note(r)) is not None:
        lines[-1:-1] = ["", f"> **{local.replace('. ', '.** ', 1)}"]
    for title, header, rows, note in tables(r):
        lines += [f"## {title}", ""]
        if note:
            lines += [note, ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1rem auto;max-width:1240px;padding:0 "
    "12px;color:#222;line-height:1.35}"
    "h2{border-bottom:2px solid #ccd;margin-top:2rem}"
    "table{border-collapse:collapse;margin:0.3rem 0 1rem;max-width:100%}"
    "td,th{border:1px solid #ccc;padding:0.2rem 0.4rem;text-align:right;vertical-align:top}"
    "td{overflow-wrap:break-word}"
    # a header breaks only between words or at a <wbr>, never inside a word
    "th{background:#f3f4f8;font-weight:600;max-width:9rem;word-break:normal;"
    "overflow-wrap:normal;hyphens:manual}"
    ".tw{overflow-x:auto;max-width:100%}.tw>table{margin:0.3rem 0 0.6rem}"
    "details.tbl{border-bottom:1px solid #eee;padding:0.1rem 0}"
    "details.tbl>summary h3{display:inline;font-size:1.02em;margin:0}"
    "details.tbl[open]>summary{margin-bottom:0.3rem}"
    "td:first-child,th:first-child{text-align:left}"
    "svg{max-width:100%;height:auto}"
    "svg text{font-size:12px;font-family:system-ui,sans-serif}svg .t{font-weight:600}"
    ".note{background:#fff8e1;padding:0.5rem 1rem;border-left:4px solid #e0a800}"
    ".real{background:#e8f4ff;border-left-color:#1565c0}"
    ".n{color:#555;font-size:0.9em;max-width:60rem}.part{margin:0;font-size:0.85em}"
    ".meta{display:grid;grid-template-columns:max-content 1fr max-content 1fr;gap:0.2rem 1rem}"
    ".meta dt{font-weight:600}.meta dd{margin:0;overflow-wrap:anywhere}"
    ".up{background:#1a7f37;color:#fff}.up-pale{background:#d6eedc}"
    ".down{background:#c62828;color:#fff}.down-pale{background:#f8dcdc}"
    "details{margin:0.1rem 0}details>dl{display:grid;grid-template-columns:9rem 1fr;"
    "gap:0.1rem 0.8rem;margin:0.3rem 0 0.6rem 1rem}dd{margin:0;overflow-wrap:anywhere}"
    "summary{cursor:pointer}.ok{color:#1a7f37}.no{color:#c62828}.ex{color:#8a6d00}"
    "ul.ix{margin:0.2rem 0 0.6rem}:target{outline:3px solid #e0a800}"
    "nav ol{columns:2}" + FINDINGS_STYLE
)


def _several(plural: str, values: list[str]) -> str:
    """One value as it is; several as ``N <plural>: a, b``."""
    return values[0] if len(values) == 1 else f"{len(values)} {plural}: {', '.join(values)}"


def _manifest_rows(m: RunManifest) -> dict[str, str]:
    """The header values a run manifest gives: each distinct value over the run's
    invocations, so a run built by several `doit units` calls shows all of them."""
    plans = m.plans()
    digests = (
        [plans[0][0][:16]]
        if len(plans) == 1
        else [f"{digest[:8]}… ({', '.join(suites)})" for digest, suites in plans]
    )
    judges = m.distinct(lambda i: f"{i.judge} (effort {i.judge_effort})" if i.judge else "no judge")
    dirty = {True: " (dirty checkout)", False: " (clean)", None: ""}[m.dirty]
    count = len(m.invocations)
    return {
        "traces": f"{m.traces:,}",
        "reader": _several(
            "readers", m.distinct(lambda i: f"{i.reader} (effort {i.reader_effort})")
        ),
        "alternate (history)": _several("alternates", m.distinct(lambda i: i.alternate)),
        "judge": "-" if judges == ["no judge"] else _several("judges", judges),
        "endpoint": _several("endpoints", m.distinct(lambda i: i.endpoint_kind)),
        "plan digest": _several("plans", digests),
        "commit": _several("commits", m.distinct(lambda i: i.commit[:12])) + dirty,
        "date (UTC)": f"{m.started} to {m.finished}"
        + (f" ({count} invocations)" if count > 1 else ""),
    }


def _header_rows(r: Results, c: ReportContext | None) -> list[tuple[str, str]]:
    """(label, value) of the run header; '-' where the run has no manifest to say."""
    m = c.manifest if c is not None else None
    traces = len({(s.suite, s.trace_id) for s in c.samples}) if c is not None else None
    readers = ", ".join(c.reader_models) if c is not None and c.reader_models else "-"
    histories = ", ".join(c.history_models) if c is not None and c.history_models else "-"
    told = _manifest_rows(m) if m is not None else {}
    return [
        ("run", r.run),
        ("suites", ", ".join(r.suites)),
        ("traces", told.get("traces", "-" if traces is None else f"{traces:,}")),
        ("arms", ", ".join(r.arms)),
        ("repeats", ", ".join(map(str, r.repeats))),
        ("units", f"{r.units:,}"),
        ("reader", told.get("reader", readers)),
        ("alternate (history)", told.get("alternate (history)", histories)),
        ("judge", told.get("judge", "-")),
        ("endpoint", told.get("endpoint", "-")),
        ("plan digest", told.get("plan digest", "-")),
        ("commit", told.get("commit", "-")),
        ("scorer", r.scorer.digest[:16] if r.scorer and r.scorer.digest else "original grades"),
        ("date (UTC)", told.get("date (UTC)", "-")),
        ("probe protocol", ", ".join(r.probe_protocols)),
    ]


def _header(r: Results, c: ReportContext | None) -> str:
    rows = "".join(
        f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in _header_rows(r, c)
    )
    missing = (
        '<p class="n">This run has no run manifest (run.json, written by doit units): '
        "the plan digest, commit and dates are unknown; the models are those its units' "
        "evidence names.</p>"
        if c is None or c.manifest is None
        else ""
    )
    real = run_note(r) == REAL_NOTE
    note = run_note(r).removeprefix("Real run: ")  # the banner's bold label says it
    note = note[:1].upper() + note[1:]
    return (
        f'<section id="run"><p class="note{" real" if real else ""}"><b>'
        f"{'Real run' if real else 'Offline run'}.</b> {html.escape(note)}</p>"
        f"{_agent_note(r)}{_local_note(r)}"
        f'<dl class="meta">{rows}</dl>{missing}'
        f'<p class="n">{html.escape(protocol_line(r))} {html.escape(scorer_line(r))}</p></section>'
    )


def _local_note(r: Results) -> str:
    note = local_note(r)
    if note is None:
        return ""
    head, rest = note.split(". ", 1)
    return f'<p class="note" id="local"><b>{html.escape(head)}.</b> {html.escape(rest)}</p>'


def _agent_note(r: Results) -> str:
    banner = agent_banner(r)
    if banner is None:
        return ""
    head, rest = banner.split(". ", 1)
    return f'<p class="note" id="agent"><b>{html.escape(head)}.</b> {html.escape(rest)}</p>'


def _overview(r: Results, offline: bool) -> str:
    legend = (
        '<p class="n">Deltas: <span class="up">&nbsp;better, interval excludes 0&nbsp;</span> '
        '<span class="up-pale">&nbsp;better, interval includes 0&nbsp;</span> '
        '<span class="down">&nbsp;worse, interval excludes 0&nbsp;</span> '
        '<span class="down-pale">&nbsp;worse, interval includes 0&nbsp;</span> '
        "(per-category deltas have no interval: pale).</p>"
    )
    availability = availability_chart(r) + loss_chart(r)
    accuracy = accuracy_chart(r, mechanics=offline) + delta_chart(r)
    charts = availability + accuracy if offline else accuracy + availability
    lead = (
        '<p class="n">Offline, the signal is where each fact was after the boundary and '
        "where misses were lost; accuracy is shown only as a mechanics check.</p>"
        if offline
        else ""
    )
    return f'<section id="overview"><h2>Overview</h2>{lead}{charts}{legend}</section>'


_CLOSED = '<p class="n">Each table is closed: open its title to read it.</p>'


def _suite_sections(r: Results, offline: bool) -> tuple[list[tuple[str, str]], str]:
    """(anchor, title) of each section and the HTML of every suite's tables, then the
    run-wide ones (spend, scorer, lookup)."""
    all_tables = tables(r)
    per_suite = [t for t in all_tables if t[1] and t[1][0] == "suite"]
    run_wide = [t for t in all_tables if not (t[1] and t[1][0] == "suite")]
    if offline:  # availability leads; accuracy is a mechanics check
        per_suite.sort(key=lambda t: not t[0].startswith("Availability"))
        per_suite = [
            (f"{t[0]} (mechanics)", *t[1:]) if t[0].startswith("Accuracy") else t for t in per_suite
        ]
    toc: list[tuple[str, str]] = []
    out: list[str] = []
    for n, suite in enumerate(r.suites):
        anchor = f"suite-{n}"
        toc.append((anchor, f"Suite: {suite}"))
        body = "".join(
            table_html(r, picked, suite, collapsed=True)
            for t in per_suite
            if (picked := suite_table(t, suite)) is not None
        )
        out.append(
            f'<section id="{anchor}"><h2>Suite: {html.escape(suite)}</h2>{_CLOSED}{body}</section>'
        )
    toc.append(("run-wide", "Spend, scorer and run-wide tables"))
    out.append(
        '<section id="run-wide"><h2>Spend, scorer and run-wide tables</h2>'
        + _CLOSED
        + "".join(table_html(r, t, collapsed=True) for t in run_wide)
        + "</section>"
    )
    return toc, "".join(out)


def render_html(r: Results, context: ReportContext | None = None) -> str:
    """The static report: the key findings, run header, contents, overview charts, one
    section per suite and the run-wide tables (their tables closed), and (with
    `context`) the sample index and drill-down."""
    offline = run_note(r) == OFFLINE_NOTE
    toc, sections = _suite_sections(r, offline)
    toc = [("findings", "Key findings"), ("run", "Run"), ("overview", "Overview"), *toc]
    samples = ""
    if context is not None:
        toc += [("index", "Sample index"), ("samples", "Samples (drill-down)")]
        samples = (
            '<section id="index"><h2>Sample index</h2><p class="n">Every sample by outcome '
            "and by category; each link opens onto its sample below.</p>"
            + index_html(context.samples, r.suites, r.arms)
            + '</section><section id="samples"><h2>Samples (drill-down)</h2>'
            '<p class="n">Arm, then trace and repeat, then probe: open a probe for its '
            "question, expected value, answer and grading.</p>"
            + drilldown_html(context.samples, r.suites, r.arms)
            + "</section>"
        )
    contents = "".join(f'<li><a href="#{a}">{html.escape(t)}</a></li>' for a, t in toc)
    title = html.escape(report_title(r, context))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width">'
        f"<title>continuity results: {title}</title><style>{_STYLE}</style>"
        f"</head><body><h1>continuity results: {title}</h1>"
        + findings_html(findings(r))
        + _header(r, context)
        + f'<nav id="contents"><h2>Contents</h2><ol>{contents}</ol></nav>'
        + _overview(r, offline)
        + sections
        + samples
        + "</body></html>\n"
    )
