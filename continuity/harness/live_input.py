"""Live input: owner messages offered while a run is in progress (steers).

An offer is attributed to the owner only when the offering channel binds `owner_text`
to exactly the offered text, as the product's web channel does for owner-authored
steers; any other offer is recorded as ``unknown``. Offers wait in a queue until the
agent loop drains them into the next model request.

With a `SteerInbox` (`continuity.harness.steer_inbox`), offers that carry a steer id
are queued durably instead, and the inbox's unconsumed steers (including those offered
by another process, or before this one started) are drained with the in-memory ones;
the loop records the request that consumed each (`consumed`).
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from continuity.harness.steer_inbox import SteerInbox

__all__ = ["LiveInput", "LiveOffer"]


class LiveOffer(msgspec.Struct, frozen=True):
    seq: int
    text: str
    attribution: Literal["owner", "unknown"]
    in_flight_call: str | None
    steer_id: str | None = None  # set for a durable steer (from the inbox)


class LiveInput:
    def __init__(self, inbox: SteerInbox | None = None) -> None:
        self._queue: collections.deque[LiveOffer] = collections.deque()
        self.log: list[LiveOffer] = []
        self.in_flight_call: str | None = None
        self.inbox = inbox

    def offer(
        self, text: str, *, owner_text: str | None = None, steer_id: str | None = None
    ) -> LiveOffer:
        attribution: Literal["owner", "unknown"] = (
            "owner" if owner_text is not None and owner_text == text else "unknown"
        )
        offer = LiveOffer(len(self.log) + 1, text, attribution, self.in_flight_call, steer_id)
        self.log.append(offer)
        if self.inbox is not None and steer_id is not None:
            self.inbox.offer(steer_id, text, owner_text=owner_text)  # durable before return
        else:
            self._queue.append(offer)
        return offer

    def drain(self) -> list[LiveOffer]:
        offers = list(self._queue)
        self._queue.clear()
        if self.inbox is not None:
            offers += [
                LiveOffer(row.seq, row.text, row.attribution, None, row.steer_id)
                for row in self.inbox.pending()
            ]
        return offers

    def consumed(self, offer: LiveOffer, request: str) -> None:
        """`request` consumed the durable steer `offer` (a no-op for in-memory offers)."""
        if self.inbox is not None and offer.steer_id is not None:
            self.inbox.consume(offer.steer_id, request)
