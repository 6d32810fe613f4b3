"""Upkeep source admission: closed, bounded descriptors; oversized writes refused;
corrupt rows fail closed."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from continuity.errors import LedgerError
from continuity.memory.upkeep_sources import (
    DESCRIPTOR_MAX_BYTES,
    INPUT_ID_MAX_BYTES,
    METADATA_MAX_BYTES,
    SAFE_INTEGER,
    SCAN_ROW_CAP,
    SourceDescriptor,
    admit,
    decode_row,
    encode_descriptor,
    worst_case_descriptor_bytes,
)

DIGEST = "ab" * 32


def _admit(**change: Any) -> SourceDescriptor:
    fields: dict[str, Any] = {
        "ordinal": 7,
        "kind": "tool",
        "input_id": "entry-0042",
        "digest": DIGEST,
        "size": 120,
        "origin": "email_read",
        "tool_kind": "email",
        "attestation": None,
    }
    return admit(**{**fields, **change})


def test_a_record_is_admitted_as_a_closed_descriptor() -> None:
    descriptor = _admit(input_id="  entre\u0301e  ")
    assert descriptor.input_id == "entr\u00e9e"  # NFC, stripped
    assert decode_row(encode_descriptor(descriptor), location="row") == descriptor


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"origin": "o" * (METADATA_MAX_BYTES + 1)}, "ledger_source_oversized"),
        ({"tool_kind": "\u00e9" * 257}, "ledger_source_oversized"),  # 514 UTF-8 bytes
        ({"attestation": "h" * 600}, "ledger_source_oversized"),
        ({"input_id": "i" * (INPUT_ID_MAX_BYTES + 1)}, "ledger_source_oversized"),
        ({"input_id": "   "}, "ledger_source_corrupt"),
        ({"input_id": "entry\x07"}, "ledger_source_corrupt"),
        ({"digest": "AB" * 32}, "ledger_source_corrupt"),
        ({"digest": "ab" * 31}, "ledger_source_corrupt"),
        ({"ordinal": 0}, "ledger_source_corrupt"),
        ({"ordinal": SAFE_INTEGER + 1}, "ledger_source_corrupt"),
        ({"size": -1}, "ledger_source_corrupt"),
        ({"kind": "owner", "tool_kind": "email"}, "ledger_source_corrupt"),
    ],
)
def test_admission_refuses_a_value_outside_its_bounds(change: dict[str, Any], code: str) -> None:
    with pytest.raises(LedgerError) as refused:
        _admit(**change)
    assert refused.value.code == code


def test_the_largest_admissible_descriptor_stays_under_36_kib_even_escaped_sixfold() -> None:
    bound = worst_case_descriptor_bytes()
    assert bound < DESCRIPTOR_MAX_BYTES < SCAN_ROW_CAP
    # A real descriptor at every bound, with strings JSON must escape: under the bound.
    worst = _admit(
        ordinal=SAFE_INTEGER,
        size=SAFE_INTEGER,
        revision=SAFE_INTEGER,
        input_id='"' * INPUT_ID_MAX_BYTES,
        origin="\x01" * METADATA_MAX_BYTES,
        tool_kind="\\" * METADATA_MAX_BYTES,
        attestation="\x1f" * METADATA_MAX_BYTES,
    )
    assert len(encode_descriptor(worst)) <= bound


def test_an_oversized_encoding_is_refused_before_it_is_written() -> None:
    forged = SourceDescriptor(
        ordinal=1, kind="tool", input_id="x" * 40_000, digest=DIGEST, revision=1, bytes=1
    )
    with pytest.raises(LedgerError) as refused:
        encode_descriptor(forged)
    assert refused.value.code == "ledger_source_oversized"


@pytest.mark.parametrize(
    "row",
    [
        b"{" + b" " * SCAN_ROW_CAP + b"}",  # over the scan cap
        b"not json",
        msgspec.json.encode({"schema": "continuity-upkeep-source-v1", "ordinal": 1}),
        msgspec.json.encode(
            {
                "schema": "continuity-upkeep-source-v1",
                "ordinal": 1,
                "kind": "tool",
                "input_id": "e",
                "digest": DIGEST,
                "revision": 1,
                "bytes": 1,
                "note": "an extra key",
            }
        ),
        msgspec.json.encode(
            {
                "schema": "continuity-upkeep-source-v1",
                "ordinal": 1,
                "kind": "tool",
                "input_id": "e" * 5_000,
                "digest": DIGEST,
                "revision": 1,
                "bytes": 1,
            }
        ),
    ],
)
def test_a_corrupt_row_fails_closed(row: bytes) -> None:
    with pytest.raises(LedgerError) as refused:
        decode_row(row, location="ledger.sqlite3:sources[1]")
    assert refused.value.code == "ledger_source_corrupt"
    assert refused.value.location == "ledger.sqlite3:sources[1]"
