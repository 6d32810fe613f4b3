"""The guard's own fetch: the only way a guarded request reaches the network.

`GuardTransport` is the httpx transport of the guarded provider's client. The guard
arms it with one admission (`Armed`: the permit, the admitted body digest, the URL and
the cache key) just before the provider sends. On entry it latches synchronously,
before any await, so a second entry (overlapping or later) can never send again. Then,
still before anything is consumed, it checks

1. that it was armed at all (a fetch without admission is an integrity stop);
2. the URL, against the contract's;
3. every header name, against `continuity.spend.contract.SEND_HEADERS` (an unknown
   header stops without sending), and the ``session-id`` / ``x-client-request-id``
   values: with a declared cache key both must be present and carry exactly it, without
   one neither may be sent (``lookup_prompt_cache_key_forbidden``);
4. the final body (decoded when ``content-encoding`` is gzip) against the admission
   digest: a mismatch is ``lookup_body_mismatch``, whatever the permit source checks;

then consumes the permit once and calls the construction-time single-shot `Send` once:
one httpx request, no retry wrapper, no redirects. Every refusal here is an
``integrity_stop`` (the hold is kept and the pilot stops); the guard settles and stops.
The guarantee is at most one send per permit, not that every admission sends.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from continuity.errors import SpendError
from continuity.spend.contract import SEND_HEADERS
from continuity.spend.payload import body_digest
from continuity.spend.permits import Permit, PermitSource

__all__ = ["Armed", "GuardTransport", "Send"]

Send = Callable[[httpx.Request], Awaitable[httpx.Response]]


@dataclass
class Armed:
    """One admitted request, waiting for its single fetch."""

    permit: Permit
    digest: str
    url: str
    cache_key: str | None
    sent: bool = False


def _decoded(request: httpx.Request) -> bytes | None:
    encoding = request.headers.get("content-encoding", "identity").lower()
    body = request.content
    if encoding == "identity":
        return body
    if encoding == "gzip":
        try:
            return gzip.decompress(body)
        except (OSError, EOFError, zlib.error):
            return None
    return None  # an encoding the guard cannot read cannot be compared


class GuardTransport(httpx.AsyncBaseTransport):
    """Latched, checked, consumed, then sent once."""

    def __init__(self, send: Send | None, permits: PermitSource) -> None:
        # The single-shot send: one request through a plain HTTP transport with no
        # retries (transports never follow redirects), unless a test supplies its own.
        self._inner = httpx.AsyncHTTPTransport(retries=0) if send is None else None
        self._send = send or self._inner.handle_async_request  # type: ignore[union-attr]
        self._permits = permits
        self._armed: Armed | None = None
        self.entries = 0
        self.sends = 0

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()

    def arm(self, armed: Armed) -> None:
        self._armed = armed

    def disarm(self) -> Armed | None:
        armed, self._armed = self._armed, None
        return armed

    def _check(self, armed: Armed, request: httpx.Request) -> None:
        if str(request.url) != armed.url:
            raise SpendError(
                f"the request goes to {request.url}, not the contract's {armed.url}",
                code="lookup_url_mismatch",
                location="fetch.url",
                outcome="integrity_stop",
            )
        framing = {
            "host": request.url.netloc.decode("ascii"),
            "content-length": str(len(request.content)),
        }
        for name, value in request.headers.items():
            if framing.get(name.lower()) == value:
                continue  # HTTP framing httpx derives from the URL and the body
            if name.lower() not in SEND_HEADERS:
                raise SpendError(
                    f"header {name.lower()!r} is not allowed",
                    code="lookup_header_forbidden",
                    location=f"fetch.headers.{name.lower()}",
                    outcome="integrity_stop",
                )
        for name in ("session-id", "x-client-request-id"):
            # with a declared key both headers carry exactly it; without one, neither
            if request.headers.get(name) != armed.cache_key:
                raise SpendError(
                    f"header {name} is missing or not the declared cache key",
                    code="lookup_prompt_cache_key_forbidden",
                    location=f"fetch.headers.{name}",
                    outcome="integrity_stop",
                )
        body = _decoded(request)
        if body is None or body_digest(body) != armed.digest:
            raise SpendError(
                "the final body differs from the admitted payload",
                code="lookup_body_mismatch",
                location="fetch.body",
                outcome="integrity_stop",
            )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        # The latch: taken before any await, so overlapping entries see it.
        self.entries += 1
        armed, self._armed = self._armed, None
        if armed is None:
            error = SpendError(
                "a fetch entered without an admission (or a second time for one)",
                code="lookup_fetch_unadmitted",
                location="fetch",
                outcome="integrity_stop",
            )
            try:  # no permit to settle: the stop is awaited here, before rejecting
                await self._permits.stop(error.code)
            except Exception as exc:  # kept as the stop cause
                error.stop_code, error.stop_cause = "lookup_stop_failed", exc
            raise error
        self._check(armed, request)
        try:
            await self._permits.consume(armed.permit, armed.digest)
        except SpendError as exc:
            exc.outcome = "integrity_stop"
            raise
        armed.sent = True
        self.sends += 1
        return await self._send(request)
