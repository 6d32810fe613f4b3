"""The canonical history store: the text messages of a conversation, beside the session.

Only owner and assistant text is kept (no tool results), in order, with attribution.
A model-change reseed rebuilds context from its last 64 text messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Literal

import msgspec

from continuity.errors import SessionCorrupt

__all__ = ["CanonicalHistory", "HistoryRecord"]


class HistoryRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seq: int
    role: Literal["user", "assistant"]
    text: str
    attribution: str
    source: str
    entry_id: str


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(HistoryRecord)


class CanonicalHistory:
    """Append-only JSONL of `HistoryRecord`s."""

    def __init__(self, path: Path, records: list[HistoryRecord]) -> None:
        self.path = path
        self.records = records
        self._handle: BinaryIO | None = None  # opened on the first append

    @classmethod
    def create(cls, path: Path) -> CanonicalHistory:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=False)
        return cls(path, [])

    @classmethod
    def load(cls, path: Path) -> CanonicalHistory:
        records = []
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            try:
                records.append(_decoder.decode(line))
            except msgspec.MsgspecError as exc:
                raise SessionCorrupt(str(exc), location=f"{path}:{number}") from None
        return cls(path, records)

    def append(
        self,
        role: Literal["user", "assistant"],
        text: str,
        *,
        attribution: str,
        source: str,
        entry_id: str,
    ) -> HistoryRecord:
        record = HistoryRecord(len(self.records) + 1, role, text, attribution, source, entry_id)
        if self._handle is None:
            self._handle = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        self._handle.write(_encoder.encode(record) + b"\n")
        self._handle.flush()
        self.records.append(record)
        return record

    def last(self, count: int) -> list[HistoryRecord]:
        return self.records[-count:] if count else []

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
