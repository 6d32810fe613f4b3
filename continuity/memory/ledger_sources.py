"""Upkeep sources in the ledger store: retained records admitted as bounded
descriptors (`continuity.memory.upkeep_sources`), and the scan that reads them back,
each row and its digest checked, with their spans.

Admission writes a descriptor for every retained record not yet admitted; one over its
bounds is refused and counted (``source_oversized``), never written. The scan fails
closed (``ledger_source_corrupt``) on any row that is not authentic source metadata.
"""

from __future__ import annotations

import msgspec

from continuity.errors import LedgerError
from continuity.memory.ledger_store import LedgerStore, typed_errors
from continuity.memory.retained import RetainedStore
from continuity.memory.upkeep_selection import Span, spans_of
from continuity.memory.upkeep_sources import (
    SourceDescriptor,
    admit,
    decode_row,
    encode_descriptor,
)

__all__ = ["SourceScan", "admit_sources", "scan_sources"]


class SourceScan(msgspec.Struct, frozen=True, kw_only=True):
    """Every admitted source and its spans, and what admission refused (content-free
    counts of the refusals)."""

    descriptors: tuple[SourceDescriptor, ...]
    spans: tuple[Span, ...]
    oversized: int


@typed_errors
def admit_sources(store: LedgerStore, retained: RetainedStore) -> int:
    """Admit every retained record not yet admitted as a bounded descriptor; return
    how many admission refused as oversized (they are never offered)."""
    admitted = {int(r[0]) for r in store.db.execute("SELECT ordinal FROM sources")}
    refused = 0
    rows = []
    for row in retained.source_rows():
        if row.seq in admitted:
            continue
        try:
            descriptor = admit(
                ordinal=row.seq,
                kind="owner" if row.kind == "owner" else "tool",
                input_id=row.entry_ref,
                digest=row.digest,
                size=row.bytes,
                origin=row.source,
                tool_kind=row.tool_kind or None,
                attestation="host" if row.kind == "owner" else None,
            )
        except LedgerError as exc:
            if exc.code != "ledger_source_oversized":
                raise
            refused += 1
            continue
        rows.append((descriptor.ordinal, encode_descriptor(descriptor)))
    if rows:
        with store.transaction():
            store.db.executemany("INSERT INTO sources VALUES (?, ?)", rows)
    return refused


@typed_errors
def scan_sources(store: LedgerStore, retained: RetainedStore, *, oversized: int = 0) -> SourceScan:
    """Every admitted source with its spans, each row and its digest checked.

    Raises:
        LedgerError: ``ledger_source_corrupt`` for a row over the scan cap, one that
            breaks its schema or bounds, or one whose digest no longer matches the
            retained text (or whose record is gone).
    """
    texts = {row.seq: row for row in retained.source_rows()}
    descriptors = []
    spans: list[Span] = []
    for ordinal, data in store.db.execute(
        "SELECT ordinal, descriptor FROM sources ORDER BY ordinal"
    ):
        where = f"{store.path}:sources[{ordinal}]"
        raw = data if isinstance(data, bytes) else str(data).encode("utf-8")
        descriptor = decode_row(raw, location=where)
        row = texts.get(descriptor.ordinal)
        if descriptor.ordinal != ordinal or row is None or row.digest != descriptor.digest:
            raise LedgerError(
                "a source row does not match its retained record",
                code="ledger_source_corrupt",
                location=where,
            )
        descriptors.append(descriptor)
        spans.extend(spans_of(descriptor, row.text))
    return SourceScan(descriptors=tuple(descriptors), spans=tuple(spans), oversized=oversized)
