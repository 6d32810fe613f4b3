"""Content-free lookup meter state (light: probe receipts carry it)."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Cause", "MeterState"]

Cause = Literal["calls", "bytes"]


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
