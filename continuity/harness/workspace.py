"""A harness workspace: the durable roots a conversation lives in.

    <root>/session/session.jsonl    the durable session (JSONL tree)
    <root>/session/history.jsonl    the canonical history store
    <root>/tool-history/            the tool-history sidecar (pins <root>)
    <root>/continuity/retained.sqlite3  retained evidence (store and pack arms only)
    <root>/continuity/ledger.sqlite3    the continuity ledger, its upkeep journal and
                                        admitted sources (a prepared ledger checkpoint)
    <root>/replay.json              the content-free replay receipt

`root` is always absolute: the sidecar pins it, and a copy at another path degrades.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.harness.session import Clock, DurableSession
from continuity.harness.tool_history import ToolHistory
from continuity.memory.history import CanonicalHistory

__all__ = ["Workspace"]


class Workspace(msgspec.Struct, frozen=True):
    root: Path

    @property
    def session_path(self) -> Path:
        return self.root / "session" / "session.jsonl"

    @property
    def history_path(self) -> Path:
        return self.root / "session" / "history.jsonl"

    @property
    def tool_history_dir(self) -> Path:
        return self.root / "tool-history"

    @property
    def retained_path(self) -> Path:
        return self.root / "continuity" / "retained.sqlite3"

    @property
    def ledger_path(self) -> Path:
        return self.root / "continuity" / "ledger.sqlite3"

    @property
    def receipt_path(self) -> Path:
        return self.root / "replay.json"

    @property
    def probe_appends(self) -> tuple[str, ...]:
        """The files (relative to `root`) a probe appends to when it resumes the
        workspace: the session, the canonical history and the tool-history records. A
        probe's fresh copy copies these and hard-links the rest (`harness.template`)."""
        return tuple(
            path.relative_to(self.root).as_posix()
            for path in (self.session_path, self.history_path, self.tool_history_records)
        )

    @property
    def tool_history_records(self) -> Path:
        return self.tool_history_dir / "records.jsonl"

    def create(
        self, *, session_id: str, clock: Clock
    ) -> tuple[DurableSession, CanonicalHistory, ToolHistory]:
        self.root.mkdir(parents=True, exist_ok=True)
        session = DurableSession.create(self.session_path, session_id=session_id, clock=clock)
        history = CanonicalHistory.create(self.history_path)
        tools = ToolHistory.create(self.tool_history_dir, artifact_root=self.root)
        return session, history, tools

    def open(
        self, *, clock: Clock | None = None, durable: bool = True
    ) -> tuple[DurableSession, CanonicalHistory, ToolHistory]:
        """Reopen the durable roots as seen from this path (see `ToolHistory.open`);
        `durable=False` for a throwaway copy, whose session never fsyncs."""
        session = DurableSession.load(self.session_path, clock=clock, durable=durable)
        history = CanonicalHistory.load(self.history_path)
        tools = ToolHistory.open(self.tool_history_dir, artifact_root=self.root)
        return session, history, tools
