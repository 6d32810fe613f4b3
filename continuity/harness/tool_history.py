"""The tool-history sidecar: one record per tool result, with a retained head.

Each record has an id, the tool, its kind, the result's full byte size and blake3
digest, and the first 16 KiB of the result kept as a file under the sidecar. The
sidecar pins the absolute artifact root it was created under. Opened from any other
root it *degrades*: it serves no records and reports ``history_artifact_root_mismatch``
rather than failing or silently serving files that belong to another copy. Forks that
need it therefore restore the snapshot at the original path (see `checkpoints`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import msgspec

from continuity.digest import digest_bytes
from continuity.errors import SessionCorrupt
from continuity.traces.bounds import RESULT_HEAD_BYTES

__all__ = ["ROOT_MISMATCH", "SIDECAR_SCHEMA", "ToolHistory", "ToolRecord", "log", "retained_head"]

log = logging.getLogger("continuity.harness")

ROOT_MISMATCH = "history_artifact_root_mismatch"
SIDECAR_SCHEMA = "continuity-tool-history-v1"


class ToolRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    record_id: str
    call_id: str
    tool: str
    kind: str
    bytes: int
    digest: str
    retained_bytes: int
    truncated: bool
    path: str  # retained head, relative to the artifact root


class _Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    schema: str
    artifact_root: str


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ToolRecord)


def retained_head(output: str) -> bytes:
    """The first 16 KiB of a result's UTF-8 bytes, never splitting a character."""
    data = output.encode("utf-8")
    if len(data) <= RESULT_HEAD_BYTES:
        return data
    return data[:RESULT_HEAD_BYTES].decode("utf-8", errors="ignore").encode("utf-8")


class ToolHistory:
    """A sidecar directory. `status` is ``ok`` or ``degraded`` (see `warnings`)."""

    def __init__(
        self, directory: Path, artifact_root: Path, pinned_root: str, records: list[ToolRecord]
    ) -> None:
        self.directory = directory
        self.artifact_root = artifact_root
        self.pinned_root = pinned_root
        self._records = records
        self.warnings: list[str] = []
        self.status: Literal["ok", "degraded"] = "ok"
        if pinned_root != str(artifact_root):
            self.status = "degraded"
            self.warnings.append(ROOT_MISMATCH)
            log.warning(
                "tool history pinned to %s opened from %s: %s; continuity is degraded",
                pinned_root,
                artifact_root,
                ROOT_MISMATCH,
            )

    @classmethod
    def create(cls, directory: Path, *, artifact_root: Path) -> ToolHistory:
        root = artifact_root.absolute()
        (directory / "results").mkdir(parents=True, exist_ok=False)
        manifest = _Manifest(SIDECAR_SCHEMA, str(root))
        (directory / "manifest.json").write_bytes(_encoder.encode(manifest) + b"\n")
        (directory / "records.jsonl").touch()
        return cls(directory, root, str(root), [])

    @classmethod
    def open(cls, directory: Path, *, artifact_root: Path) -> ToolHistory:
        """Open a sidecar as seen from `artifact_root` (degraded if it is not the pin).

        Raises:
            SessionCorrupt: the manifest or a record line is unreadable.
        """
        try:
            manifest = msgspec.json.decode(
                (directory / "manifest.json").read_bytes(), type=_Manifest
            )
            lines = (directory / "records.jsonl").read_bytes().splitlines()
            records = [_decoder.decode(line) for line in lines]
        except (OSError, msgspec.MsgspecError) as exc:
            raise SessionCorrupt(
                f"tool history unreadable: {exc}", location=str(directory)
            ) from None
        if manifest.schema != SIDECAR_SCHEMA:
            raise SessionCorrupt(
                f"tool history schema {manifest.schema!r}", location=str(directory)
            )
        return cls(directory, artifact_root.absolute(), manifest.artifact_root, records)

    def record(self, *, call_id: str, tool: str, kind: str, output: str) -> ToolRecord:
        data = output.encode("utf-8")
        head = retained_head(output)
        record_id = f"th-{len(self._records) + 1:04d}"
        relative = (self.directory / "results" / f"{record_id}.txt").relative_to(self.artifact_root)
        (self.artifact_root / relative).write_bytes(head)
        record = ToolRecord(
            record_id=record_id,
            call_id=call_id,
            tool=tool,
            kind=kind,
            bytes=len(data),
            digest=digest_bytes(data),
            retained_bytes=len(head),
            truncated=len(head) < len(data),
            path=relative.as_posix(),
        )
        with open(self.directory / "records.jsonl", "ab") as handle:
            handle.write(_encoder.encode(record) + b"\n")
        self._records.append(record)
        return record

    def records(self) -> list[ToolRecord]:
        """Every record, or none when degraded (the root guard is not bypassed)."""
        return list(self._records) if self.status == "ok" else []

    def retained(self, record: ToolRecord) -> str:
        if self.status != "ok":
            return ""
        return (self.artifact_root / record.path).read_bytes().decode("utf-8")

    @property
    def record_count(self) -> int:
        """How many records exist on disk, degraded or not (content-free statistics)."""
        return len(self._records)
