"""The single release gate of the capped real lookup route (seed 000, "Child-authorized
pilot construction").

`LOOKUP_PILOT_REAL_ROUTE_ENABLED` is the only switch. While it is False,
`require_real_route` refuses with ``lookup_pilot_real_route_unavailable``, and `doit
compare_pilot` calls it before it reads any file an argument names, takes a lease or
creates any output.

The configured-process smoke (`doit pilot_smoke`) proves the controller/child flow on
loopback, and the route behind the gate (`continuity.roles.pilot_run`) runs a
registered pilot end to end in tests. It stays closed because the route opens only for
a reader whose readiness is fully known (an enforced output cap, a known input envelope,
known prices), and the guard's only contract (``lookup-guard-v1``) and the registered
assumptions (assumed-v1) serve one reader, Sol on its subscription backend, which takes
no output cap. Opened, the route still refuses any reader that is not ready
(``lookup_pilot_reader_not_ready``).
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
            "the capped real lookup route is not open in this revision: no reader its "
            "guard serves has a fully known readiness (Sol's subscription backend takes "
            "no output cap; see the README's release gate)",
            code="lookup_pilot_real_route_unavailable",
            location=where,
        )
