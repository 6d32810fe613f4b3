"""The sole real-send factory of a pilot probe child. A real-domain probe child
(`continuity.spend.pilot_child`) mints its one send here from the controller's grant and
what it was told of its slot (`continuity.spend.real_grant`: `RealGrant`, `RealSlot`;
`mint_granted`), behind the release gate (`continuity.spend.gate`) of
`doit compare_pilot`. `continuity.spend.pilot_child` is its only caller: a static
inventory (``tests/spend/test_real_send_callers.py``) fails on any other module of the
package that imports this one or names its factories, and the controller imports only
the grant's types.

`mint_real_send` refuses to mint unless every check holds. CI or debug variables must be
absent, even empty ones (``lookup_pilot_environment_refused``). The authorization bytes
must pass the shared validator (`continuity.spend.authorization.validate_authorization`)
against the registered bindings and the local account. The consumption must be bound to
exactly those bytes and that id: the claim's raw sha256 and authorization id, and the
output root's marker, which must carry the same claim (``lookup_consumption_invalid``).
The factory then re-derives for itself, from the files on disk and the running code,
the child's registered plan, role, build and code, its epoch and exact cache key, and
readiness (`continuity.spend.real_checks.check_registered`: ``lookup_plan_mismatch``,
``lookup_role_mismatch``, ``lookup_build_mismatch``, ``lookup_code_mismatch``,
``lookup_consumption_invalid``, ``lookup_cache_assignment_invalid``,
``lookup_readiness_blocked``). The child's parent must be the claim's live controller,
by PID and start identity (``lookup_parent_mismatch``). The prepared boundary's record
must still be the one verified (``lookup_preparation_invalid``).

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
from continuity.spend.real_checks import check_registered
from continuity.spend.real_grant import RealGrant, RealSlot
from continuity.spend.transport import Send

__all__ = ["ACCOUNT_HEADER", "mint_granted", "mint_real_send"]

_REFUSED_VARIABLES = ("CI", "CONTINUITY_DEBUG")


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
    registration: Path,
    slot: RealSlot,
    environ: Mapping[str, str] | None = None,
    domain: str = REAL_DOMAIN,
    account_header: str = ACCOUNT_HEADER,
) -> tuple[Send, httpx.AsyncHTTPTransport]:
    """The PID-bound real send and the transport it owns (the caller closes it), for the
    pilot registered at `registration` and the child's `slot`.

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
    check_registered(registration, expected, claim, slot)  # what the bytes carry
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


def mint_granted(
    grant: RealGrant, prepared: Prepared, slot: RealSlot
) -> tuple[Send, httpx.AsyncHTTPTransport]:
    """`mint_real_send` over a controller's `grant` for the child's `slot`, in this
    process's real environment."""
    return mint_real_send(
        raw_authorization=grant.raw_authorization,
        expected=grant.bindings,
        claim=grant.claim,
        prepared=prepared,
        registration=Path(grant.registration),
        slot=slot,
        account_header=grant.account_header,
    )
