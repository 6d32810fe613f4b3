"""The continuity ledger: a closed schema of entries a model extracts from retained
records, merged into published generations and rendered for a cold reader.

An entry is one of five kinds: an **owner constraint**, a **commitment** with its
status, an **artifact** with its status, a **next action**, or a **key identifier**.
Each cites the retained records it came from by ordinal (the record's sequence number,
shown to a reader as its packed id ``c<ordinal>``, which ConversationHistory ``get``
accepts). Rendered entries are ordered by their latest cited ordinal, ascending: host
positions, not the model's prose, give the chronology.

A model's answer to one extraction is a **delta** (`parse_delta`): new entries, and
updates of earlier entries by id (a status that moved, a corrected value). `merge` never
loses an entry: every entry of the previous generation is in the next, updated or not.
A delta whose entries cite records that were not offered to it, name an unknown entry,
change an entry's kind, or break the schema is refused whole (``ledger_delta_invalid``
with a stable reason); nothing of it is published and nothing is repaired.

A **generation** is a published ledger with an identity (the digest of its parent's
identity and its entries) and lineage (its parent). Generation 0 is the empty ledger.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import msgspec

from continuity.digest import value_digest
from continuity.errors import LedgerError

__all__ = [
    "ARTIFACT_STATUSES",
    "COMMITMENT_STATUSES",
    "DELTA_SCHEMA",
    "ENTRY_KINDS",
    "LEDGER_HEADER",
    "LEDGER_SCHEMA",
    "LIMITS",
    "Delta",
    "DeltaEntry",
    "EntryKind",
    "Generation",
    "Ledger",
    "LedgerEntry",
    "LedgerLimits",
    "check_ledger",
    "empty_generation",
    "is_ledger",
    "latest_cite",
    "merge",
    "next_generation",
    "parse_delta",
    "render",
    "render_tokens",
]

LEDGER_SCHEMA = "continuity-ledger-v1"
DELTA_SCHEMA = "continuity-ledger-delta-v1"
LEDGER_HEADER = "<continuity-ledger v1"
EntryKind = Literal["owner_constraint", "commitment", "artifact", "next_action", "key_identifier"]
ENTRY_KINDS: tuple[str, ...] = (
    "owner_constraint",
    "commitment",
    "artifact",
    "next_action",
    "key_identifier",
)
# The status vocabularies the scorer reads (continuity.probes.statuses), plus OPEN for a
# commitment nobody has acted on yet.
COMMITMENT_STATUSES = ("SENT", "DRAFTED", "SCHEDULED", "CANCELLED", "DECLINED", "OPEN")
ARTIFACT_STATUSES = ("DRAFT", "FINAL", "SHARED", "ARCHIVED", "SUPERSEDED")
_STATUSES = {"commitment": COMMITMENT_STATUSES, "artifact": ARTIFACT_STATUSES}
_TITLES = {
    "owner_constraint": "owner constraint",
    "commitment": "commitment",
    "artifact": "artifact",
    "next_action": "next action",
    "key_identifier": "key identifier",
}
_ENTRY_ID = re.compile(r"e[1-9][0-9]{0,5}")
_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL)


class LedgerLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The ledger's bounds, each a capacity reason when it is reached."""

    entry_text_bytes: int = 512
    cites_per_entry: int = 16
    delta_entries: int = 64
    entries: int = 256  # ledger_aggregate_capacity
    render_tokens: int = 6_000  # ledger_render_budget
    payload_bytes: int = 16 * 1024  # ledger_payload_budget: an extraction's raw output
    generations: int = 8  # ledger_lineage_budget


LIMITS = LedgerLimits()


class LedgerEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    id: str
    kind: EntryKind
    text: str
    status: str | None = None
    cites: tuple[int, ...]


class Ledger(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    schema: str = LEDGER_SCHEMA
    entries: tuple[LedgerEntry, ...] = ()


class Generation(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A published ledger: its number, identity, parent identity and the operation that
    published it (None for generation 0)."""

    number: int
    id: str
    parent: str | None
    op_id: str | None
    ledger: Ledger


class DeltaEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One entry of a model's delta: new (no `id`) or an update of entry `id`."""

    id: str | None = None
    kind: EntryKind
    text: str
    status: str | None = None
    cites: list[int]


class Delta(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    schema: Literal["continuity-ledger-delta-v1"]
    entries: list[DeltaEntry]


_delta_decoder = msgspec.json.Decoder(Delta)


def _generation_id(parent: str | None, ledger: Ledger) -> str:
    return value_digest(("continuity-ledger-generation", parent or "", ledger))


def empty_generation() -> Generation:
    """Generation 0: the empty ledger, before any extraction."""
    ledger = Ledger()
    return Generation(
        number=0, id=_generation_id(None, ledger), parent=None, op_id=None, ledger=ledger
    )


def next_generation(previous: Generation, ledger: Ledger, op_id: str) -> Generation:
    """The generation after `previous` holding `ledger`, published by `op_id`."""
    return Generation(
        number=previous.number + 1,
        id=_generation_id(previous.id, ledger),
        parent=previous.id,
        op_id=op_id,
        ledger=ledger,
    )


def parse_delta(
    text: str, offered: Iterable[int], ledger: Ledger, limits: LedgerLimits = LIMITS
) -> Delta:
    """Decode and check a model's delta against what it was offered.

    The whole answer must be one JSON object of the delta schema (a single fenced
    ```json block around it is accepted; nothing else is parsed out of prose).

    Raises:
        LedgerError: ``ledger_delta_invalid``; its location is the reason: ``not_json``,
            ``schema``, ``too_many_entries``, ``text_bounds``, ``status``,
            ``cites_bounds``, ``cites_not_offered``, ``unknown_entry``,
            ``kind_changed``, ``duplicate_update``.
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group("body").strip()
    if not body.startswith("{"):
        raise LedgerError(
            "the answer is not one JSON object", code="ledger_delta_invalid", location="not_json"
        )
    try:
        delta = _delta_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise LedgerError(
            f"the delta breaks its schema: {exc}", code="ledger_delta_invalid", location="schema"
        ) from None
    except msgspec.DecodeError as exc:
        raise LedgerError(
            f"the answer is not JSON: {exc}", code="ledger_delta_invalid", location="not_json"
        ) from None
    if len(delta.entries) > limits.delta_entries:
        raise LedgerError(
            f"more than {limits.delta_entries} entries",
            code="ledger_delta_invalid",
            location="too_many_entries",
        )
    allowed = frozenset(offered)
    known = {entry.id: entry for entry in ledger.entries}
    updated: set[str] = set()
    for position, entry in enumerate(delta.entries):
        problem = _entry_problem(entry, f"entries[{position}]", limits, allowed, known, updated)
        if problem is not None:
            reason, message = problem
            raise LedgerError(message, code="ledger_delta_invalid", location=reason)
        if entry.id is not None:
            updated.add(entry.id)
    return delta


def _entry_problem(
    entry: DeltaEntry,
    where: str,
    limits: LedgerLimits,
    allowed: frozenset[int],
    known: Mapping[str, LedgerEntry],
    updated: set[str],
) -> tuple[str, str] | None:
    """(reason, message) of the first rule of `parse_delta` a delta entry breaks."""
    size = len(entry.text.encode("utf-8"))
    if not entry.text.strip() or size > limits.entry_text_bytes or "\n" in entry.text:
        return "text_bounds", f"{where}: text must be one line of 1-512 bytes"
    statuses = _STATUSES.get(entry.kind)
    if (statuses is None) != (entry.status is None) or (
        statuses is not None and entry.status not in statuses
    ):
        return "status", f"{where}: status {entry.status!r} for a {entry.kind}"
    if not 1 <= len(entry.cites) <= limits.cites_per_entry or len(set(entry.cites)) != len(
        entry.cites
    ):
        return "cites_bounds", f"{where}: 1-{limits.cites_per_entry} distinct cites"
    if not set(entry.cites) <= allowed:
        return "cites_not_offered", f"{where}: cites a record it was not offered"
    if entry.id is not None:
        earlier = known.get(entry.id)
        if earlier is None:
            return "unknown_entry", f"{where}: no entry {entry.id!r} to update"
        if earlier.kind != entry.kind:
            return "kind_changed", f"{where}: {entry.id} is a {earlier.kind}"
        if entry.id in updated:
            return "duplicate_update", f"{where}: {entry.id} updated twice"
    return None


def merge(ledger: Ledger, delta: Delta) -> Ledger:
    """`ledger` with `delta` applied: updates replace an entry's text and status and add
    its new cites; new entries get the next free ids. No earlier entry is dropped."""
    updates = {e.id: e for e in delta.entries if e.id is not None}
    merged = []
    for entry in ledger.entries:
        update = updates.get(entry.id)
        if update is None:
            merged.append(entry)
            continue
        merged.append(
            LedgerEntry(
                id=entry.id,
                kind=entry.kind,
                text=update.text.strip(),
                status=update.status,
                cites=tuple(sorted(set(entry.cites) | set(update.cites))),
            )
        )
    number = max((int(e.id[1:]) for e in ledger.entries), default=0)
    for new in delta.entries:
        if new.id is not None:
            continue
        number += 1
        merged.append(
            LedgerEntry(
                id=f"e{number}",
                kind=new.kind,
                text=new.text.strip(),
                status=new.status,
                cites=tuple(sorted(new.cites)),
            )
        )
    return Ledger(entries=tuple(merged))


def latest_cite(entry: LedgerEntry) -> int:
    return max(entry.cites)


def _ordered(entries: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    """By latest cited ordinal ascending, then by id number (stable and total)."""
    return sorted(entries, key=lambda e: (latest_cite(e), int(e.id[1:])))


def render(generation: Generation) -> str:
    """The ledger as the cold reader sees it: one line per entry, oldest source first,
    each citing its records by packed id."""
    lines = [
        f"{LEDGER_HEADER} generation={generation.number}:{generation.id[:16]}>",
        "Entries kept from earlier in this conversation, oldest source first. A [c12] "
        "names retained record c12.",
    ]
    for entry in _ordered(generation.ledger.entries):
        title = _TITLES[entry.kind] + (f": {entry.status}" if entry.status else "")
        cites = ", ".join(f"c{c}" for c in entry.cites)
        lines.append(f"- [{title}] {entry.text} [{cites}]")
    if not generation.ledger.entries:
        lines.append("- (no entries)")
    lines.append("</continuity-ledger>")
    return "\n".join(lines)


def render_tokens(generation: Generation) -> int:
    """``ceil(chars / 4)`` of the rendered ledger."""
    return -(-len(render(generation)) // 4)


def is_ledger(text: str) -> bool:
    return text.startswith(LEDGER_HEADER)


def check_ledger(ledger: Ledger, *, location: str, limits: LedgerLimits = LIMITS) -> Ledger:
    """A ledger read back from disk, checked as strictly as a delta: a row that breaks
    the schema fails closed, never passes as authentic.

    Raises:
        LedgerError: ``ledger_store_corrupt`` at `location`.
    """
    seen: set[str] = set()
    for entry in ledger.entries:
        statuses = _STATUSES.get(entry.kind)
        problems = [
            not _ENTRY_ID.fullmatch(entry.id) or entry.id in seen,
            (statuses is None) != (entry.status is None),
            statuses is not None and entry.status not in statuses,
            not entry.cites or list(entry.cites) != sorted(set(entry.cites)),
            any(c < 1 for c in entry.cites),
            len(entry.text.encode("utf-8")) > limits.entry_text_bytes,
        ]
        if any(problems):
            raise LedgerError(
                f"ledger entry {entry.id!r} breaks the ledger schema",
                code="ledger_store_corrupt",
                location=location,
            )
        seen.add(entry.id)
    if ledger.schema != LEDGER_SCHEMA:
        raise LedgerError(
            f"unknown ledger schema {ledger.schema!r}",
            code="ledger_store_corrupt",
            location=location,
        )
    return ledger
