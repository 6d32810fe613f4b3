"""The single release gate of the capped real lookup route (seed 000, "Child-authorized
pilot construction").

`LOOKUP_PILOT_REAL_ROUTE_ENABLED` is the only switch. It stays False until the
configured-process smoke proves the complete controller and child flow against loopback
servers (spend controller II). While it is False, `require_real_route` refuses with
``lookup_pilot_real_route_unavailable``, and `doit compare_pilot` calls it before it
reads any file an argument names, takes a lease or creates any output.
"""

from __future__ import annotations

from continuity.errors import SpendError

__all__ = ["LOOKUP_PILOT_REAL_ROUTE_ENABLED", "require_real_route"]

LOOKUP_PILOT_REAL_ROUTE_ENABLED = False


def require_real_route(where: str = "compare_pilot") -> None:
    """Refuse while the gate is closed.

    Raises:
        SpendError: ``lookup_pilot_real_route_unavailable``.
    """
    if not LOOKUP_PILOT_REAL_ROUTE_ENABLED:
        raise SpendError(
            "the capped real lookup route is not open in this revision: the pilot "
            "controller and its configured-process smoke are not built yet (see the "
            "README's Spending caps)",
            code="lookup_pilot_real_route_unavailable",
            location=where,
        )
