"""What the model saw, in the drill-down: each sample's reader context, stored once.

A sample's drill-down holds a collapsed "what the model saw" element whose parts are
filled in when it is opened: the context before the probe question (system prompt,
tools offered, the compaction summary, pack, rebuilt or reseeded context, ledger) and
the probe turn (the question, then the reader's tool calls and their results).

The contexts of one trace's samples share most of their messages (the probes of a unit
share their whole context part; the arms share the system prompt, the tools and the
replayed turns; the probes of every arm share their question), so the page stores
each trace's contexts as one stream: every distinct message once, rendered and sorted
(alike messages side by side, for the compressor), and each part as a list of message
numbers, as JSON, gzipped and base64-encoded into one hidden block. The page's one small
script decodes a trace's block the first time one of its samples' contexts is opened
and joins the part's messages. The same script opens the sample (and what it saw) that
the page's ``#anchor`` names, on load and on every hash change.

The values a sample's grading looks for are highlighted: its expected value(s) as
``<mark class="nd">`` and superseded ones as ``<mark class="sp">``. A shared message
marks every value any sample that saw it looks for (``<mark data-v="N">``, N a
page-wide value number); the script classes the marks by the opened sample's own values
(``data-n``/``data-s``). The highlights are the report's, never the stored context's:
the reader never saw them. Every string is escaped before it is marked.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import re
from dataclasses import dataclass, field

import msgspec

from continuity.report.results import Sample
from continuity.sampling.context import ContextMessage, ContextPart

__all__ = ["SCRIPT", "STYLE", "ContextBlocks", "decode_block", "encode_block", "mark_values"]

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

# Fill a sample's context parts on first open (decoding its trace's gzipped block once and
# joining each part's messages), class its marks by its own values, and open the sample an
# anchor names (and what it saw), scrolled to it and then, within what it saw, to its first
# highlighted expected value.
SCRIPT = (
    "<script>(()=>{"
    "const unz=async b=>new Response(new Blob([Uint8Array.from(atob(b),c=>c.charCodeAt(0))])"
    ".stream().pipeThrough(new DecompressionStream('gzip'))).text();"
    "const got={},load=b=>got[b.id]||(got[b.id]=unz(b.textContent.trim()).then(JSON.parse));"
    "const fill=async d=>{if(d.dataset.done)return;d.dataset.done='1';"
    "const b=document.getElementById(d.dataset.z);if(!b)return;const[m,p]=await load(b);"
    "for(const i of d.dataset.p.split(' ')){const c=document.createElement('div');"
    "c.className='cx';c.innerHTML=p[i].map(j=>m[j]).join('');d.append(c)}"
    "const n=(d.dataset.n||'').split(' '),s=(d.dataset.s||'').split(' ');"
    "for(const k of d.querySelectorAll('mark[data-v]'))"
    "k.className=n.includes(k.dataset.v)?'nd':s.includes(k.dataset.v)?'sp':''};"
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


def encode_block(text: str) -> str:
    """`text` gzipped (no timestamp: the same text gives the same bytes) and
    base64-encoded, as the page stores a trace's contexts."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


def decode_block(block: str) -> tuple[list[str], list[list[int]]]:
    """What the page's script reads from a block `encode_block` wrote: the trace's
    messages (rendered) and its parts (each a list of message numbers)."""
    messages, parts = json.loads(gzip.decompress(base64.b64decode(block)).decode("utf-8"))
    return messages, parts


def _whole(value: str) -> str:
    """A pattern for `value` as a whole word: never inside a longer word."""
    before = r"(?<!\w)" if value[:1].isalnum() else ""
    after = r"(?!\w)" if value[-1:].isalnum() else ""
    return before + re.escape(value) + after


@functools.lru_cache(maxsize=1024)
def _pattern(ordered: tuple[str, ...]) -> re.Pattern[str]:
    """Any of the values, longest first, each as a whole word, case-insensitive."""
    return re.compile("|".join(_whole(v) for v in ordered), re.IGNORECASE)


def mark_values(text: str, values: dict[str, int]) -> str:
    """`text` escaped, each whole-word, case-insensitive occurrence of a value in
    `values` (lower-cased value -> its page-wide number) wrapped in ``<mark data-v>``;
    a longer value wins over one it contains."""
    # Most messages hold none of the values, and the scan is most of a report's render
    # time. For ASCII text and an ASCII value, case-insensitive is plain lower-casing, so
    # a value the lower-cased text lacks cannot match: it is left out of the scan.
    lowered = text.lower() if text.isascii() else None
    present = [v for v in values if lowered is None or not v.isascii() or v in lowered]
    if not present:
        return html.escape(text)
    pattern = _pattern(tuple(sorted(present, key=lambda v: (-len(v), v))))
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


@dataclass(frozen=True)
class _Header:
    """A context part's system prompt or its tools offered, shown as a message."""

    heading: str
    text: str


def _entries(part: ContextPart) -> list[ContextMessage | _Header]:
    head: list[ContextMessage | _Header] = [_Header(f"system prompt ({part.model})", part.system)]
    if part.tools:
        head.append(_Header("tools offered", "\n".join(part.tools)))
    return head + list(part.messages)


def _render(entry: ContextMessage | _Header, values: dict[str, int]) -> str:
    if isinstance(entry, _Header):
        heading, text = html.escape(entry.heading), html.escape(entry.text)
        return f'<div class="msg sys"><b>{heading}</b>{text}</div>'
    return _message(entry, values)


def _shown(entry: ContextMessage | _Header) -> bytes:
    """What the drill-down shows of `entry`, as its key: a message without its call ids
    (two messages that differ only there look the same), a header as a pair."""
    if isinstance(entry, _Header):
        return msgspec.json.encode((entry.heading, entry.text))
    calls = [(c.name, c.arguments) for c in entry.tool_calls]
    shown = (entry.role, entry.source, entry.tool, entry.is_error, entry.text, calls)
    return msgspec.json.encode(shown, order="sorted")


@dataclass
class _Stream:
    """One trace's contexts: every distinct message once (`entries`: by what it shows,
    `_shown`), each part as the numbers of its messages, and the values each part's
    samples look for."""

    entries: dict[bytes, int] = field(default_factory=dict)
    shown: list[ContextMessage | _Header] = field(default_factory=list)
    parts: dict[str, int] = field(default_factory=dict)
    lists: list[list[int]] = field(default_factory=list)
    looked: list[set[str]] = field(default_factory=list)

    def _entry(self, entry: ContextMessage | _Header) -> int:
        key = _shown(entry)
        if key not in self.entries:
            self.entries[key] = len(self.shown)
            self.shown.append(entry)
        return self.entries[key]

    def part(self, key: str, entries: list[ContextMessage | _Header], looked: set[str]) -> int:
        """The number of the part `key` names (its `entries` registered on first sight);
        `looked` joins the values its samples look for."""
        if key not in self.parts:
            self.parts[key] = len(self.lists)
            self.lists.append([self._entry(e) for e in entries])
            self.looked.append(set())
        number = self.parts[key]
        self.looked[number].update(looked)
        return number

    def document(self, numbers: dict[str, int]) -> str:
        """The stream as the page's script reads it: ``[messages, parts]``, the messages
        rendered (each marking every value a part holding it looks for; `numbers` gives
        the values' page-wide numbers) and sorted, the parts renumbered to match."""
        looked: list[set[str]] = [set() for _ in self.shown]
        for entries, values in zip(self.lists, self.looked, strict=True):
            if values:
                for entry in entries:
                    looked[entry] |= values
        rendered = [
            _render(e, {v: numbers[v] for v in looked[i]}) for i, e in enumerate(self.shown)
        ]
        order = sorted(range(len(rendered)), key=rendered.__getitem__)
        renumbered = {old: new for new, old in enumerate(order)}
        parts = [[renumbered[e] for e in entries] for entries in self.lists]
        return json.dumps(
            [[rendered[i] for i in order], parts], ensure_ascii=False, separators=(",", ":")
        )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


@dataclass
class ContextBlocks:
    """The page's contexts, one stream per trace, and its value numbers.

    Render each sample's element (`element`: it registers the sample's parts and
    values), then, once, the blocks with the style and the script (`blocks`)."""

    values: dict[str, int] = field(default_factory=dict)
    # (suite, trace) -> (block id, its stream)
    _streams: dict[tuple[str, str], tuple[str, _Stream]] = field(default_factory=dict)

    def _number(self, value: str) -> str:
        key = value.lower()
        if key not in self.values:
            self.values[key] = len(self.values) + 1
        return str(self.values[key])

    def element(self, s: Sample) -> str:
        """The sample's collapsed "what the model saw" element (filled when opened), or
        a line saying why there is none."""
        if s.seen is None:
            return html.escape(s.seen_note or "-")
        trace = (s.suite, s.trace_id)
        if trace not in self._streams:
            self._streams[trace] = (f"z{len(self._streams) + 1}", _Stream())
        block, stream = self._streams[trace]
        looked = {v.lower() for v in (*s.needles, *s.superseded) if v.strip()}
        seen = s.seen
        context_key = "c" + (seen.digest or msgspec.json.encode(seen.context).decode())
        context = stream.part(context_key, _entries(seen.context), looked)
        turn_key = "t" + msgspec.json.encode(seen.turn).decode()
        turn = stream.part(turn_key, list(seen.turn.messages), looked)
        attributes = f'data-z="{block}" data-p="{context} {turn}"'
        needles = " ".join(self._number(v) for v in s.needles if v.strip())
        superseded = " ".join(self._number(v) for v in s.superseded if v.strip())
        attributes += f' data-n="{needles}"' if needles else ""
        attributes += f' data-s="{superseded}"' if superseded else ""
        chars = sum(len(m.text) for m in seen.context.messages)
        return (
            f'<details class="seen" {attributes}><summary>'
            f"{_count(len(seen.context.messages), 'message')} ({chars:,} characters) "
            f"before the question; the probe turn: {_count(seen.turn.requests, 'request')}, "
            f"{_count(len(seen.tool_calls()), 'tool call')}</summary></details>"
        )

    def blocks(self) -> str:
        """Every trace's stream once (gzipped, base64), then the style and the script."""
        out = [
            f'<div hidden id="{block}">{encode_block(stream.document(self.values))}</div>'
            for block, stream in self._streams.values()
        ]
        return STYLE + "".join(out) + SCRIPT
