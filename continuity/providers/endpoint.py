"""A real model binding, as plain data (light: the probe request carries it)."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

from continuity.messages import Usage


def is_loopback(base_url: str) -> bool:
    """Whether `base_url` names this machine (``localhost`` or a loopback address): a
    local server, which needs no API key and bills nobody."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


__all__ = ["CallReceipt", "EndpointKind", "EndpointSpec", "RealBinding", "is_loopback"]

EndpointKind = Literal["openai-chat", "openai-responses", "anthropic"]


class EndpointSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One real model binding. Everything but the credentials path and the execution
    knobs (retries, concurrency, slots, timeouts) enters the call-cache key."""

    kind: EndpointKind
    base_url: str
    model: str  # the model name sent on the wire
    credentials_path: str  # "" for a loopback endpoint without credentials: no key is sent
    effort: str | None = None  # reasoning effort; None: not sent
    max_output_tokens: int = 4096
    max_retries: int = 3
    max_retry_after: float = 120.0
    concurrency: int = 4
    slots_dir: str | None = None
    # --request-timeout: the longest wait for the server's next bytes, the first ones
    # included (a slow local prefill sends nothing until it is done).
    timeout: float = 1800.0
    catalog_ref: str = ""  # the plan's provider:model, for list prices (not in any key)
    # The run's cost-cap account (`continuity.providers.costcap`) and the invocation that
    # opened it: every attempt is held there before it is sent. Execution only.
    cost_account: str | None = None
    cost_invocation: str = ""
    # The run's attempt log (`continuity.providers.attempts`), <out>/attempts.jsonl.
    attempt_log: str | None = None

    @property
    def provider_name(self) -> str:
        return self.kind

    def generation(self) -> dict[str, Any]:
        """The generation config (part of the call-cache key)."""
        return {"effort": self.effort, "max_output_tokens": self.max_output_tokens}


class RealBinding(msgspec.Struct, frozen=True, kw_only=True):
    """What a probe process needs to call a real model: the reader endpoint, the store
    holding the call cache, the repeat index, the invocation's ledger and, optionally,
    where to log call-key explanations."""

    endpoint: EndpointSpec
    store_root: str
    repeat: int
    ledger: str | None = None
    explain_log: str | None = None


class CallReceipt(msgspec.Struct, frozen=True, omit_defaults=True):
    """Content-free evidence of one call made (or replayed) by a probe.

    Sealed in units and checkpoints, so deterministic: whether the call was replayed
    from the call cache differs between two builds of one key, so it is not here (the
    replayed keys are kept beside the artifact: `ProcessReceipt.replayed_calls` and the
    unit's and checkpoint's action-entry meta). A receipt written before this has a
    ``cached`` field; decoding ignores it."""

    key: str
    role: Literal["answer", "summary", "judge", "upkeep"]
    served_model: str
    usage: Usage
    # False when the server reported no usage (llama-cpp-python streams none): `usage`
    # then holds zeros that mean unknown. Left out when True, so older receipts encode
    # as they did.
    usage_reported: bool = True
    # The catalog model the call bills as when it is not its unit's reader (an outside
    # agent's switch arm: the model it switched to); "" (left out): the reader.
    billed_as: str = ""
