"""What a pilot controller tells its probe child (`continuity.spend.pilot_child`): data
only, so the controller never imports the child or the real-send factory it reaches."""

from __future__ import annotations

import msgspec

from continuity.spend.assumptions import ASSUMED_V1, Assumptions
from continuity.spend.preparation import Prepared
from continuity.spend.real_grant import RealGrant
from continuity.spend.safety import ResolvedSettings

__all__ = ["ChildConfig"]


class ChildConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    fd: int
    run_id: str
    epoch: str
    slot_id: str
    cache_key: str
    assigned: dict[str, str]  # every slot's key: the child checks membership, uniqueness
    role: str = ""  # the slot's registered role (a real-domain child's factory checks it)
    # its arm's resolved harness settings (`continuity.lookup.pilot_settings`, by the
    # pilot's entry): checked before ready, at construction, dispatch and every request
    settings: ResolvedSettings
    controller_pid: int
    controller_start: str
    root: str
    account: str
    base_url: str
    allowed: tuple[tuple[str, int], ...]  # (host, port): the endpoint's and the history's
    credentials: str
    question: str
    history_url: str  # the registered loopback ConversationHistory (MCP)
    prepared: Prepared  # the journaled preparation tuple this probe verifies and restores
    real: RealGrant | None = None  # a real-domain pilot: the child mints the real send
    assumptions: Assumptions = ASSUMED_V1  # the registry the pilot reserves by
    effort: str = "high"
    arm: str = "native-lookup"
    timeout: float = 30.0
