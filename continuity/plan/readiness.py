"""Reader readiness: a pure diagnostic of whether a real lookup reader could be bounded.

For the selected reader it reports three components separately, each ``ready``,
``unknown`` or ``unsupported``, and `ReaderReadiness.ready` only when all three are
ready; an unknown or unsupported component blocks. It is never an authorization: no
admission controller reads it, and nothing here dispatches, reserves or admits. There
is no caller-supplied capability override: what a reader supports follows from its
transport and its catalog entry alone.

- **Output cap.** Whether the reader's transport enforces the per-request output cap
  (`continuity.preparation.extractor.enforcement_class`): a vendor API
  (``api.anthropic.com``, ``api.openai.com``) enforces the cap it is sent, within the
  catalog's output limit; any other compatible server may ignore it (unknown); the
  ``openai-codex`` subscription backend the seed names takes no output cap at all
  (unsupported); a provider no adapter here speaks is unknown.
- **Input envelope.** Whether the conservative peak request (plus one turn's output)
  is known to fit the backend's input envelope. Only a vendor API, which refuses an
  over-window request before generating, makes the catalog's context window backend
  evidence: there the peak must fit it (else unsupported); anywhere else, or with no
  known window, the envelope is unknown.
- **Pricing.** Whether the catalog (or genai-prices) has every rate and limit the
  lookup scenarios need (`continuity.plan.exact_price.missing_terms`). Complete prices
  are not billing evidence.

The envelope is reported in tokens and turns (`TokenEnvelope`), never as a dollar
figure against a subscription quota: dollars do not predict quota.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.plan.exact_price import missing_terms
from continuity.plan.plan import DEFAULT_BASE_URLS, Endpoint
from continuity.plan.pricing import ModelPrice

__all__ = [
    "READINESS_NOTE",
    "READINESS_SCHEMA",
    "Component",
    "ReaderReadiness",
    "Status",
    "TokenEnvelope",
    "Transport",
    "reader_readiness",
    "reader_transport",
]

READINESS_SCHEMA = "continuity-reader-readiness-v1"
READINESS_NOTE = (
    "a diagnostic, never an authorization; token and turn envelopes only: dollars do not "
    "predict a subscription quota"
)
Status = Literal["ready", "unknown", "unsupported"]
Transport = Literal["request_cap", "advisory_cap", "scripted_cap", "subscription", "unknown"]
# The provider part of a model id -> the adapter that would carry it at its vendor URL.
_VENDOR_ADAPTERS = {"anthropic": "anthropic", "openai": "openai-responses"}
# Subscription backends that serialize no output cap (the seed's Pi Codex transport).
_SUBSCRIPTIONS = frozenset({"openai-codex"})


class Component(msgspec.Struct, frozen=True, kw_only=True):
    status: Status
    detail: str


class TokenEnvelope(msgspec.Struct, frozen=True, kw_only=True):
    """What one slot asks of the reader (turns and tokens), beside the catalog's limits
    (None: unknown)."""

    turns_per_slot: int
    output_tokens_per_turn: int
    peak_input_tokens: int
    input_tokens_per_slot: int
    context_window: int | None
    output_limit: int | None


class ReaderReadiness(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = READINESS_SCHEMA
    reader: str
    transport: Transport
    output_cap: Component
    input_envelope: Component
    pricing: Component
    envelope: TokenEnvelope
    ready: bool
    note: str = READINESS_NOTE


def reader_transport(reader: str, endpoint: Endpoint | None = None) -> Transport:
    """How the reader's requests would travel: the plan's real `endpoint` when it has
    one, else the adapter its provider names at the vendor's own URL."""
    if endpoint is not None and endpoint.kind != "scripted":
        return _cap_class(endpoint.kind, endpoint.base_url or DEFAULT_BASE_URLS[endpoint.kind])
    provider = reader.partition(":")[0]
    if provider in _SUBSCRIPTIONS:
        return "subscription"
    kind = _VENDOR_ADAPTERS.get(provider)
    return "unknown" if kind is None else _cap_class(kind, DEFAULT_BASE_URLS[kind])


def _cap_class(kind: str, base_url: str) -> Transport:
    from continuity.preparation.extractor import enforcement_class

    return "request_cap" if enforcement_class(kind, base_url) == "request_cap" else "advisory_cap"


def _output_cap(transport: Transport, reader: str, envelope: TokenEnvelope) -> Component:
    limit, wanted = envelope.output_limit, envelope.output_tokens_per_turn
    if transport == "subscription":
        return Component(
            status="unsupported",
            detail=f"the {reader.partition(':')[0]} subscription backend takes no output cap",
        )
    if transport == "advisory_cap":
        return Component(
            status="unknown", detail="a compatible server may ignore the output cap it is sent"
        )
    if transport != "request_cap":
        return Component(
            status="unknown",
            detail=f"no adapter here is known to enforce an output cap for {reader}",
        )
    if not limit:
        return Component(status="unknown", detail="the catalog lists no output limit")
    if wanted > limit:
        return Component(
            status="unsupported",
            detail=f"{wanted:,} output tokens a turn exceed the {limit:,}-token output limit",
        )
    return Component(
        status="ready",
        detail=f"the vendor API enforces the request's output cap (catalog limit {limit:,})",
    )


def _input_envelope(transport: Transport, envelope: TokenEnvelope) -> Component:
    window = envelope.context_window
    if not window:
        return Component(status="unknown", detail="no context window is known for the reader")
    need = envelope.peak_input_tokens + envelope.output_tokens_per_turn
    over = f"; the conservative peak and one turn's output ({need:,} tokens) exceed it"
    if transport != "request_cap":
        return Component(
            status="unknown",
            detail=f"the backend's input envelope is unknown (the catalog's {window:,}-token "
            f"window is not backend evidence{over if need > window else ''})",
        )
    if need > window:
        return Component(
            status="unsupported",
            detail=f"the conservative peak and one turn's output ({need:,} tokens) exceed "
            f"the {window:,}-token window the vendor API enforces",
        )
    return Component(
        status="ready",
        detail=f"the conservative peak and one turn's output ({need:,} tokens) fit the "
        f"{window:,}-token window the vendor API enforces",
    )


def _pricing(price: ModelPrice | None) -> Component:
    missing = missing_terms(price)
    if missing:
        return Component(status="unknown", detail="missing: " + ", ".join(missing))
    return Component(
        status="ready", detail="every rate and limit the scenarios use is known (not billing)"
    )


def reader_readiness(
    reader: str,
    price: ModelPrice | None,
    *,
    turns_per_slot: int,
    output_tokens_per_turn: int,
    peak_input_tokens: int,
    input_tokens_per_slot: int,
    endpoint: Endpoint | None = None,
) -> ReaderReadiness:
    """The readiness of `reader` (priced by `price`, None when nothing prices it) for a
    slot of `turns_per_slot` turns whose largest request is `peak_input_tokens`."""
    transport = reader_transport(reader, endpoint)
    envelope = TokenEnvelope(
        turns_per_slot=turns_per_slot,
        output_tokens_per_turn=output_tokens_per_turn,
        peak_input_tokens=peak_input_tokens,
        input_tokens_per_slot=input_tokens_per_slot,
        context_window=price.context_window if price else None,
        output_limit=price.max_output if price else None,
    )
    output_cap = _output_cap(transport, reader, envelope)
    input_envelope = _input_envelope(transport, envelope)
    pricing = _pricing(price)
    return ReaderReadiness(
        reader=reader,
        transport=transport,
        output_cap=output_cap,
        input_envelope=input_envelope,
        pricing=pricing,
        envelope=envelope,
        ready=all(c.status == "ready" for c in (output_cap, input_envelope, pricing)),
    )
