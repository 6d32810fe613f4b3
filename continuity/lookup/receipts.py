"""The lookup records a probe request and its witness carry: the evaluator-only sources,
the per-probe lookup binding, and the content-free reference paths and witness (light: no
MCP imports). The lookup probe helpers, the source annotation, the runner and the probe
child share them."""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.lookup.state import MeterState, ReaderStop

__all__ = [
    "LookupBinding",
    "LookupWitness",
    "PathReceipt",
    "SourceRef",
]


class SourceRef(msgspec.Struct, frozen=True):
    """Evaluator-only: one answer-bearing source (a literal tool-identifier value, the
    source line holding it, and the UTF-8 size and blake3 digest of the whole tool
    output). Never sent to a reader; never persisted in a witness."""

    value: str
    line: str
    digest: str
    size: int


class LookupBinding(msgspec.Struct, frozen=True, kw_only=True):
    """Lookup mode for one probe: the budget, the bound soul, the deadlines and the
    sources. ``reference`` runs the evaluator's reference path instead of the reader
    (to measure the sizing inventory)."""

    mode: Literal["reader", "reference"] = "reader"
    call_budget: int
    byte_budget: int
    soul_sha256: str
    soul_core_sha256: str
    sources: list[SourceRef] = msgspec.field(default_factory=list)
    # The scripted reader binding: its reader and alternate provider:model.
    models: tuple[str, str] | None = None
    probe_deadline: float = 600.0
    cleanup_seconds: float = 60.0
    turn_safety_seconds: float = 690.0
    witness_path: str | None = None


class PathReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """The reference path of one source (content-free)."""

    discovered: bool
    verified: bool
    displayed: bool  # the source's packed id was in the first request
    calls: int
    bytes: int
    responses: list[int]


class LookupWitness(msgspec.Struct, frozen=True, kw_only=True):
    """What a lookup probe did: ids, digests, counts and classifications only.

    Sealed in the unit, so deterministic: the probe's wall time differs between two
    builds of one unit and is in its `ProcessReceipt` instead. (A unit written before
    this has an ``elapsed_seconds`` here; decoding ignores it.)"""

    meter: MeterState
    reader_stopped: ReaderStop | None
    records_returned: list[str]  # record ids fully returned (every page)
    sources_returned: int  # sources fully returned with a verified digest
    first_request_bytes: int
    deadline_exceeded: bool = False
    soul_sha256: str = ""
    sources: int = 0  # annotated sources of the probe (evaluator-side count only)
    paths: list[PathReceipt] = msgspec.field(default_factory=list)
