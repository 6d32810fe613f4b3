"""The sole real-send factory of a pilot probe child. A real-domain probe child
(`continuity.spend.pilot_child`) mints its one send here from the controller's grant
(`RealGrant`, `mint_granted`), behind the release gate (`continuity.spend.gate`) of
`doit compare_pilot`.

`mint_real_send` refuses to mint unless every check holds. CI or debug variables must be
absent, even empty ones (``lookup_pilot_environment_refused``). The authorization bytes
must pass the shared validator (`continuity.spend.authorization.validate_authorization`)
against the registered bindings and the local account. The consumption must be bound to
exactly those bytes and that id: the claim's raw sha256 and authorization id, and the
output root's marker, which must carry the same claim (``lookup_consumption_invalid``).
The child's parent must be the claim's live controller, by PID and start identity
(``lookup_parent_mismatch``). The prepared boundary's record must still be the one
verified (``lookup_preparation_invalid``).

The send it returns is PID-bound (a forked copy refuses: ``lookup_unguarded_dispatch``).
Before each request it re-checks the preparation record and requires the account header
to match the salted commitment (``lookup_account_substituted``: no header, or another
account's), in the provider's account header (``chatgpt-account-id`` by default). It
then makes one request through a retry-free transport that never
follows a redirect. The guard in front of it (`continuity.spend.guard`) keeps its
contract: one consumed, unsettled hold per request, checked against the body digest. A
401, 403, 429 or usage limit is a sticky stop.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path

import httpx
import msgspec

from continuity.errors import SpendError
from continuity.spend.authorization import (
    ACCOUNT_HEADER,
    Bindings,
    check_account_header,
    validate_authorization,
)
from continuity.spend.consumption import CONSUMED_MARKER, REAL_DOMAIN, Claim
from continuity.spend.lease import process_start
from continuity.spend.preparation import Prepared, still_prepared
from continuity.spend.private import read_private
from continuity.spend.transport import Send

__all__ = ["ACCOUNT_HEADER", "RealGrant", "mint_granted", "mint_real_send"]

_REFUSED_VARIABLES = ("CI", "CONTINUITY_DEBUG")


class RealGrant(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the controller hands a real-domain probe child so it can mint its own send:
    the authorization's exact bytes, the bindings they must carry and the consumption
    claim (the child re-validates all of it; none of it is a capability on its own)."""

    raw_authorization: bytes
    bindings: Bindings
    claim: Claim
    account_header: str = ACCOUNT_HEADER  # the provider's (`contract.ACCOUNT_HEADERS`)


def _marker_claim(root: Path) -> dict[str, object]:
    data = read_private(root / CONSUMED_MARKER)
    try:
        value = json.loads(data) if data is not None else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise SpendError(
            "the consumption marker is not sound",
            code="lookup_consumption_invalid",
            location="marker",
            outcome="refused_pre_send",
        )
    return value


def mint_real_send(
    *,
    raw_authorization: bytes,
    expected: Bindings,
    claim: Claim,
    prepared: Prepared,
    environ: Mapping[str, str] | None = None,
    domain: str = REAL_DOMAIN,
    account_header: str = ACCOUNT_HEADER,
) -> tuple[Send, httpx.AsyncHTTPTransport]:
    """The PID-bound real send and the transport it owns (the caller closes it).

    Raises:
        SpendError: the module docstring's codes and the validator's.
    """
    environ = os.environ if environ is None else environ
    for name in _REFUSED_VARIABLES:
        if name in environ:
            raise SpendError(
                f"{name} is set: the real send is refused",
                code="lookup_pilot_environment_refused",
                location=name,
                outcome="refused_pre_send",
            )
    handle = validate_authorization(raw_authorization, expected=expected, domain=domain)
    bound = (handle.authorization_id, handle.raw_sha256) == (
        claim.authorization_id,
        claim.raw_sha256,
    )
    root = Path(claim.output_root)
    marker = _marker_claim(root)
    same_marker = all(
        hmac.compare_digest(str(marker.get(field)), str(getattr(claim, field)))
        for field in Claim.__dataclass_fields__
    )
    if not (bound and same_marker):
        raise SpendError(
            "the consumption is not bound to these authorization bytes",
            code="lookup_consumption_invalid",
            location="claim",
            outcome="refused_pre_send",
        )
    parent = os.getppid()
    if parent != claim.controller_pid or process_start(parent) != claim.controller_start:
        raise SpendError(
            "the parent is not the claim's live controller",
            code="lookup_parent_mismatch",
            location="parent",
            outcome="refused_pre_send",
        )
    still_prepared(root, prepared)
    pid = os.getpid()
    transport = httpx.AsyncHTTPTransport(retries=0)

    async def send(request: httpx.Request) -> httpx.Response:
        if os.getpid() != pid:
            raise SpendError(
                "the send was minted for another process",
                code="lookup_unguarded_dispatch",
                location="send",
                outcome="refused_pre_send",
            )
        still_prepared(root, prepared)
        check_account_header(raw_authorization, request.headers.get(account_header))
        return await transport.handle_async_request(request)

    return send, transport


def mint_granted(grant: RealGrant, prepared: Prepared) -> tuple[Send, httpx.AsyncHTTPTransport]:
    """`mint_real_send` over a controller's `grant`, in this process's real environment."""
    return mint_real_send(
        raw_authorization=grant.raw_authorization,
        expected=grant.bindings,
        claim=grant.claim,
        prepared=prepared,
        account_header=grant.account_header,
    )
