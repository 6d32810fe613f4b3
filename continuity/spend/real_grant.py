"""What a real-domain probe child is handed: the controller's grant (`RealGrant`) and
what it was told of its own slot (`RealSlot`). Plain data, never a capability: the sole
real-send factory (`continuity.spend.real_send`) re-derives and re-checks every part of
both before it mints. The controller imports this module, never the factory.
"""

from __future__ import annotations

import msgspec

from continuity.spend.assumptions import Assumptions
from continuity.spend.authorization import ACCOUNT_HEADER, Bindings
from continuity.spend.consumption import Claim

__all__ = ["RealGrant", "RealSlot"]


class RealGrant(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the controller hands a real-domain probe child so it can mint its own send:
    the authorization's exact bytes, the bindings they must carry, the consumption claim
    and the pilot registration's path (whose raw sha256 the bindings carry). The child
    re-validates all of it; none of it is a capability on its own."""

    raw_authorization: bytes
    bindings: Bindings
    claim: Claim
    registration: str  # the pilot registration file, absolute
    account_header: str = ACCOUNT_HEADER  # the provider's (`contract.ACCOUNT_HEADERS`)


class RealSlot(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a probe child was told of its slot: its id, role and arm, the IPC epoch, its
    transport cache key and the run's whole assignment, and the plan it runs (the
    registry it reserves by, the reader's effort). The factory checks each against the
    registration, the claim and the assignment."""

    slot_id: str
    role: str
    arm: str
    epoch: str
    cache_key: str
    assigned: dict[str, str]
    assumptions: Assumptions
    effort: str
