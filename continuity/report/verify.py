"""Verification of one unit file before it counts in a report.

A unit must decode (``unit_malformed``), its content must match its digest
(``unit_tampered``), its key must be the key its own fields produce
(``unit_key_mismatch``), and it must agree with what the store knows (``unit_tampered``):
its probes are the probes its key binds, its trace id and family those of the trace its
key binds, and, when the store holds the unit, its content is the stored copy's.

A unit key binds the code digest of the unit code (`continuity.runner.units.build.UNIT_CODE`),
so a unit sealed before that code changed (a file moved, a line edited) no longer has
the key the current code gives its fields. Such a unit still counts when the store's
action entry for its key holds the same unit: the same key fields (so the key is the
one the runner gave these fields) and exactly the same content (else
``unit_tampered``). A unit whose key fields were edited is ``unit_key_mismatch``, as is
an old unit the store does not hold.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from continuity.arms import ARMS
from continuity.digest import value_digest
from continuity.errors import AggregateError
from continuity.runner.units.build import UnitRecord, content_digest, unit_key
from continuity.store import Store

__all__ = ["TraceHead", "decode_unit", "verify_unit"]


class TraceHead(msgspec.Struct):
    """The fields of a stored trace a unit's identity is checked against."""

    trace_id: str
    family: str


def decode_unit(path: Path, data: bytes) -> UnitRecord:
    """A unit file's record, refused if it does not decode (``unit_malformed``) or its
    content does not match its digest (``unit_tampered``)."""
    try:
        record = msgspec.json.decode(data, type=UnitRecord)
    except msgspec.MsgspecError as exc:
        raise AggregateError(
            f"not a unit record: {exc}", code="unit_malformed", location=str(path)
        ) from None
    if content_digest(record) != record.content_digest and not _sealed_as_written(
        data, record.content_digest
    ):
        raise AggregateError(
            "the unit's content does not match its digest", code="unit_tampered", location=str(path)
        )
    return record


def _sealed_as_written(data: bytes, digest: str) -> bool:
    """Whether a unit file's JSON, as written, reproduces `digest`. A unit sealed before
    a field moved out of the sealed content (a lookup witness's ``elapsed_seconds``, a
    call receipt's ``cached``) decodes without that field, so its re-encoded record no
    longer gives the digest it was sealed with; its own bytes still do."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.MsgspecError:
        return False
    if not isinstance(raw, dict) or not isinstance(raw.get("content_digest"), str):
        return False
    raw["content_digest"] = ""
    return value_digest(("continuity-unit", msgspec.json.encode(raw))) == digest


def _check_against_store(
    store: Store, path: Path, record: UnitRecord, heads: dict[str, TraceHead | None]
) -> None:
    """A resealed edit passes the digest check (anyone can recompute a digest), so the
    unit is also checked against what the store knows: its probes must be the probes
    its key binds, its trace id and family those of the trace its key binds, and, when
    the store holds this unit, its content must be the stored unit's content."""

    if Counter(p.probe_id for p in record.probes) != Counter(record.probe_ids):
        raise AggregateError(
            "the unit's probes are not the probes its key binds",
            code="unit_tampered",
            location=str(path),
        )
    if record.trace_key not in heads:  # one read per trace, not per unit
        stored_trace = store.load_output(record.trace_key)
        try:
            heads[record.trace_key] = (
                msgspec.json.decode(stored_trace, type=TraceHead) if stored_trace else None
            )
        except msgspec.MsgspecError:
            heads[record.trace_key] = None
    head = heads[record.trace_key]
    if head is not None and (head.trace_id, head.family) != (record.trace_id, record.family):
        raise AggregateError(
            f"the unit names trace {record.trace_id} ({record.family}); its trace key "
            f"is {head.trace_id} ({head.family})",
            code="unit_tampered",
            location=str(path),
        )
    stored_unit = store.load_output(record.key)
    if stored_unit is not None:
        try:
            digest = msgspec.json.decode(stored_unit, type=UnitRecord).content_digest
        except msgspec.MsgspecError:
            digest = None
        if digest is not None and digest != record.content_digest:
            raise AggregateError(
                "the unit's content differs from the store's copy of this unit",
                code="unit_tampered",
                location=str(path),
            )


def _key_fields(record: UnitRecord) -> tuple[Any, ...]:
    """What a unit key binds besides the code digest."""
    return (
        record.repeat,
        record.trace_key,
        record.arm,
        record.checkpoint,
        record.probe_ids,
        record.binding,
        record.probe_protocol,
        record.agent,
    )


def _current_key(record: UnitRecord) -> str | None:
    """The key the current unit code gives the unit's fields (None for an unknown arm).
    An outside agent's unit has its own key (`continuity.runner.agent_units`)."""
    if record.agent is not UNSET:
        # Imported here: the agent runner brings the MCP SDK, which aggregating the
        # reference arms' units never needs.
        from continuity.runner.agent_units import agent_unit_key

        return agent_unit_key(
            record.repeat,
            record.trace_key,
            record.arm,
            record.agent,
            record.probe_ids,
            record.binding,
        )
    arm = ARMS.get(record.arm)
    if arm is None:
        return None
    return unit_key(
        record.repeat,
        record.trace_key,
        arm,
        record.checkpoint,
        record.probe_ids,
        record.binding,
        record.probe_protocol,
    )


def _sealed_by_older_code(store: Store, path: Path, record: UnitRecord, data: bytes) -> None:
    """Accept a unit whose key is not the current code's key of its fields when the
    store's action entry for that key holds this very unit (see the module doc).

    Raises:
        AggregateError: ``unit_key_mismatch`` when the store holds no unit under the key
            or one with other key fields; ``unit_tampered`` when it holds the unit with
            other content.
    """
    stored = store.load_output(record.key)
    try:
        original = msgspec.json.decode(stored, type=UnitRecord) if stored is not None else None
    except msgspec.MsgspecError:
        original = None
    if (
        original is None
        or (ARMS.get(record.arm) is None and record.agent is UNSET)
        or original.key != record.key
        or _key_fields(original) != _key_fields(record)
    ):
        raise AggregateError(
            "the unit's key is not the key of its content",
            code="unit_key_mismatch",
            location=str(path),
        )
    assert stored is not None
    if msgspec.json.decode(stored) != msgspec.json.decode(data):
        raise AggregateError(
            "the unit's content differs from the store's copy of this unit",
            code="unit_tampered",
            location=str(path),
        )


def verify_unit(
    path: Path, data: bytes, store: Store, heads: dict[str, TraceHead | None]
) -> UnitRecord:
    """The verified record of the unit file at `path` holding `data`; `heads` caches the
    stored traces' identities across calls.

    Raises:
        AggregateError: ``unit_malformed``, ``unit_tampered`` or ``unit_key_mismatch``
            (see the module doc).
    """
    record = decode_unit(path, data)
    if _current_key(record) != record.key:
        _sealed_by_older_code(store, path, record, data)
    _check_against_store(store, path, record, heads)
    return record
