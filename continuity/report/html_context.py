"""What the model saw, in the drill-down: each sample's reader context, stored once.

A sample's drill-down holds a collapsed "what the model saw" element whose parts are
filled in when it is opened: the context before the probe question (system prompt,
tools offered, the compaction summary, pack, rebuilt or reseeded context, ledger) and
the probe turn (the question, then the reader's tool calls and their results). Each
distinct part is rendered once per page, gzipped and base64-encoded into one hidden
block (the probes of a unit, and often its repeats, share their context part), and
decoded by the page's one small script on first open. The same script opens the
sample (and what it saw) that the page's ``#anchor`` names, on load and on every hash
change.

The values a sample's grading looks for are highlighted: its expected value(s) as
``<mark class="nd">`` and superseded ones as ``<mark class="sp">``. A shared part marks
every value any of its samples looks for (``<mark data-v="N">``, N a page-wide value
number); the script classes the marks by the opened sample's own values
(``data-n``/``data-s``). The highlights are the report's, never the stored context's:
the reader never saw them. Every string is escaped before it is marked.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from dataclasses import dataclass, field

import msgspec

from continuity.report.results import Sample
from continuity.sampling.context import ContextMessage, ContextPart, ProbeTurn

__all__ = ["SCRIPT", "STYLE", "ContextBlocks", "encode_block", "mark_values"]

# User messages by how they arrived: what the drill-down calls them.
_SOURCES = {
    "owner": "user",
    "steer": "user (steer)",
    "probe": "probe question",
    "summary": "compaction summary",
    "reseed": "reseeded context",
    "pack": "continuity pack",
    "ledger": "ledger",
}

STYLE = (
    "<style>"
    ".seen{margin:0}.seen>summary{cursor:pointer}"
    ".cx{max-height:36rem;overflow:auto;border:1px solid #ddd;padding:0.2rem 0.5rem;"
    "margin:0.2rem 0;background:#fcfcfd}"
    ".msg{margin:0.3rem 0;padding:0.1rem 0.5rem;border-left:3px solid #bbb;"
    "white-space:pre-wrap;overflow-wrap:anywhere;font-size:0.85em}"
    ".msg>b{display:block;font-size:0.9em;color:#445}"
    ".msg.summary,.msg.pack,.msg.reseed,.msg.ledger{border-left-color:#3a7bd5}"
    ".msg.probe{border-left-color:#e0a800}.msg.tool,.msg.call{border-left-color:#6a3}"
    ".seen mark{background:none;color:inherit}"
    ".seen mark.nd{background:#ffe066;outline:1px solid #c9a400}"
    ".seen mark.sp{background:#f6c1c1;text-decoration:line-through}"
    "</style>"
)

# Fill a sample's context parts on first open (decoding their gzipped blocks), class its
# marks by its own values, and open the sample an anchor names (and what it saw), scrolled
# to it and then, within what it saw, to its first highlighted expected value.
SCRIPT = (
    "<script>(()=>{"
    "const unz=async b=>new Response(new Blob([Uint8Array.from(atob(b),c=>c.charCodeAt(0))])"
    ".stream().pipeThrough(new DecompressionStream('gzip'))).text();"
    "const fill=async d=>{if(d.dataset.done)return;d.dataset.done='1';"
    "for(const s of d.querySelectorAll('[data-z]')){const b=document.getElementById(s.dataset.z);"
    "if(b)s.innerHTML=await unz(b.textContent.trim())}"
    "const n=(d.dataset.n||'').split(' '),p=(d.dataset.s||'').split(' ');"
    "for(const m of d.querySelectorAll('mark[data-v]'))"
    "m.className=n.includes(m.dataset.v)?'nd':p.includes(m.dataset.v)?'sp':''};"
    "document.addEventListener('toggle',e=>{const d=e.target;"
    "if(d.open&&d.classList.contains('seen'))fill(d)},true);"
    "const go=async()=>{const id=decodeURIComponent(location.hash.slice(1));"
    "const t=id&&document.getElementById(id);if(!t)return;"
    "for(let e=t;e;e=e.parentElement)if(e.tagName==='DETAILS')e.open=true;"
    "const d=t.querySelector('details.seen');if(d){d.open=true;await fill(d)}"
    "t.scrollIntoView();const k=d&&d.querySelector('mark.nd');"
    "if(k)k.scrollIntoView({block:'nearest'});document.body.dataset.opened=id};"
    "addEventListener('hashchange',go);go()})()</script>"
)


def encode_block(markup: str) -> str:
    """`markup` gzipped (no timestamp: the same markup gives the same bytes) and
    base64-encoded, as the page stores a context part."""
    return base64.b64encode(gzip.compress(markup.encode("utf-8"), mtime=0)).decode("ascii")


def _whole(value: str) -> str:
    """A pattern for `value` as a whole word: never inside a longer word."""
    before = r"(?<!\w)" if value[:1].isalnum() else ""
    after = r"(?!\w)" if value[-1:].isalnum() else ""
    return before + re.escape(value) + after


def mark_values(text: str, values: dict[str, int]) -> str:
    """`text` escaped, each whole-word, case-insensitive occurrence of a value in
    `values` (lower-cased value -> its page-wide number) wrapped in ``<mark data-v>``;
    a longer value wins over one it contains."""
    if not values:
        return html.escape(text)
    ordered = sorted(values, key=len, reverse=True)
    pattern = re.compile("|".join(_whole(v) for v in ordered), re.IGNORECASE)
    out: list[str] = []
    at = 0
    for found in pattern.finditer(text):
        out.append(html.escape(text[at : found.start()]))
        number = values.get(found.group(0).lower())
        shown = html.escape(found.group(0))
        out.append(f'<mark data-v="{number}">{shown}</mark>' if number else shown)
        at = found.end()
    out.append(html.escape(text[at:]))
    return "".join(out)


def _label(message: ContextMessage) -> tuple[str, str]:
    """The message's heading and its CSS class."""
    if message.role == "user":
        return _SOURCES.get(message.source, f"user ({message.source})"), message.source
    if message.role == "tool":
        error = ", an error" if message.is_error else ""
        return f"tool result: {message.tool}{error}", "tool"
    return "assistant", "call" if message.tool_calls else "assistant"


def _message(message: ContextMessage, values: dict[str, int]) -> str:
    heading, css = _label(message)
    body = mark_values(message.text, values)
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        body += (
            ("\n" if body else "")
            + f"&rarr; {html.escape(call.name)} "
            + mark_values(arguments, values)
        )
    return f'<div class="msg {html.escape(css)}"><b>{html.escape(heading)}</b>{body}</div>'


def _context_markup(part: ContextPart, values: dict[str, int]) -> str:
    head = [
        f'<div class="msg sys"><b>system prompt ({html.escape(part.model)})</b>'
        f"{html.escape(part.system)}</div>"
    ]
    if part.tools:
        tools = "\n".join(html.escape(t) for t in part.tools)
        head.append(f'<div class="msg sys"><b>tools offered</b>{tools}</div>')
    return "".join(head) + "".join(_message(m, values) for m in part.messages)


def _turn_markup(turn: ProbeTurn, values: dict[str, int]) -> str:
    return "".join(_message(m, values) for m in turn.messages)


@dataclass
class ContextBlocks:
    """The page's context parts, each stored once (by content), and its value numbers.

    Render each sample's element (`element`: it registers the sample's parts and
    values), then, once, the blocks with the style and the script (`blocks`)."""

    values: dict[str, int] = field(default_factory=dict)
    # block id -> (the part, every value its samples look for)
    _parts: dict[str, tuple[ContextPart | ProbeTurn, set[str]]] = field(default_factory=dict)
    _ids: dict[str, str] = field(default_factory=dict)

    def _number(self, value: str) -> str:
        key = value.lower()
        if key not in self.values:
            self.values[key] = len(self.values) + 1
        return str(self.values[key])

    def _block(
        self, kind: str, digest: str, part: ContextPart | ProbeTurn, looked: set[str]
    ) -> str:
        name = f"{kind}{digest}"
        if name not in self._ids:
            self._ids[name] = f"z{len(self._ids) + 1}"
            self._parts[self._ids[name]] = (part, set())
        block = self._ids[name]
        self._parts[block][1].update(looked)
        return block

    def element(self, s: Sample) -> str:
        """The sample's collapsed "what the model saw" element (its parts empty until
        opened), or a line saying why there is none."""
        if s.seen is None:
            return html.escape(s.seen_note or "-")
        looked = {v.lower() for v in (*s.needles, *s.superseded) if v.strip()}
        context = self._block("c", s.seen.digest, s.seen.context, looked)
        turn_key = msgspec.json.encode(s.seen.turn).decode()
        turn = self._block("t", turn_key, s.seen.turn, looked)
        needles = " ".join(self._number(v) for v in s.needles if v.strip())
        superseded = " ".join(self._number(v) for v in s.superseded if v.strip())
        part = s.seen.context
        chars = sum(len(m.text) for m in part.messages)
        calls = len(s.seen.tool_calls())
        return (
            f'<details class="seen" data-n="{needles}" data-s="{superseded}"><summary>'
            f"{len(part.messages)} messages ({chars:,} characters) before the question; "
            f"the probe turn: {s.seen.turn.requests} request(s), {calls} tool call(s)"
            f'</summary><div class="cx" data-z="{context}"></div>'
            f'<div class="cx" data-z="{turn}"></div></details>'
        )

    def blocks(self) -> str:
        """Every part once (gzipped, base64), then the style and the script."""
        out = []
        for block, (part, looked) in self._parts.items():
            values = {v: self.values[v] for v in looked}
            markup = (
                _context_markup(part, values)
                if isinstance(part, ContextPart)
                else _turn_markup(part, values)
            )
            out.append(f'<div hidden id="{block}">{encode_block(markup)}</div>')
        return STYLE + "".join(out) + SCRIPT
