"""The pilot's plan and its journal: slots, configuration, report, the seeded schedule.

`seeded_schedule` keeps the conversation/probe blocks in their first-seen order and
interleaves the roles of each block by a seeded sha256 rank, so one seed always gives
one order and the roles take turns across seeds. The controller's `Journal` is
append-only JSON lines, each synced before the call returns, in a private file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from continuity.errors import SpendError
from continuity.spend.assumptions import ASSUMED_V1, Assumptions
from continuity.spend.authorization import Bindings
from continuity.spend.receipts import PilotCounts, SlotReceipt
from continuity.spend.safety import ResolvedSettings

__all__ = ["Journal", "PilotConfig", "PilotReport", "PilotSlot", "seeded_schedule"]


class PilotSlot(msgspec.Struct, frozen=True, kw_only=True):
    slot_id: str
    role: str
    block: str  # the conversation/probe pair the slot belongs to
    question: str
    arm: str = "native-lookup"  # a prepared-boundary arm (safety.BOUNDARY_ARMS)
    context: tuple[str, ...] = ()  # the conversation the preparation child restores
    history_url: str | None = None  # this slot's ConversationHistory, else the config's
    source: str = ""  # what the configured preparer builds the boundary from
    # the interpreter of the slot's role's registered build, which runs both of its
    # children (None: this controller's own, as the faux smoke and the tests run them)
    python: str | None = None
    # the preparation module that build holds, when it is not the config's `preparer`
    # (a build exported before the pilot's preparer moved holds an earlier name)
    preparer: str | None = None


class PilotConfig(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    root: str  # the consumed output root (private; the lease is in it)
    slots: tuple[PilotSlot, ...]
    seed: int
    cap: str  # USD
    base_url: str  # the registered endpoint (``http://127.0.0.1:<port>/v1`` in tests)
    credentials: str
    history_url: str  # the registered ConversationHistory (MCP) endpoint
    # a real-domain pilot: the authorization's exact bytes and what they must bind
    authorization: bytes | None = None
    bindings: Bindings | None = None
    registration: str | None = None  # the pilot registration's path (its sha256 is bound)
    # each arm's resolved harness settings (`continuity.lookup.pilot_settings`): checked
    # at the controller's entry and handed to its children, which check them again
    settings: tuple[ResolvedSettings, ...] = ()
    # what the crash recovery before the lease found (`Recovery.summary`): journaled
    recovery: dict[str, int] = msgspec.field(default_factory=dict)
    # the probe child's module: the pilot child's checks over the project's harness
    # (`continuity.sampling.pilot_probe`; named by the pilot's entry, a layer above)
    prober: str
    # the credential-free preparation child's module (`continuity.spend.preparation`)
    preparer: str = "continuity.spend.preparation"
    # the registry the pilot reserves by, and the reader's effort (its guard contract)
    assumptions: Assumptions = ASSUMED_V1
    effort: str = "high"
    ready_timeout: float = 20.0
    message_timeout: float = 30.0
    request_timeout: float = 600.0  # a consumed request streams until its own deadline
    exit_timeout: float = 10.0


class PilotReport(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    epoch: str
    stop: str | None
    cap: str
    total: str
    counts: PilotCounts
    receipts: list[SlotReceipt]


def seeded_schedule(slots: Sequence[PilotSlot], seed: int) -> list[PilotSlot]:
    """Blocks in their first-seen order; within a block, roles by seeded sha256 rank."""
    blocks: dict[str, list[PilotSlot]] = {}
    for slot in slots:
        blocks.setdefault(slot.block, []).append(slot)

    def rank(slot: PilotSlot) -> str:
        return hashlib.sha256(f"{seed}\0{slot.block}\0{slot.role}".encode()).hexdigest()

    return [slot for block in blocks.values() for slot in sorted(block, key=rank)]


class Journal:
    """The controller's append-only, synced journal (JSON lines, private)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, event: str, **fields: Any) -> None:
        """Append and sync one event.

        Raises:
            SpendError: ``lookup_journal_failed`` (the event is not known to be on disk:
                a sticky stop).
        """
        line = json.dumps({"event": event, **fields}, sort_keys=True).encode() + b"\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise SpendError(
                f"the controller journal cannot be written ({exc.strerror})",
                code="lookup_journal_failed",
                location=event,
                outcome="integrity_stop",
            ) from None
