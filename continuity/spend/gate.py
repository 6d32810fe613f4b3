"""The single release gate of the capped real lookup route.

`LOOKUP_PILOT_REAL_ROUTE_ENABLED` below is the only switch, and the only place its state
is stated. While it is False, `require_real_route` refuses with
``lookup_pilot_real_route_unavailable``, and `doit compare_pilot` calls it before it
reads any file an argument names, takes a lease or creates any output.

Behind the gate, the route (`continuity.roles.pilot.run`) serves only a reader whose
readiness is fully known (an enforced output cap, a known input envelope, known prices):
a reader on a vendor API that enforces the output cap, registered under
catalog-bounded-v1 (`continuity.spend.assumptions`). Any other reader is refused: Sol on
its subscription backend, which takes no output cap, at the route's readiness step
(``lookup_pilot_reader_not_ready``); a reader no guard contract serves, at its pilot
registration (``lookup_pilot_reader_mismatch``). That includes Anthropic's Messages
API: its readiness is known, but it names no account in a request header, so the real
send's account check (the header equal to the authorization's commitment) could never
hold.
"""

from __future__ import annotations

from continuity.errors import SpendError

__all__ = ["LOOKUP_PILOT_REAL_ROUTE_ENABLED", "require_real_route"]

LOOKUP_PILOT_REAL_ROUTE_ENABLED = True


def require_real_route(where: str = "compare_pilot") -> None:
    """Refuse while the gate is closed.

    Raises:
        SpendError: ``lookup_pilot_real_route_unavailable``.
    """
    if not LOOKUP_PILOT_REAL_ROUTE_ENABLED:
        raise SpendError(
            "the capped real lookup route is closed in this build (the release gate, "
            "continuity.spend.gate)",
            code="lookup_pilot_real_route_unavailable",
            location=where,
        )
