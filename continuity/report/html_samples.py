"""The report's per-sample drill-down and its index.

Every probe sample gets a collapsed ``<details id="sN">`` under its arm and trace,
holding the question, the expected value(s), the answer, the outcome and score reason,
availability and loss, a boundary evidence summary, the tool calls the reader made at
the probe, the judge's verdict where there is one, a link to the unit file (relative to
report.html, which sits in the run directory) and what the reader saw
(`continuity.report.html_context`: filled in when opened, with the expected and
superseded values highlighted). The index filters without scripts: one list of links
per outcome (and exclusion class) and one per category, each link jumping to a sample's
``details``; the page's one script opens the sample a ``#sN`` anchor names. Every
string from a trace or an answer is escaped.
"""

from __future__ import annotations

import html
import json
import urllib.parse
from collections import defaultdict
from collections.abc import Callable

from continuity.report.html_context import ContextBlocks
from continuity.report.results import Sample

__all__ = ["drilldown_html", "index_html", "sample_label"]


def _e(text: str | None) -> str:
    return "-" if text is None or text == "" else html.escape(text)


def sample_label(s: Sample) -> str:
    """The outcome shown for a sample: its outcome and grade, or its exclusion class."""
    if s.status != "valid":
        return f"excluded: {s.status}"
    if s.outcome == "unresolved" or s.correct is None:
        return "unresolved (no right/wrong call)"
    mark = "correct" if s.correct else "wrong"
    judge = ", the judge's call" if s.decided_by == "judge" else ""
    return f"{s.outcome or '-'} ({mark}{judge})"


def _group(s: Sample) -> str:
    return s.outcome or "-" if s.status == "valid" else f"excluded: {s.status}"


def _index_list(samples: list[Sample], key: Callable[[Sample], str], prefix: str) -> str:
    groups: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        groups[key(s)].append(s)
    out = []
    for name in sorted(groups):
        members = groups[name]
        slug = prefix + "".join(c if c.isalnum() or c == "_" else "-" for c in name)
        by_unit: dict[tuple[str, str, str, int], list[Sample]] = defaultdict(list)
        for s in members:
            by_unit[(s.suite, s.arm, s.trace_id, s.repeat)].append(s)
        lines = "".join(
            f"<li>{html.escape(arm)} &middot; {html.escape(trace)} r{repeat} "
            f"<small>({html.escape(suite)})</small>: "
            + " ".join(f'<a href="#{s.anchor}">{html.escape(s.probe_id)}</a>' for s in group)
            + "</li>"
            for (suite, arm, trace, repeat), group in by_unit.items()
        )
        out.append(
            f'<details id="{slug}"><summary>{html.escape(name)} '
            f'({len(members):,})</summary><ul class="ix">{lines}</ul></details>'
        )
    return "".join(out)


def _ordered(samples: list[Sample], suites: list[str], arms: list[str]) -> list[Sample]:
    """Samples in the report's order: suite, arm (both as the tables order them), trace,
    repeat, then probe (their order in `samples`)."""
    suite_order = {s: i for i, s in enumerate(suites)}
    arm_order = {a: i for i, a in enumerate(arms)}
    return sorted(
        samples,
        key=lambda s: (
            suite_order.get(s.suite, len(suite_order)),
            s.suite,
            arm_order.get(s.arm, len(arm_order)),
            s.arm,
            s.trace_id,
            s.repeat,
        ),
    )


def index_html(samples: list[Sample], suites: list[str], arms: list[str]) -> str:
    """The outcome and category index (anchors ``ix-o-*`` and ``ix-c-*``), each group's
    links in the report's order."""
    samples = _ordered(samples, suites, arms)
    return (
        '<h3 id="index-outcome">By outcome</h3>'
        + _index_list(samples, _group, "ix-o-")
        + '<h3 id="index-category">By category</h3>'
        + _index_list(samples, lambda s: s.category, "ix-c-")
    )


def _availability(s: Sample) -> str:
    superseded = {None: "", True: ", superseded value present", False: ""}[s.superseded_present]
    return f"{_e(s.fact)}{superseded}; loss: {_e(s.loss)}"


def _calls(s: Sample) -> str:
    """The tool calls the reader made at the probe: tool and arguments, in order."""
    if s.seen is None:
        return "-"
    calls = s.seen.tool_calls()
    if not calls:
        return "none"
    # Element content: quotes need no escaping there, and JSON arguments are full of them.
    return "<br>".join(
        f"<code>{html.escape(c.name, quote=False)} "
        + html.escape(json.dumps(c.arguments, sort_keys=True, ensure_ascii=False), quote=False)
        + "</code>"
        for c in calls
    )


def _unit_link(path: str) -> str:
    """A link to the unit file (`path` is relative to the run directory, report.html's)."""
    return f'<a href="{html.escape(urllib.parse.quote(path))}">{_e(path)}</a>'


def _sample(s: Sample, contexts: ContextBlocks) -> str:
    """One sample's ``details``; its summary line already shows the outcome."""
    rows = [
        ("question", _e(s.question)),
        ("expected", _e(s.expected)),
        ("answer", f"<code>{_e(s.answer)}</code>"),
        ("score reason", _e(s.score_reason)),
        ("availability", _availability(s)),
        ("boundary", _e(s.boundary)),
        ("tool calls at the probe", _calls(s)),
        ("unit file", _unit_link(s.path) if s.path else "-"),
        ("what the model saw", contexts.element(s)),
    ]
    if s.judge:
        rows.insert(7, ("judge", _e(s.judge)))
    if s.agent_summaries:  # what the agent's own compaction left its reader
        texts = "".join(f"<pre>{_e(t)}</pre>" for t in s.agent_summaries)
        rows.insert(6, ("the agent's compaction summary", texts))
    if s.reasons:
        rows.insert(3, ("excluded because", _e("; ".join(s.reasons))))
    # A dd's end tag is optional before the next dt and at the list's end (HTML's own
    # rule); written out, they cost about 50 bytes a sample.
    body = "".join(f"<dt>{name}</dt><dd>{value}" for name, value in rows)
    state = "ok" if s.correct else "ex" if s.status != "valid" or s.correct is None else "no"
    return (
        f'<details id="{s.anchor}"><summary><b>{_e(s.probe_id)}</b> '
        f'{_e(s.category)} <span class="{state}">{html.escape(sample_label(s))}</span>'
        f"</summary><dl>{body}</dl></details>"
    )


def drilldown_html(samples: list[Sample], suites: list[str], arms: list[str]) -> str:
    """Arm -> trace -> probe, suite by suite in the report's order; then, once, what the
    samples' readers saw (each distinct part once), its style and the page's script."""
    contexts = ContextBlocks()
    out: list[str] = []
    arm_key: tuple[str, str] | None = None
    unit_key: tuple[str, int] | None = None
    for s in _ordered(samples, suites, arms):
        if (s.suite, s.arm) != arm_key:
            arm_key, unit_key = (s.suite, s.arm), None
            out.append(f'<h3 class="arm">{_e(s.arm)} <small>({_e(s.suite)})</small></h3>')
        if (s.trace_id, s.repeat) != unit_key:
            unit_key = (s.trace_id, s.repeat)
            out.append(f"<h4>{_e(s.trace_id)} <small>repeat {s.repeat}</small></h4>")
        out.append(_sample(s, contexts))
    return "".join(out) + contexts.blocks()
