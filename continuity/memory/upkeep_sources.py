"""Upkeep sources: the retained records ledger upkeep may offer to an extractor, as
bounded, closed descriptors.

A source is a retained record (an owner turn or a tool result), described by a
`SourceDescriptor` with closed keys: its ordinal (the record's sequence number), kind,
the attested input id (the session entry it was retained from), the blake3 digest of
its text, a revision, its size and three optional metadata strings (origin, tool kind,
attestation). Admission is bounded before anything is written (`admit`):

- each metadata string is at most 512 UTF-8 bytes (`safe_metadata`);
- the input id is NFC-normalised, stripped and at most 4,096 bytes (`normalize_id`);
- the digest is 64 hex characters, and integers are safe (at most 2**53 - 1);
- the encoded descriptor is under 36 KiB: even sixfold JSON escaping of every string
  plus the fixed keys stays below it (`worst_case_descriptor_bytes`), well under the
  scan's 64 KiB row cap.

A write over a bound is refused (``ledger_source_oversized``) before publication. A
row read back that is over the scan cap, does not decode, breaks a bound or whose
digest no longer matches the retained text fails closed (``ledger_source_corrupt``):
it is never accepted as authentic source metadata.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

import msgspec

from continuity.errors import LedgerError

__all__ = [
    "DESCRIPTOR_MAX_BYTES",
    "INPUT_ID_MAX_BYTES",
    "METADATA_MAX_BYTES",
    "SAFE_INTEGER",
    "SCAN_ROW_CAP",
    "SOURCE_SCHEMA",
    "SourceDescriptor",
    "admit",
    "decode_row",
    "encode_descriptor",
    "normalize_id",
    "safe_metadata",
    "worst_case_descriptor_bytes",
]

SOURCE_SCHEMA = "continuity-upkeep-source-v1"
METADATA_MAX_BYTES = 512
INPUT_ID_MAX_BYTES = 4096
DESCRIPTOR_MAX_BYTES = 36 * 1024
SCAN_ROW_CAP = 64 * 1024
SAFE_INTEGER = 2**53 - 1
_HEX64 = re.compile(r"[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class SourceDescriptor(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    schema: Literal["continuity-upkeep-source-v1"] = "continuity-upkeep-source-v1"
    ordinal: int
    kind: Literal["owner", "tool"]
    input_id: str
    digest: str
    revision: int
    bytes: int
    origin: str | None = None  # owner | steer | the tool's name
    tool_kind: str | None = None
    attestation: str | None = None  # "host" when the host classified the record


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(SourceDescriptor)


def safe_metadata(value: str | None, *, location: str) -> str | None:
    """An optional metadata string: None or empty stays None; more than 512 UTF-8 bytes
    is refused (never truncated: a cut identifier would name something else).

    Raises:
        LedgerError: ``ledger_source_oversized``.
    """
    if not value:
        return None
    if len(value.encode("utf-8")) > METADATA_MAX_BYTES:
        raise LedgerError(
            f"a metadata string over {METADATA_MAX_BYTES} bytes",
            code="ledger_source_oversized",
            location=location,
        )
    return value


def normalize_id(value: str, *, location: str) -> str:
    """The attested input id: NFC, stripped, 1 to 4,096 UTF-8 bytes.

    Raises:
        LedgerError: ``ledger_source_oversized`` over 4,096 bytes; ``ledger_source_corrupt``
            when it is empty or holds a control character.
    """
    normal = unicodedata.normalize("NFC", value).strip()
    if len(normal.encode("utf-8")) > INPUT_ID_MAX_BYTES:
        raise LedgerError(
            f"an input id over {INPUT_ID_MAX_BYTES} bytes",
            code="ledger_source_oversized",
            location=location,
        )
    if not normal or _CONTROL.search(normal):
        raise LedgerError(
            "an input id must be non-empty text without control characters",
            code="ledger_source_corrupt",
            location=location,
        )
    return normal


def _check(descriptor: SourceDescriptor, *, location: str, code: str) -> SourceDescriptor:
    problems = [
        not 1 <= descriptor.ordinal <= SAFE_INTEGER,
        not 1 <= descriptor.revision <= SAFE_INTEGER,
        not 0 <= descriptor.bytes <= SAFE_INTEGER,
        not _HEX64.fullmatch(descriptor.digest),
        descriptor.kind == "owner" and descriptor.tool_kind is not None,
    ]
    problems.extend(
        value is not None and len(value.encode("utf-8")) > METADATA_MAX_BYTES
        for value in (descriptor.origin, descriptor.tool_kind, descriptor.attestation)
    )
    problems.append(len(descriptor.input_id.encode("utf-8")) > INPUT_ID_MAX_BYTES)
    if any(problems):
        raise LedgerError("a source descriptor breaks its bounds", code=code, location=location)
    return descriptor


def admit(
    *,
    ordinal: int,
    kind: Literal["owner", "tool"],
    input_id: str,
    digest: str,
    size: int,
    origin: str | None,
    tool_kind: str | None,
    attestation: str | None,
    revision: int = 1,
) -> SourceDescriptor:
    """A bounded descriptor for one retained record, checked before it is written.

    Raises:
        LedgerError: ``ledger_source_oversized`` for a string over its bound,
            ``ledger_source_corrupt`` for an impossible value.
    """
    where = f"source {ordinal}"
    descriptor = SourceDescriptor(
        ordinal=ordinal,
        kind=kind,
        input_id=normalize_id(input_id, location=where),
        digest=digest,
        revision=revision,
        bytes=size,
        origin=safe_metadata(origin, location=where),
        tool_kind=safe_metadata(tool_kind, location=where),
        attestation=safe_metadata(attestation, location=where),
    )
    _check(descriptor, location=where, code="ledger_source_corrupt")
    encode_descriptor(descriptor)  # the size bound, before anything is written
    return descriptor


def encode_descriptor(descriptor: SourceDescriptor) -> bytes:
    """Raises: LedgerError ``ledger_source_oversized`` at 36 KiB or more."""
    data = _encoder.encode(descriptor)
    if len(data) >= DESCRIPTOR_MAX_BYTES:
        raise LedgerError(
            f"a descriptor of {len(data):,} bytes (the bound is under {DESCRIPTOR_MAX_BYTES:,})",
            code="ledger_source_oversized",
            location=f"source {descriptor.ordinal}",
        )
    return data


def decode_row(data: bytes, *, location: str) -> SourceDescriptor:
    """A descriptor row read back from disk.

    Raises:
        LedgerError: ``ledger_source_corrupt`` for a row over the 64 KiB scan cap, one
            that does not decode into the closed schema, or one that breaks a bound.
    """
    if len(data) > SCAN_ROW_CAP:
        raise LedgerError(
            f"a source row of {len(data):,} bytes is over the {SCAN_ROW_CAP:,}-byte scan cap",
            code="ledger_source_corrupt",
            location=location,
        )
    try:
        descriptor = _decoder.decode(data)
    except msgspec.MsgspecError as exc:
        raise LedgerError(
            f"a source row does not decode: {exc}", code="ledger_source_corrupt", location=location
        ) from None
    return _check(descriptor, location=location, code="ledger_source_corrupt")


def worst_case_descriptor_bytes() -> int:
    """The largest descriptor admission allows, every string escaped sixfold (``\\u00XX``
    for each byte): the fixed keys and schema, three 512-byte metadata strings, a
    4,096-byte input id, a 64-hex digest and three safe integers."""
    skeleton = SourceDescriptor(
        ordinal=SAFE_INTEGER,
        kind="owner",
        input_id="",
        digest="0" * 64,
        revision=SAFE_INTEGER,
        bytes=SAFE_INTEGER,
        origin="",
        tool_kind="",
        attestation="",
    )
    strings = 3 * METADATA_MAX_BYTES + INPUT_ID_MAX_BYTES
    return len(_encoder.encode(skeleton)) + 6 * strings
