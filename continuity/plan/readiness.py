"""Reader readiness: a pure diagnostic of whether a real lookup reader could be bounded.

For the selected reader it reports three components separately, each ``ready``,
``unknown`` or ``unsupported``, and `ReaderReadiness.ready` only when all three are
ready; an unknown or unsupported component blocks. It is never an authorization: no
admission controller reads it, and nothing here dispatches, reserves or admits. There
is no caller-supplied capability override: what a reader supports follows from its
transport and its catalog entry alone.

- **Output cap.** Whether the reader's transport enforces the per-request output cap.
  What a back end is sent is read from the bytes its client serializes
  (`continuity.spend.output_caps.cap_evidence`, no list here): a back end whose request
  carries no cap field has an unsupported output cap (the ``openai-codex`` subscription
  backend the seed names: ``subscription``; any other: ``uncapped``). Of those that send
  one (`continuity.preparation.extractor.enforcement_class`), a vendor API
  (``api.anthropic.com``, ``api.openai.com``) enforces the cap it is sent, within the
  catalog's output limit; any other server may ignore it (unknown); a provider no
  adapter here speaks is unknown.
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

**Cap-gated mode** (`cap_gated_readiness`, schema `CAP_GATED_SCHEMA`) is a second,
separate diagnostic for a pilot registration; the ordinary readiness above is unchanged
by it (and stays not ready for the Sol subscription reader). It shows two components
independently: **pricing** (the catalog entry has every rate and limit a pilot's
reservation needs, `continuity.plan.pilot_catalog.pilot_missing_terms`, and agrees with
the registered assumptions) and **assumptions** (the registry is assumed-v1, its Rmax
its own, its model the reader). The output cap and input envelope are *assumed*
(assumed-v1 bounds them, settlement checks them). Only an `Attestation`
(`continuity.plan.attestation`: the pilot's own authorization, validated by the shared
validator against this registration's bindings and bound to this descriptor) can
promote them to ready, and only when pricing and assumptions are ready. So the status
is

- ``blocked``: pricing or assumptions not ready; their codes are the blockers, whatever
  the attestation (incomplete pricing still blocks);
- ``awaiting_authorization``: no attestation, or one refused; the sole blocker is
  `AUTHORIZATION_REQUIRED` (``lookup_authorization_required``), never unsupported caps
  mixed with missing authorization, and the refusal's code is the ``attestation``
  part's;
- ``ready``: the attestation validated; no blocker, both assumed components ready.

It is a diagnostic, never dispatch authority: nothing reads it to admit or send, and
validating an authorization does not consume it.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.errors import SpendError
from continuity.plan.attestation import Attestation, check_attestation
from continuity.plan.exact_price import missing_terms
from continuity.plan.pilot_catalog import catalog_binding, pilot_missing_terms
from continuity.plan.plan import DEFAULT_BASE_URLS, Endpoint
from continuity.plan.pricing import ModelPrice
from continuity.spend import output_caps
from continuity.spend.assumptions import CATALOG_BOUNDED_VERSION, Assumptions
from continuity.spend.descriptor import PILOT_MODE, assumptions_refusal, pricing_refusal

__all__ = [
    "AUTHORIZATION_REQUIRED",
    "CAP_GATED_NOTE",
    "CAP_GATED_SCHEMA",
    "READINESS_NOTE",
    "READINESS_SCHEMA",
    "AssumedComponent",
    "AttestationCheck",
    "CapGatedReadiness",
    "CapGatedStatus",
    "Component",
    "ReaderReadiness",
    "Status",
    "TokenEnvelope",
    "Transport",
    "cap_gated_readiness",
    "reader_readiness",
    "reader_transport",
]

READINESS_SCHEMA = "continuity-reader-readiness-v1"
READINESS_NOTE = (
    "a diagnostic, never an authorization; token and turn envelopes only: dollars do not "
    "predict a subscription quota"
)
Status = Literal["ready", "unknown", "unsupported"]
CAP_GATED_SCHEMA = "continuity-cap-gated-readiness-v1"
CAP_GATED_NOTE = (
    "cap-gated diagnostic, never dispatch authority: pricing and the registered "
    "assumptions are shown apart; only a validated, descriptor-bound attestation (the "
    "pilot's authorization) can promote the assumed output cap and input envelope"
)
AUTHORIZATION_REQUIRED = "lookup_authorization_required"
CapGatedStatus = Literal["blocked", "awaiting_authorization", "ready"]
Transport = Literal[
    "request_cap", "advisory_cap", "scripted_cap", "subscription", "uncapped", "unknown"
]
# The provider part of a model id -> the back end that would carry it at its own URL
# (`continuity.spend.output_caps.BACKENDS`).
_BACKENDS = {"anthropic": "anthropic", "openai": "openai-responses", "openai-codex": "openai-codex"}


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
    one, else the back end its provider names at that back end's own URL."""
    if endpoint is not None and endpoint.kind != "scripted":
        return _cap_class(endpoint.kind, endpoint.base_url or DEFAULT_BASE_URLS[endpoint.kind])
    backend = _BACKENDS.get(reader.partition(":")[0])
    if backend is None:
        return "unknown"
    return _cap_class(backend, output_caps.cap_evidence(backend).url)


def _cap_class(backend: str, base_url: str) -> Transport:
    """The transport class of `backend` at `base_url`: first what its serialized request
    carries (`output_caps.cap_evidence`), then whether that host enforces it."""
    from continuity.preparation.extractor import enforcement_class

    evidence = output_caps.cap_evidence(backend)
    if not evidence.fields:
        return "subscription" if evidence.subscription else "uncapped"
    return (
        "request_cap" if enforcement_class(backend, base_url) == "request_cap" else "advisory_cap"
    )


def _output_cap(transport: Transport, reader: str, envelope: TokenEnvelope) -> Component:
    limit, wanted = envelope.output_limit, envelope.output_tokens_per_turn
    if transport in ("subscription", "uncapped"):
        backend = "subscription backend" if transport == "subscription" else "back end"
        return Component(
            status="unsupported",
            detail=f"the {reader.partition(':')[0]} {backend} takes no output cap (its "
            "serialized request carries none)",
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
    ignored_cap: str | None = None,
) -> ReaderReadiness:
    """The readiness of `reader` (priced by `price`, None when nothing prices it) for a
    slot of `turns_per_slot` turns whose largest request is `peak_input_tokens`.
    `ignored_cap` is what the store recorded when the reader's endpoint was seen to write
    past its output cap (`continuity.providers.endpoint_facts`): its output cap is then
    unknown, whatever its transport."""
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
    if ignored_cap is not None:
        output_cap = Component(
            status="unknown",
            detail=f"provider_output_cap_ignored: the endpoint wrote past its cap ({ignored_cap})",
        )
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


class AssumedComponent(msgspec.Struct, frozen=True, kw_only=True):
    """A component the registered assumptions bound but nothing here proves: assumed,
    or ready once a validated, descriptor-bound attestation promoted it."""

    status: Literal["assumed", "ready"] = "assumed"
    detail: str


class AttestationCheck(msgspec.Struct, frozen=True, kw_only=True):
    """What an offered attestation came to: validated (its id and raw sha256, nothing
    secret) or refused with the refusal's stable `code` (`continuity.plan.attestation`)."""

    status: Literal["validated", "refused"]
    code: str | None = None
    detail: str


class CapGatedReadiness(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = CAP_GATED_SCHEMA
    mode: str = PILOT_MODE
    reader: str
    pricing: Component
    assumptions: Component
    output_cap: AssumedComponent
    input_envelope: AssumedComponent
    status: CapGatedStatus
    blockers: list[str]
    attestation: AttestationCheck | None = None  # None: none was offered
    note: str = CAP_GATED_NOTE


def _pilot_pricing(reader: str, price: ModelPrice | None, registry: Assumptions) -> Component:
    missing = pilot_missing_terms(price)
    if missing:
        return Component(status="unknown", detail="missing: " + ", ".join(missing))
    refusal = pricing_refusal(catalog_binding(reader, price), registry)
    if refusal is not None:
        return Component(status="unsupported", detail=f"{refusal.code}: {refusal.message}")
    return Component(
        status="ready",
        detail="every rate and limit a reservation needs is known and is the registry's "
        "(not billing)",
    )


def _pilot_assumptions(reader: str, registry: Assumptions) -> Component:
    refusal = assumptions_refusal(registry, reader)
    if refusal is not None:
        return Component(status="unsupported", detail=f"{refusal.code}: {refusal.message}")
    return Component(
        status="ready",
        detail=f"{registry.version} as registered, Rmax ${registry.rmax} (assumptions, not "
        "backend evidence)",
    )


def _blocker(component: Component, missing_code: str) -> str | None:
    """The code a component that is not ready blocks with (its detail's code, if any)."""
    if component.status == "ready":
        return None
    if component.status == "unknown":
        return missing_code
    return component.detail.partition(":")[0]


def _assumed_cap(registry: Assumptions) -> str:
    if registry.version == CATALOG_BOUNDED_VERSION:
        return (
            f"at most {registry.max_output:,} output tokens a request (catalog-bounded-v1: "
            "sent as max_output_tokens, which the vendor API enforces; checked at settlement)"
        )
    return (
        f"at most {registry.max_output:,} output tokens a request "
        "(assumed-v1; checked at settlement, not enforced by the backend)"
    )


def _attested(reader: str, registry: Assumptions, attestation: Attestation) -> AttestationCheck:
    try:
        handle = check_attestation(attestation, reader, registry)
    except SpendError as exc:
        return AttestationCheck(
            status="refused", code=exc.code, detail=f"{exc.code}: {exc.message} ({exc.location})"
        )
    return AttestationCheck(
        status="validated",
        detail=f"authorization {handle.authorization_id} (raw sha256 {handle.raw_sha256}) "
        "validated against this registration's bindings and bound to its descriptor "
        "(not consumed)",
    )


def _promoted(component: AssumedComponent) -> AssumedComponent:
    return AssumedComponent(
        status="ready",
        detail=f"{component.detail}; promoted by the validated authorization bound to this "
        "descriptor",
    )


def cap_gated_readiness(
    reader: str,
    price: ModelPrice | None,
    registry: Assumptions,
    attestation: Attestation | None = None,
) -> CapGatedReadiness:
    """The cap-gated diagnostic of `reader` priced by `price` under `registry` (see the
    module doc): `attestation`, when it validates and pricing and assumptions are ready,
    promotes the assumed output cap and input envelope to ready."""
    pricing = _pilot_pricing(reader, price, registry)
    assumptions = _pilot_assumptions(reader, registry)
    blockers = [
        code
        for code in (
            _blocker(pricing, "lookup_pilot_prices_missing"),
            _blocker(assumptions, "lookup_assumptions_changed"),
        )
        if code is not None
    ]
    output_cap = AssumedComponent(detail=_assumed_cap(registry))
    input_envelope = AssumedComponent(
        detail=f"admitted requests stay within U <= {registry.input_envelope:,} "
        f"tokens ({registry.version} framing; checked at settlement)"
    )
    check = None if attestation is None else _attested(reader, registry, attestation)
    status: CapGatedStatus = "blocked" if blockers else "awaiting_authorization"
    if not blockers and check is not None and check.status == "validated":
        status = "ready"
        output_cap, input_envelope = _promoted(output_cap), _promoted(input_envelope)
    elif not blockers:
        blockers = [AUTHORIZATION_REQUIRED]
    return CapGatedReadiness(
        reader=reader,
        pricing=pricing,
        assumptions=assumptions,
        output_cap=output_cap,
        input_envelope=input_envelope,
        status=status,
        blockers=blockers,
        attestation=check,
    )
