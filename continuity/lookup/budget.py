"""The lookup budget's caps and the seed's formulas that derive a budget from paths.

- calls = max(path calls) + 2, capped at min(96, 100 - 2);
- bytes = max(path bytes) + 2 x the largest serialized response, rounded up to KiB and
  capped at 8 MiB.

The seed's own frozen example (a maximum path of 6 calls / 61,718 bytes and a largest
response of 32,608 bytes) gives 8 calls and 126,976 bytes.

The caps are also the meter's limits while a reference path is measured, so this module
is part of what a measured path's key binds (`continuity.runner.inventory_paths`); the
classifier (`continuity.lookup.classify`) is not.
"""

from __future__ import annotations

__all__ = ["BYTE_CAP", "CALL_CAP", "KIB", "budget_from_paths"]

CALL_CAP = min(96, 100 - 2)
BYTE_CAP = 8 * 1024 * 1024
KIB = 1024


def budget_from_paths(max_calls: int, max_bytes: int, largest_response: int) -> tuple[int, int]:
    """The seed's budget formulas: (calls, bytes)."""
    calls = min(max_calls + 2, CALL_CAP)
    raw = max_bytes + 2 * largest_response
    return calls, min(-(-raw // KIB) * KIB, BYTE_CAP)
