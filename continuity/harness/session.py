"""The durable session: an append-only JSONL tree of typed entries.

The file starts with a header line, then one entry per line. Every entry names its
parent, so entries form a tree; the current leaf is the last entry appended (branching
appends a ``branch`` marker under an older entry, so the leaf survives a reload). The
context a model sees is the path from the root to the leaf: message entries in order,
and after a compaction entry its summary followed by the entries it kept.

Lines are flushed as they are appended and fsynced by `sync()` (at the end of a turn),
as Pi's session manager appends without fsync. A session opened with ``durable=False``
(a probe's throwaway copy of a checkpoint, replaced by the next probe's copy and never
read after its own probe) flushes but never fsyncs: nothing in it has to survive a crash.
Entry ids and timestamps come from the caller's clock, so a scripted replay writes
byte-identical sessions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from continuity.errors import SessionCorrupt
from continuity.messages import Message, Usage, UserMessage
from continuity.store import utc_now

__all__ = [
    "SESSION_VERSION",
    "Clock",
    "CompactionEntry",
    "CustomEntry",
    "DurableSession",
    "Entry",
    "MessageEntry",
    "ModelChangeEntry",
    "SessionBoundaryEntry",
    "SessionHeader",
    "recorded_operations",
]

SESSION_VERSION = 1
Clock = Callable[[], str]


class SessionHeader(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="session", tag_field="type"
):
    version: int
    session_id: str
    created_at: str


class _Entry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    id: str
    parent_id: str | None
    timestamp: str


class MessageEntry(_Entry, frozen=True, kw_only=True, tag="message", tag_field="type"):
    message: Message
    provider: str = ""
    model: str = ""
    usage: Usage | None = None
    stop_reason: str | None = None


class ModelChangeEntry(_Entry, frozen=True, kw_only=True, tag="model_change", tag_field="type"):
    provider: str
    model: str
    reason: str = ""


class CompactionEntry(_Entry, frozen=True, kw_only=True, tag="compaction", tag_field="type"):
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class CustomEntry(_Entry, frozen=True, kw_only=True, tag="custom", tag_field="type"):
    custom_type: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class SessionBoundaryEntry(
    _Entry, frozen=True, kw_only=True, tag="session_boundary", tag_field="type"
):
    kind: str
    details: dict[str, Any] = msgspec.field(default_factory=dict)


Entry = MessageEntry | ModelChangeEntry | CompactionEntry | CustomEntry | SessionBoundaryEntry
_Line = SessionHeader | Entry
_decoder = msgspec.json.Decoder(_Line)
_encoder = msgspec.json.Encoder()


class DurableSession:
    """A session file and its in-memory tree. Create with `create`, reopen with `load`."""

    def __init__(
        self,
        path: Path,
        header: SessionHeader,
        entries: list[Entry],
        clock: Clock,
        *,
        durable: bool = True,
    ) -> None:
        self.path = path
        self.durable = durable
        self.header = header
        self.entries = entries
        self.by_id: dict[str, Entry] = {e.id: e for e in entries}
        self.leaf_id: str | None = entries[-1].id if entries else None
        self.clock = clock
        self._handle: BinaryIO | None = None  # opened on the first append

    @classmethod
    def create(cls, path: Path, *, session_id: str, clock: Clock) -> DurableSession:
        path.parent.mkdir(parents=True, exist_ok=True)
        header = SessionHeader(version=SESSION_VERSION, session_id=session_id, created_at=clock())
        with open(path, "xb") as handle:
            handle.write(_encoder.encode(header) + b"\n")
        return cls(path, header, [], clock)

    @classmethod
    def load(
        cls, path: Path, *, clock: Clock | None = None, durable: bool = True
    ) -> DurableSession:
        """Reopen a session file (`durable`: whether `sync` fsyncs).

        Raises:
            SessionCorrupt: a line that does not decode, a missing header, an unknown
                parent or a repeated id (the location names the line).
        """
        try:
            lines = path.read_bytes().splitlines()
        except OSError as exc:
            raise SessionCorrupt(
                f"cannot read session: {exc.strerror}", location=str(path)
            ) from None
        if not lines:
            raise SessionCorrupt("empty session file", location=str(path))
        entries: list[Entry] = []
        seen: set[str] = set()
        header: SessionHeader | None = None
        for number, line in enumerate(lines, start=1):
            try:
                item = _decoder.decode(line)
            except msgspec.MsgspecError as exc:
                raise SessionCorrupt(str(exc), location=f"{path}:{number}") from None
            if number == 1:
                if not isinstance(item, SessionHeader):
                    raise SessionCorrupt("first line is not a session header", location=f"{path}:1")
                if item.version != SESSION_VERSION:
                    raise SessionCorrupt(f"session version {item.version}", location=f"{path}:1")
                header = item
                continue
            if isinstance(item, SessionHeader):
                raise SessionCorrupt("a second header", location=f"{path}:{number}")
            if item.id in seen or (item.parent_id is not None and item.parent_id not in seen):
                raise SessionCorrupt("repeated id or unknown parent", location=f"{path}:{number}")
            seen.add(item.id)
            entries.append(item)
        assert header is not None
        return cls(path, header, entries, clock or utc_now, durable=durable)

    # -- appending -----------------------------------------------------------------------

    def _next(self) -> dict[str, Any]:
        return {
            "id": f"e{len(self.entries) + 1:06d}",
            "parent_id": self.leaf_id,
            "timestamp": self.clock(),
        }

    def _append(self, entry: Entry) -> Entry:
        if self._handle is None:
            self._handle = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        self._handle.write(_encoder.encode(entry) + b"\n")
        self._handle.flush()
        self.entries.append(entry)
        self.by_id[entry.id] = entry
        self.leaf_id = entry.id
        return entry

    def append_message(
        self,
        message: Message,
        *,
        provider: str = "",
        model: str = "",
        usage: Usage | None = None,
        stop_reason: str | None = None,
    ) -> Entry:
        return self._append(
            MessageEntry(
                **self._next(),
                message=message,
                provider=provider,
                model=model,
                usage=usage,
                stop_reason=stop_reason,
            )
        )

    def append_model_change(self, provider: str, model: str, reason: str = "") -> Entry:
        return self._append(
            ModelChangeEntry(**self._next(), provider=provider, model=model, reason=reason)
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: dict[str, Any] | None = None,
    ) -> Entry:
        return self._append(
            CompactionEntry(
                **self._next(),
                summary=summary,
                first_kept_entry_id=first_kept_entry_id,
                tokens_before=tokens_before,
                details=details or {},
            )
        )

    def append_custom(self, custom_type: str, data: dict[str, Any] | None = None) -> Entry:
        return self._append(CustomEntry(**self._next(), custom_type=custom_type, data=data or {}))

    def append_boundary(
        self, kind: str, details: dict[str, Any] | None = None, *, new_root: bool = False
    ) -> Entry:
        """Record a boundary event. With `new_root`, the entry starts a new root: the
        context after it is only what is appended below it (a model-change reseed)."""
        if new_root:
            self.leaf_id = None
        return self._append(SessionBoundaryEntry(**self._next(), kind=kind, details=details or {}))

    def branch(self, entry_id: str) -> Entry:
        """Move the leaf to `entry_id` by appending a branch marker beneath it."""
        if entry_id not in self.by_id:
            raise KeyError(entry_id)
        self.leaf_id = entry_id
        return self.append_custom("branch", {"from": entry_id})

    def sync(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            if self.durable:
                os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self.sync()
            self._handle.close()
            self._handle = None

    def __enter__(self) -> DurableSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------

    def path_to_leaf(self) -> list[Entry]:
        path: list[Entry] = []
        cursor = self.leaf_id
        while cursor is not None:
            entry = self.by_id[cursor]
            path.append(entry)
            cursor = entry.parent_id
        path.reverse()
        return path

    def context(self) -> list[Message]:
        """The messages a model sees at the leaf (Pi's buildSessionContext)."""
        path = self.path_to_leaf()
        compaction_at = max(
            (i for i, e in enumerate(path) if isinstance(e, CompactionEntry)), default=None
        )
        if compaction_at is None:
            return [e.message for e in path if isinstance(e, MessageEntry)]
        compaction = path[compaction_at]
        assert isinstance(compaction, CompactionEntry)
        kept_from = next(
            (i for i, e in enumerate(path) if e.id == compaction.first_kept_entry_id),
            compaction_at,
        )
        summary = UserMessage(
            text=f"<summary>\n{compaction.summary}\n</summary>",
            attribution="host",
            source="summary",
        )
        kept = [e.message for e in path[kept_from:compaction_at] if isinstance(e, MessageEntry)]
        after = [e.message for e in path[compaction_at + 1 :] if isinstance(e, MessageEntry)]
        return [summary, *kept, *after]

    def current_model(self) -> tuple[str, str] | None:
        for entry in reversed(self.path_to_leaf()):
            if isinstance(entry, ModelChangeEntry):
                return entry.provider, entry.model
        return None

    def iter_entries(self, kind: type) -> Iterator[Entry]:
        return (e for e in self.entries if isinstance(e, kind))


def recorded_operations(path: Path, offset: int) -> list[str]:
    """The boundary operations a session file records after byte `offset` (its size
    before they ran), read back from disk: ``restart`` and ``model_change`` boundaries
    and compactions, in order. Evidence is taken from here, not from what the code
    meant to do; only the appended lines are read.

    Raises:
        SessionCorrupt: an appended line does not decode as an entry.
    """
    with open(path, "rb") as handle:
        handle.seek(offset)
        tail = handle.read()
    operations = []
    for number, line in enumerate(tail.splitlines(), start=1):
        try:
            entry = _decoder.decode(line)
        except msgspec.MsgspecError as exc:
            raise SessionCorrupt(str(exc), location=f"{path}:+{number}") from None
        if isinstance(entry, SessionBoundaryEntry) and entry.kind in ("restart", "model_change"):
            operations.append(entry.kind)
        elif isinstance(entry, CompactionEntry):
            operations.append("compaction")
    return operations
