"""What the guard reads from a response: raw terminal events, and the settlement.

`Capture` observes every raw server-sent event of a guarded request before the client
parses it, and keeps the first raw terminal response (``response.completed`` /
``response.incomplete``) or failure (``response.failed`` / ``error``), decoded from the
event's own bytes: no later hook or parser can rewrite what it captured.

`settlement_of` turns a capture into the request's outcome:

- no terminal response: a failed response whose tier is unknown stops
  (``lookup_unknown_tier``); otherwise the request is **lost** (the hold stays);
- an unknown tier: **integrity stop** ``lookup_unknown_tier`` (recorded as null);
- usage that cannot settle: **integrity stop** ``lookup_invalid_usage``;
- no usage: **lost** ``lookup_usage_missing``;
- a settled cost that breaks a registered implication: **integrity stop**
  ``lookup_settlement_violation`` (the cost is kept as the known partial);
- otherwise **settled** at the exact catalog cost.

`GuardedResponses` is the Responses client the guard wraps: it serializes the declared
cache key into the payload (``prompt_cache_key``) and the ``session-id`` /
``x-client-request-id`` headers, names the account the credentials file holds (when it
names one) in the provider's account header (``chatgpt-account-id`` for the Codex
backend, ``openai-project`` for OpenAI's API), and drops httpx's default ``accept-encoding`` and
``connection`` headers, which are not on the send allowlist. `guarded_client` builds the
one a guard sends through for its contract: a provider in `UNCAPPED_PROVIDERS` (the Codex
subscription backend, which refuses the field with HTTP 400 "Unsupported parameter:
max_output_tokens"; the seed's Codex serializer sends none) gets a body without
``max_output_tokens``, every other one the cap the guard is given
(`continuity.spend.output_caps` reads which from the bytes sent).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import msgspec

from continuity.messages import ModelRequest
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.openai import OpenAIResponsesProvider
from continuity.spend.assumptions import Assumptions, tier_multiplier
from continuity.spend.authorization import ACCOUNT_HEADER, account_of
from continuity.spend.contract import GuardContract
from continuity.spend.money import usd_text
from continuity.spend.permits import Settlement
from continuity.spend.usage import (
    UsageRecord,
    catalog_cost,
    raw_settlement,
    settlement_violation,
)

__all__ = [
    "UNCAPPED_PROVIDERS",
    "Capture",
    "GuardedResponses",
    "Outcome",
    "guarded_client",
    "settlement_of",
]

_TERMINAL = frozenset({"response.completed", "response.incomplete"})
_FAILED = frozenset({"response.failed", "error"})
# Providers whose backend takes no output-cap field: their guarded requests carry none.
UNCAPPED_PROVIDERS = frozenset({"openai-codex"})


class Capture:
    """The first raw terminal response or failure of one request's event stream."""

    def __init__(self) -> None:
        self.completed: dict[str, Any] | None = None
        self.failed: dict[str, Any] | None = None

    def __call__(self, event: str, data: str) -> None:
        if self.completed is not None or self.failed is not None:
            return
        try:
            value = msgspec.json.decode(data)
        except msgspec.MsgspecError:
            return
        if not isinstance(value, dict):
            return
        kind = value.get("type", event)
        response = value.get("response")
        if kind in _TERMINAL and isinstance(response, dict):
            self.completed = response
        elif kind in _FAILED:
            self.failed = response if isinstance(response, dict) else value


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    settlement: Settlement
    usage: UsageRecord | None = None
    tier: str | None = None
    message: str = ""
    unusable_reply: bool = False


def _stop(code: str, message: str, **more: Any) -> Outcome:
    return Outcome(settlement=Settlement(kind="integrity_stop", code=code), message=message, **more)


def settlement_of(
    capture: Capture, u: int, hold: Decimal, assumptions: Assumptions, failure: str | None
) -> Outcome:
    """The outcome of an admitted, sent request (`failure`: the stream's own error code)."""
    completed = capture.completed
    if completed is None:
        failed = capture.failed
        if failed is not None and tier_multiplier(assumptions, failed.get("service_tier")) is None:
            return _stop("lookup_unknown_tier", "a failed response reported an unknown tier")
        code = "lookup_response_failed" if failed is not None else failure
        return Outcome(settlement=Settlement(kind="lost", code=code or "lookup_usage_missing"))
    raw = raw_settlement(completed, assumptions)
    if not raw.tier_known:
        return _stop(
            "lookup_unknown_tier", "the response reported an unknown service tier", usage=raw.usage
        )
    if raw.invalid is not None:
        return _stop("lookup_invalid_usage", f"usage cannot settle: {raw.invalid}")
    if raw.usage is None:
        return Outcome(
            settlement=Settlement(kind="lost", code="lookup_usage_missing"), tier=raw.tier
        )
    cost = catalog_cost(raw.usage, raw.tier, assumptions)
    violation = settlement_violation(raw.usage, u, cost, hold, assumptions)
    if violation is not None:
        return Outcome(
            settlement=Settlement(
                kind="integrity_stop", code="lookup_settlement_violation", cost=usd_text(cost)
            ),
            usage=raw.usage,
            tier=raw.tier,
            message=f"a registered assumption failed: {violation}",
        )
    return Outcome(
        settlement=Settlement(kind="settled", cost=usd_text(cost)),
        usage=raw.usage,
        tier=raw.tier,
        unusable_reply=raw.unusable_reply,
    )


class GuardedResponses(OpenAIResponsesProvider):
    """The Responses client under a guard (see the module docstring)."""

    def __init__(
        self,
        spec: EndpointSpec,
        *,
        transport: httpx.AsyncBaseTransport,
        cache_key: str | None,
        account_header: str = ACCOUNT_HEADER,
        output_cap: bool = True,
    ) -> None:
        super().__init__(spec, transport=transport)
        self._cache_key = cache_key
        self._account_header = account_header
        self._output_cap = output_cap
        for name in ("accept-encoding", "connection"):
            del self._client.headers[name]

    def headers(self) -> dict[str, str]:
        headers = super().headers()
        account = account_of(Path(self.spec.credentials_path))
        if account is not None:  # the account the credentials name, read per request
            headers[self._account_header] = account
        if self._cache_key is not None:
            headers["session-id"] = headers["x-client-request-id"] = self._cache_key
        return headers

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        body = super().payload(request)
        if not self._output_cap:
            del body["max_output_tokens"]
        if self._cache_key is not None:
            body["prompt_cache_key"] = self._cache_key
        return body


def guarded_client(
    contract: GuardContract,
    *,
    credentials_path: str,
    max_output_tokens: int,
    timeout: float,
    transport: httpx.AsyncBaseTransport,
) -> GuardedResponses:
    """The Responses client a guard for `contract` sends through (module doc): no
    retries, the contract's model, effort, cache key and account header, and the output
    cap `max_output_tokens` unless the contract's provider takes none."""
    spec = EndpointSpec(
        kind="openai-responses",
        base_url=contract.base_url,
        model=contract.model,
        credentials_path=credentials_path,
        effort=contract.effort,
        max_output_tokens=max_output_tokens,
        max_retries=0,
        timeout=timeout,
    )
    return GuardedResponses(
        spec,
        transport=transport,
        cache_key=contract.prompt_cache_key,
        account_header=contract.account_header,
        output_cap=contract.provider not in UNCAPPED_PROVIDERS,
    )
