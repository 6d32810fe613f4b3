"""The cap-gated pilot descriptor and the pilot registration that wraps it (their schema).

A pilot descriptor (`PILOT_DESCRIPTOR_SCHEMA`, mode `PILOT_MODE`) registers what a
cap-gated lookup pilot would be held to, and nothing that runs one:

- the numeric cap C (USD text in whole cents, a safe integer of cents, C >= Rmax) and
  concurrency one;
- the complete assumed-v1 registry (`continuity.spend.assumptions.ASSUMED_V1`) and its
  digest;
- the catalog binding: the reader's catalog entry, every rate as the exact decimal text
  the catalog wrote, its limits and tiers, sealed by a digest over all of them. Its
  rates must be the registry's and no input tier may start inside the envelope I (the
  registry's Rmax is then the largest reservation the catalog can charge);
- the schedule: its version, seed and a digest over the selection and the fixed-budget
  sizing it draws slots from (nothing here executes a schedule or issues cache keys);
- the configured lookup deadlines;
- the transport key policy `TRANSPORT_KEY_POLICY` (the controller issues the prompt
  cache keys).

A pilot registration (`PILOT_REGISTRATION_SCHEMA`) wraps an unchanged external (v2)
registration by path and raw sha256, beside the descriptor. It is not a compare
registration and enables no paid route: every real-mode refusal stays in force, and
there is no dispatcher, approval issuer or authorization builder here.

`check_descriptor` validates everything a descriptor states about itself and returns C;
the bindings to files (the wrapped registration, the current catalog, the sizing and the
configured deadlines) are checked by `continuity.roles.pilot.registration`. Codes:
``lookup_pilot_descriptor_invalid``, ``lookup_pilot_concurrency_invalid``,
``lookup_assumptions_changed``, ``lookup_rmax_altered``, ``lookup_pilot_catalog_changed``
(the binding's digest is not its contents'), ``lookup_pilot_catalog_mismatch`` (the
catalog disagrees with the registry), ``lookup_pilot_schedule_mismatch``,
``lookup_pilot_schedule_seed_invalid``,
``lookup_pilot_cap_invalid``, ``lookup_pilot_cap_not_cents``, ``lookup_pilot_cap_unsafe``,
``lookup_pilot_cap_below_rmax``; reading one, ``lookup_pilot_registration_invalid``.
"""

from __future__ import annotations

from decimal import Context, Decimal

import msgspec

from continuity.digest import value_digest
from continuity.errors import SpendError
from continuity.spend.assumptions import (
    CATALOG_BOUNDED_VERSION,
    Assumptions,
    check_assumptions,
    reservation,
)
from continuity.spend.money import MAX_SAFE_CENTS, parse_usd, usd_text

__all__ = [
    "MAX_SAFE_SEED",
    "PILOT_CONCURRENCY",
    "PILOT_DESCRIPTOR_SCHEMA",
    "PILOT_MODE",
    "PILOT_REGISTRATION_SCHEMA",
    "SCHEDULE_VERSION",
    "TRANSPORT_KEY_POLICY",
    "CatalogBinding",
    "CatalogTier",
    "PilotDeadlines",
    "PilotDescriptor",
    "PilotRegistration",
    "Schedule",
    "WrappedRegistration",
    "assumptions_refusal",
    "cap_amount",
    "catalog_digest",
    "check_catalog",
    "check_descriptor",
    "decode_pilot",
    "descriptor_digest",
    "pricing_refusal",
    "schedule_digest",
    "sealed_catalog",
    "sealed_schedule",
]

PILOT_DESCRIPTOR_SCHEMA = "continuity-lookup-pilot-descriptor-v1"
PILOT_REGISTRATION_SCHEMA = "continuity-lookup-pilot-registration-v1"
PILOT_MODE = "cap-gated-v1"
PILOT_CONCURRENCY = 1
TRANSPORT_KEY_POLICY = "controller-issued-transport-key-v1"
SCHEDULE_VERSION = "lookup-pilot-schedule-v1"
MAX_SAFE_SEED = 2**53 - 1  # a schedule seed every tool reading the descriptor reads alike
_CAP_CHARS = 64  # a cap's text; the largest safe amount needs 17
_WIDE = Context(prec=_CAP_CHARS + 4)  # exact for any cap text of that length, times 100


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class CatalogTier(_Strict, frozen=True, kw_only=True):
    """An input tier of the bound catalog entry (rates as decimal text, None: unknown)."""

    above_input_tokens: int
    input: str | None
    output: str | None
    cache_read: str | None
    cache_write: str | None


class CatalogBinding(_Strict, frozen=True, kw_only=True):
    """The reader's catalog entry: rates per million tokens as exact decimal text, its
    limits and tiers, and `digest` over all of them (`catalog_digest`)."""

    model: str
    input: str
    output: str
    cache_read: str
    cache_write: str
    context_window: int
    max_output: int
    tiers: tuple[CatalogTier, ...]
    digest: str


class Schedule(_Strict, frozen=True, kw_only=True):
    """The registered schedule: its version and seed, the selection (its digest and the
    freeze it was drawn from) and the fixed-budget sizing (raw sha256) whose slots it
    would order, and `digest` over them (`schedule_digest`)."""

    version: str
    seed: int
    selection_digest: str
    freeze_digest: str
    sizing_sha256: str
    digest: str


class PilotDeadlines(_Strict, frozen=True, kw_only=True):
    """The configured lookup deadlines in seconds (configuration, not measured latency)."""

    probe_seconds: float
    cleanup_seconds: float
    turn_seconds: float
    watchdog_seconds: float


class PilotDescriptor(_Strict, frozen=True, kw_only=True):
    schema: str
    mode: str
    cap_usd: str
    concurrency: int
    assumptions: Assumptions
    assumptions_digest: str
    catalog: CatalogBinding
    schedule: Schedule
    deadlines: PilotDeadlines
    transport_key_policy: str


class WrappedRegistration(_Strict, frozen=True, kw_only=True):
    """The external registration a pilot wraps: its absolute path, raw sha256, schema
    and canonical digest."""

    path: str
    sha256: str
    schema: str
    registration_digest: str


class PilotRegistration(_Strict, frozen=True, kw_only=True):
    schema: str
    registration: WrappedRegistration
    descriptor: PilotDescriptor


class _Head(msgspec.Struct):
    schema: str = ""


def cap_amount(text: str, rmax: Decimal, *, location: str = "cap_usd") -> Decimal:
    """The cap C written as `text`, exactly, after checking it is a plain decimal amount
    of whole cents, at most `MAX_SAFE_CENTS` cents, and at least `rmax`.

    Raises:
        SpendError: ``lookup_pilot_cap_invalid`` (not a plain decimal amount),
            ``lookup_pilot_cap_not_cents``, ``lookup_pilot_cap_unsafe``,
            ``lookup_pilot_cap_below_rmax``.
    """
    stripped = text.strip()
    amount = parse_usd(stripped) if len(stripped) <= _CAP_CHARS else None
    if amount is None:
        raise SpendError(
            f"{text[:40]!r} is not a plain decimal amount of US dollars (digits and one "
            "point, no sign or exponent)",
            code="lookup_pilot_cap_invalid",
            location=location,
        )
    cents = _WIDE.multiply(amount, Decimal(100))
    if cents != cents.to_integral_value():
        raise SpendError(
            f"the cap ${stripped} is not a whole number of cents",
            code="lookup_pilot_cap_not_cents",
            location=location,
        )
    if int(cents) > MAX_SAFE_CENTS:
        raise SpendError(
            f"the cap's {int(cents)} cents exceed the largest safe integer {MAX_SAFE_CENTS}",
            code="lookup_pilot_cap_unsafe",
            location=location,
        )
    if amount < rmax:
        raise SpendError(
            f"the cap ${stripped} is below Rmax ${usd_text(rmax)}: not one request could be "
            "admitted",
            code="lookup_pilot_cap_below_rmax",
            location=location,
        )
    return amount


def _unsealed(value: msgspec.Struct) -> dict[str, object]:
    fields = msgspec.to_builtins(value)
    assert isinstance(fields, dict)
    fields.pop("digest", None)
    return fields


def catalog_digest(binding: CatalogBinding) -> str:
    """The blake3 digest of a catalog binding's contents (everything but `digest`)."""
    return value_digest(("continuity-lookup-pilot-catalog", _unsealed(binding)))


def schedule_digest(schedule: Schedule) -> str:
    """The blake3 digest of a schedule's contents (everything but `digest`)."""
    return value_digest(("continuity-lookup-pilot-schedule", _unsealed(schedule)))


def sealed_catalog(binding: CatalogBinding) -> CatalogBinding:
    """`binding` with its digest set."""
    return msgspec.structs.replace(binding, digest=catalog_digest(binding))


def sealed_schedule(schedule: Schedule) -> Schedule:
    """`schedule` with its digest set."""
    return msgspec.structs.replace(schedule, digest=schedule_digest(schedule))


def descriptor_digest(descriptor: PilotDescriptor) -> str:
    """The canonical digest of a whole descriptor."""
    return value_digest(descriptor)


def _same_rate(bound: str | None, registered: str) -> bool:
    return bound is not None and Decimal(bound) == Decimal(registered)


def _same_output(binding: CatalogBinding, assumptions: Assumptions) -> bool:
    """assumed-v1's O is the catalog's maximum output; a catalog-bounded registry's O is
    the output cap its requests send, at most that maximum."""
    if assumptions.version == CATALOG_BOUNDED_VERSION:
        return 0 < assumptions.max_output <= binding.max_output
    return binding.max_output == assumptions.max_output


def check_catalog(
    binding: CatalogBinding, assumptions: Assumptions, *, location: str = "catalog"
) -> None:
    """The binding is sealed over its contents and agrees with the registry: the same
    model, rates, envelope and maximum output, and no input tier that a request inside
    the envelope could strictly exceed.

    Raises:
        SpendError: ``lookup_pilot_catalog_changed`` (the digest is not the contents'),
            ``lookup_pilot_catalog_mismatch`` (at the first field that disagrees).
    """
    if binding.digest != catalog_digest(binding):
        raise SpendError(
            "the catalog binding's digest is not its contents' digest: it was edited",
            code="lookup_pilot_catalog_changed",
            location=f"{location}.digest",
        )
    rates = assumptions.rates
    checks = [
        ("model", binding.model == assumptions.model, assumptions.model),
        ("input", _same_rate(binding.input, rates.input), rates.input),
        ("output", _same_rate(binding.output, rates.output), rates.output),
        ("cache_read", _same_rate(binding.cache_read, rates.cache_read), rates.cache_read),
        ("cache_write", _same_rate(binding.cache_write, rates.cache_write), rates.cache_write),
        (
            "context_window",
            binding.context_window == assumptions.input_envelope,
            assumptions.input_envelope,
        ),
        ("max_output", _same_output(binding, assumptions), assumptions.max_output),
    ]
    for field, same, registered in checks:
        if not same:
            raise SpendError(
                f"the catalog gives {field} {getattr(binding, field)}, the registered "
                f"assumptions {registered}",
                code="lookup_pilot_catalog_mismatch",
                location=f"{location}.{field}",
            )
    for index, tier in enumerate(binding.tiers):
        if tier.above_input_tokens < assumptions.input_envelope:
            raise SpendError(
                f"an input tier starts above {tier.above_input_tokens:,} tokens, inside the "
                f"{assumptions.input_envelope:,}-token envelope: Rmax would not bound it",
                code="lookup_pilot_catalog_mismatch",
                location=f"{location}.tiers[{index}]",
            )


def _check_fixed(descriptor: PilotDescriptor, location: str) -> None:
    """Schema, mode, transport key policy and concurrency are the registered constants."""
    for field, wanted in (
        ("schema", PILOT_DESCRIPTOR_SCHEMA),
        ("mode", PILOT_MODE),
        ("transport_key_policy", TRANSPORT_KEY_POLICY),
    ):
        if getattr(descriptor, field) != wanted:
            raise SpendError(
                f"{field} is {str(getattr(descriptor, field))[:60]!r}, not {wanted}",
                code="lookup_pilot_descriptor_invalid",
                location=f"{location}.{field}",
            )
    if descriptor.concurrency != PILOT_CONCURRENCY:
        raise SpendError(
            f"concurrency {descriptor.concurrency}: a cap-gated pilot runs one slot at a time",
            code="lookup_pilot_concurrency_invalid",
            location=f"{location}.concurrency",
        )


def check_descriptor(descriptor: PilotDescriptor, *, location: str = "descriptor") -> Decimal:
    """Everything the descriptor states about itself, checked; returns the cap C.

    Raises:
        SpendError: the codes of the module docstring except
            ``lookup_pilot_registration_invalid``.
    """
    _check_fixed(descriptor, location)
    digest = check_assumptions(descriptor.assumptions, location=f"{location}.assumptions")
    if descriptor.assumptions_digest != digest:
        raise SpendError(
            "the registry's stated digest is not the digest of the registry it binds",
            code="lookup_assumptions_changed",
            location=f"{location}.assumptions_digest",
        )
    check_catalog(descriptor.catalog, descriptor.assumptions, location=f"{location}.catalog")
    if descriptor.schedule.version != SCHEDULE_VERSION:
        raise SpendError(
            f"schedule version {descriptor.schedule.version[:40]!r}, not {SCHEDULE_VERSION}",
            code="lookup_pilot_schedule_mismatch",
            location=f"{location}.schedule.version",
        )
    if not 0 <= descriptor.schedule.seed <= MAX_SAFE_SEED:
        raise SpendError(
            f"schedule seed {descriptor.schedule.seed} is outside 0 to {MAX_SAFE_SEED}",
            code="lookup_pilot_schedule_seed_invalid",
            location=f"{location}.schedule.seed",
        )
    if descriptor.schedule.digest != schedule_digest(descriptor.schedule):
        raise SpendError(
            "the schedule's digest is not its contents' digest: it was edited",
            code="lookup_pilot_schedule_mismatch",
            location=f"{location}.schedule.digest",
        )
    return cap_amount(
        descriptor.cap_usd, reservation(descriptor.assumptions), location=f"{location}.cap_usd"
    )


def decode_pilot(data: bytes, where: str) -> PilotRegistration:
    """A pilot registration's bytes, decoded (nothing bound is checked yet).

    Raises:
        SpendError: ``lookup_pilot_registration_invalid`` (at `where`) when the bytes are
            not JSON, carry another schema (a compare registration, v1 or v2, is not a
            pilot registration) or do not decode as one.
    """
    try:
        head = msgspec.json.decode(data, type=_Head)
    except msgspec.MsgspecError as exc:
        raise SpendError(
            f"not a pilot registration: {exc}",
            code="lookup_pilot_registration_invalid",
            location=where,
        ) from None
    if head.schema != PILOT_REGISTRATION_SCHEMA:
        raise SpendError(
            f"the file's schema is {head.schema[:60]!r}, not {PILOT_REGISTRATION_SCHEMA} "
            "(doit pilot_register writes one)",
            code="lookup_pilot_registration_invalid",
            location=where,
        )
    try:
        return msgspec.json.decode(data, type=PilotRegistration)
    except msgspec.MsgspecError as exc:
        raise SpendError(
            f"not a pilot registration: {exc}",
            code="lookup_pilot_registration_invalid",
            location=where,
        ) from None


def pricing_refusal(catalog: CatalogBinding | None, registry: Assumptions) -> SpendError | None:
    """Why a pilot's pricing is not ready under `registry` (None: it is): no bound
    catalog entry, or a tier rate unknown (``lookup_pilot_prices_missing``), or the
    entry's own check (`check_catalog`'s codes). The cap-gated readiness diagnostic and
    the real-send factory both judge pricing by this."""
    if catalog is None or any(
        None in (tier.input, tier.output, tier.cache_read, tier.cache_write)
        for tier in catalog.tiers
    ):
        return SpendError(
            "the catalog lacks a price the pilot's reservation needs",
            code="lookup_pilot_prices_missing",
            location="catalog",
        )
    try:
        check_catalog(catalog, registry)
    except SpendError as error:
        return error
    return None


def assumptions_refusal(registry: Assumptions, reader: str) -> SpendError | None:
    """Why the registered assumptions are not ready for `reader` (None: they are): the
    registry's own check (`check_assumptions`'s codes), or a registry for another model
    (``lookup_pilot_reader_mismatch``)."""
    try:
        check_assumptions(registry)
    except SpendError as error:
        return error
    if registry.model != reader:
        return SpendError(
            f"the registry is {registry.model}'s, the reader is {reader}",
            code="lookup_pilot_reader_mismatch",
            location="assumptions.model",
        )
    return None
