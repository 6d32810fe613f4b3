"""Live input: owner messages offered while a run is in progress (steers).

An offer is attributed to the owner only when the offering channel binds `owner_text`
to exactly the offered text, as the product's web channel does for owner-authored
steers; any other offer is recorded as ``unknown``. Offers wait in a queue until the
agent loop drains them into the next model request.
"""

from __future__ import annotations

import collections
from typing import Literal

import msgspec

__all__ = ["LiveInput", "LiveOffer"]


class LiveOffer(msgspec.Struct, frozen=True):
    seq: int
    text: str
    attribution: Literal["owner", "unknown"]
    in_flight_call: str | None


class LiveInput:
    def __init__(self) -> None:
        self._queue: collections.deque[LiveOffer] = collections.deque()
        self.log: list[LiveOffer] = []
        self.in_flight_call: str | None = None

    def offer(self, text: str, *, owner_text: str | None = None) -> LiveOffer:
        attribution: Literal["owner", "unknown"] = (
            "owner" if owner_text is not None and owner_text == text else "unknown"
        )
        offer = LiveOffer(len(self.log) + 1, text, attribution, self.in_flight_call)
        self.log.append(offer)
        self._queue.append(offer)
        return offer

    def drain(self) -> list[LiveOffer]:
        offers = list(self._queue)
        self._queue.clear()
        return offers
