"""The extraction request: what a ledger upkeep pass sends its extractor.

The system prompt defines the delta schema and each entry kind in generic terms (no
worked example from any scenario family: `tests/memory/test_independence.py` rejects
any three-word phrase it shares with the trace generator). The user message holds the
current ledger, entry ids included (so an entry can be updated), and the offered spans
in source order, each under a header naming its record by packed id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from continuity.memory.ledger import (
    ARTIFACT_STATUSES,
    COMMITMENT_STATUSES,
    DELTA_SCHEMA,
    Generation,
)
from continuity.memory.upkeep_selection import Span
from continuity.messages import ModelRequest, UserMessage

__all__ = [
    "EMPTY_DELTA",
    "EXCERPT_ENTRIES",
    "EXTRACTION_SYSTEM",
    "excerpt_delta",
    "extraction_request",
    "fixed_tokens",
    "ledger_section",
    "offered_parts",
    "span_header",
]

EMPTY_DELTA = '{"schema": "' + DELTA_SCHEMA + '", "entries": []}'
# What each status means, in generic words (the prompt names every status with its
# meaning, never as a bare list).
_GLOSSES = {
    "SENT": "it has gone to its recipient",
    "DRAFTED": "written and waiting",
    "SCHEDULED": "set for a later time",
    "CANCELLED": "called off",
    "DECLINED": "refused by one side",
    "OPEN": "promised, nothing done yet",
    "DRAFT": "still being worked on",
    "FINAL": "settled, kept by its author",
    "SHARED": "given to others",
    "ARCHIVED": "put away",
    "SUPERSEDED": "replaced by a newer version",
}


def _glossed(statuses: Sequence[str]) -> str:
    return ", ".join(f"{status} ({_GLOSSES[status]})" for status in statuses)


EXTRACTION_SYSTEM = (
    "You keep a continuity ledger for a long conversation between an owner and an "
    "assistant, so that a later model can carry on without the transcript. Read the "
    "records in the request and reply with one JSON object and nothing else: "
    '{"schema": "' + DELTA_SCHEMA + '", "entries": [...]}. Each entry has "kind", '
    '"text", "status" and "cites". Kinds: "owner_constraint" is a rule or preference '
    'the owner set that still applies; "commitment" is something either side undertook '
    'to do, with its status; "artifact" is a document or file, with its status; '
    '"next_action" is what the owner means to do next, with any deadline; '
    '"key_identifier" is a reference, code or number needed later, copied exactly. '
    '"text" is one line of at most 512 bytes. "status", for a commitment: '
    + _glossed(COMMITMENT_STATUSES)
    + "; for an artifact: "
    + _glossed(ARTIFACT_STATUSES)
    + '; null otherwise. "cites" lists the numbers of the records '
    "an entry comes from (c12 is 12), only records shown in this request. To change an "
    'existing entry, give its "id" with the new text or status. State only what the '
    "records state; when a later record corrects an earlier one, keep the later value. "
    "When nothing needs adding or changing, reply " + EMPTY_DELTA + "."
)


def span_header(span: Span) -> str:
    """The header line of an offered span (bounded by `SPAN_FRAME_BYTES`)."""
    return f"=== record c{span.ordinal} part {span.index + 1} ({span.kind}) ==="


_HEADER = re.compile(r"^=== record c(\d+) part (\d+) \((owner|tool)\) ===$", re.MULTILINE)
# A faux extractor's entries per delta (`excerpt_delta`).
EXCERPT_ENTRIES = 24
_EXCERPT_BYTES = 200


def offered_parts(text: str) -> list[tuple[int, int, str, str]]:
    """(ordinal, part, kind, text) of every span an extraction request offers, in the
    order it offers them: how a scripted extractor reads its own input."""
    found = list(_HEADER.finditer(text))
    parts = []
    for position, match in enumerate(found):
        end = found[position + 1].start() if position + 1 < len(found) else len(text)
        body = text[match.end() : end].strip("\n")
        parts.append((int(match.group(1)), int(match.group(2)), match.group(3), body))
    return parts


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    clipped = line.encode("utf-8")[:_EXCERPT_BYTES].decode("utf-8", errors="ignore")
    return clipped.strip()


def excerpt_delta(request_text: str, *, limit: int = EXCERPT_ENTRIES) -> str:
    """A faux extractor's answer: one entry per offered record's first part, its first
    line as the text (owner records as owner constraints, tool results as key
    identifiers), up to `limit` entries in source order. A test double for a model: it
    reads only its own request, and its labels mean nothing."""
    entries = []
    for ordinal, part, kind, body in offered_parts(request_text):
        line = _first_line(body)
        if part != 1 or not line:
            continue
        entries.append(
            {
                "kind": "owner_constraint" if kind == "owner" else "key_identifier",
                "text": line,
                "status": None,
                "cites": [ordinal],
            }
        )
        if len(entries) == limit:
            break
    return json.dumps({"schema": DELTA_SCHEMA, "entries": entries}, ensure_ascii=False)


def ledger_section(generation: Generation) -> str:
    lines = [f"Current ledger (generation {generation.number}):"]
    lines += [
        f"- {e.id} {e.kind}"
        + (f" {e.status}" if e.status else "")
        + f": {e.text} [{', '.join(f'c{c}' for c in e.cites)}]"
        for e in generation.ledger.entries
    ]
    if not generation.ledger.entries:
        lines.append("- (empty)")
    return "\n".join(lines)


def fixed_tokens(generation: Generation) -> int:
    """The tokens a request spends before its first span: the system prompt, the
    ledger section and the framing lines (``ceil(chars / 4)`` each, plus slack)."""
    framing = len(EXTRACTION_SYSTEM) + len(ledger_section(generation)) + 160
    return -(-framing // 4) + 64


def extraction_request(
    generation: Generation, spans: Sequence[Span], *, session_id: str, provider: str, model: str
) -> ModelRequest:
    """The request one pass sends: the ledger, then every offered span in source order."""
    parts = [ledger_section(generation), "", "Records offered in this pass, in source order:"]
    for span in sorted(spans, key=lambda s: s.slot):
        parts += [span_header(span), span.text]
    return ModelRequest(
        session_id=session_id,
        provider=provider,
        model=model,
        system=EXTRACTION_SYSTEM,
        messages=(UserMessage(text="\n".join(parts), attribution="host", source="ledger"),),
    )
