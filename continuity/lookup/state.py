"""Content-free lookup meter state and reader stops (light: probe receipts carry them)."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Cause", "MeterState", "ReaderStop"]

Cause = Literal["calls", "bytes"]
# Why the scripted lookup reader stopped looking: nothing left to follow, its own call
# budget, or the meter refused a call.
ReaderStop = Literal["done", "budget", "exhausted"]


class MeterState(msgspec.Struct, frozen=True):
    """A content-free account of one probe's lookup."""

    call_budget: int
    byte_budget: int
    calls: int  # dispatched to the upstream server
    refused_calls: int  # refused before dispatch (budget spent or lookup aborted)
    bytes: int  # delivered to the reader
    withheld: int  # responses withheld whole
    responses: list[int]  # the size of every delivered response, in order
    exhausted: Cause | None  # why the lookup was aborted, if it was
