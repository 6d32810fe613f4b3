"""Pilot registrations: `doit pilot_register` writes one, `doit estimate` reads one.

A pilot registration (`continuity.spend.descriptor.PILOT_REGISTRATION_SCHEMA`) wraps an
unchanged external registration (v2, `continuity.roles.register_holdout`) by absolute
path and raw sha256, beside a cap-gated descriptor. It is not a compare registration:
``doit compare_run``, ``compare_aggregate`` and ``compare_preflight`` refuse it
(``lookup_pilot_registration_refused``, `continuity.roles.run.read_registration`), and
nothing reads it to run a role, a unit or a real request. Every real-mode refusal
(``lookup_real_refused`` and its kin) stays in force; a pilot registration enables no
paid route.

`register_pilot` builds the descriptor from the external registration, the cap C, the
schedule seed and the pricing catalog, validates it exactly as `read_pilot` will, and
writes ``<output>/pilot-registration.json`` atomically (canonical JSON) into a new
absolute directory outside both registered checkouts. `read_pilot` verifies a pilot
registration, refusing with a code:

1. the file's raw sha256 (``role_registration_sha256_mismatch``) and schema
   (``lookup_pilot_registration_invalid``: a v1 or v2 registration is not a pilot one);
2. the descriptor on its own (`continuity.spend.descriptor.check_descriptor`: cap,
   concurrency, assumed-v1 and its digest, the catalog binding's seal and rates, the
   schedule's seal);
3. the wrapped registration: its bytes still hash to the bound sha256
   (``lookup_pilot_registration_sha256_mismatch``), it is a compare registration
   (``lookup_pilot_registration_refused`` for a nested pilot), external
   (``lookup_pilot_registration_not_external``), its schema and digest as recorded
   (``lookup_pilot_registration_invalid``), read by the registry's model
   (``lookup_pilot_reader_mismatch``);
4. its fixed-budget sizing (`load_fixed_budget`'s codes), read by the same model;
5. the schedule recomputed from the registration's selection and sizing
   (``lookup_pilot_schedule_mismatch``), the deadlines against the configured ones and
   the sizing's (``lookup_pilot_deadlines_changed``), and the catalog's current entry
   complete (``lookup_pilot_prices_missing``) and the bound one
   (``lookup_pilot_catalog_changed``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import msgspec
from msgspec import UNSET

from continuity.errors import RoleError
from continuity.lookup.fixed_budget import FixedBudget, load_fixed_budget
from continuity.outputs import write_output
from continuity.plan.pilot_catalog import catalog_binding
from continuity.plan.pricing import Catalog, ModelPrice, load_catalog, model_price
from continuity.roles.register import REGISTRATION_SCHEMA_V2, Registration, check_output
from continuity.roles.register_holdout import HoldoutWorkload
from continuity.roles.run import read_registration, registration_bytes
from continuity.spend.assumptions import (
    ASSUMED_V1,
    CATALOG_BOUNDED_VERSION,
    VENDOR_PROVIDERS,
    Assumptions,
    Rates,
    assumptions_digest,
    catalog_bounded,
    reservation,
)
from continuity.spend.descriptor import (
    PILOT_CONCURRENCY,
    PILOT_DESCRIPTOR_SCHEMA,
    PILOT_MODE,
    PILOT_REGISTRATION_SCHEMA,
    SCHEDULE_VERSION,
    TRANSPORT_KEY_POLICY,
    PilotDeadlines,
    PilotDescriptor,
    PilotRegistration,
    Schedule,
    WrappedRegistration,
    cap_amount,
    check_descriptor,
    decode_pilot,
    sealed_schedule,
)

__all__ = [
    "PILOT_FILE",
    "PilotRegistered",
    "VerifiedPilot",
    "configured_pilot_deadlines",
    "read_pilot",
    "register_pilot",
    "registry_for",
]

PILOT_FILE = "pilot-registration.json"


class PilotRegistered(msgspec.Struct, frozen=True, kw_only=True):
    """What `register_pilot` wrote: the file, its raw sha256 and the registration."""

    path: Path
    sha256: str
    pilot: PilotRegistration


@dataclass(frozen=True)
class VerifiedPilot:
    """A verified pilot registration: the file's raw sha256, the cap C, the external
    registration it wraps (and its holdout part), the sizing and the reader's price."""

    pilot: PilotRegistration
    sha256: str
    cap: Decimal
    registration: Registration
    held: HoldoutWorkload
    budget: FixedBudget
    price: ModelPrice | None


def configured_pilot_deadlines() -> PilotDeadlines:
    """The lookup deadlines this checkout configures (`configured_deadlines` with the
    runner's child watchdog)."""
    from continuity.plan.lookup_estimate import configured_deadlines
    from continuity.runner.lookup_run import LookupRun

    (watchdog,) = (
        f.default for f in msgspec.structs.fields(LookupRun) if f.name == "watchdog_seconds"
    )
    found = configured_deadlines(float(watchdog))
    return PilotDeadlines(
        probe_seconds=found.probe_seconds,
        cleanup_seconds=found.cleanup_seconds,
        turn_seconds=found.turn_seconds,
        watchdog_seconds=found.watchdog_seconds,
    )


def _external(registration: Registration, where: str) -> HoldoutWorkload:
    """The holdout part of an external (v2) registration.

    Raises:
        RoleError: ``lookup_pilot_registration_not_external`` (a v1 registration).
    """
    held = registration.workload.holdout
    if registration.schema != REGISTRATION_SCHEMA_V2 or held is UNSET:
        raise RoleError(
            f"a {registration.schema} registration binds no frozen holdout source: a pilot "
            f"wraps an external registration ({REGISTRATION_SCHEMA_V2})",
            code="lookup_pilot_registration_not_external",
            location=where,
        )
    return held


def _check_reader(registration: Registration, budget: FixedBudget, registry: Assumptions) -> None:
    """The registration's reader and the sizing's are the model the registry prices.

    Raises:
        RoleError: ``lookup_pilot_reader_mismatch``.
    """
    for where, model in (
        ("registration:$.workload.reader_model", registration.workload.reader_model),
        ("sizing:$.reader.reader", budget.reader.reader),
    ):
        if model != registry.model:
            raise RoleError(
                f"the reader is {model}; {registry.version} registers {registry.model}'s "
                "rates and limits only",
                code="lookup_pilot_reader_mismatch",
                location=where,
            )


def _schedule(held: HoldoutWorkload, seed: int) -> Schedule:
    return sealed_schedule(
        Schedule(
            version=SCHEDULE_VERSION,
            seed=seed,
            selection_digest=held.selection.selection_digest,
            freeze_digest=held.selection.freeze_digest,
            sizing_sha256=held.sizing_sha256,
            digest="",
        )
    )


def _check_deadlines(bound: PilotDeadlines, budget: FixedBudget, where: str) -> None:
    """The bound deadlines are the configured ones, which the sizing was measured under.

    Raises:
        RoleError: ``lookup_pilot_deadlines_changed``.
    """
    terms = budget.budget
    sizing = PilotDeadlines(
        probe_seconds=terms.probe_deadline_seconds,
        cleanup_seconds=terms.cleanup_seconds,
        turn_seconds=terms.turn_seconds,
        watchdog_seconds=terms.watchdog_seconds,
    )
    for name, found in (("configured", configured_pilot_deadlines()), ("sizing's", sizing)):
        if bound != found:
            raise RoleError(
                f"the descriptor binds the deadlines {msgspec.to_builtins(bound)}, the "
                f"{name} are {msgspec.to_builtins(found)}",
                code="lookup_pilot_deadlines_changed",
                location=where,
            )


def _check_bindings(
    descriptor: PilotDescriptor, held: HoldoutWorkload, budget: FixedBudget, catalog: Catalog
) -> ModelPrice | None:
    """The descriptor's schedule, deadlines and catalog binding against the files; the
    reader's current price.

    Raises:
        RoleError: ``lookup_pilot_schedule_mismatch``, ``lookup_pilot_deadlines_changed``,
            ``lookup_pilot_catalog_changed``.
        SpendError: ``lookup_pilot_prices_missing``.
    """
    if descriptor.schedule != _schedule(held, descriptor.schedule.seed):
        raise RoleError(
            "the schedule does not bind the wrapped registration's selection and sizing",
            code="lookup_pilot_schedule_mismatch",
            location="descriptor.schedule",
        )
    _check_deadlines(descriptor.deadlines, budget, "descriptor.deadlines")
    model = descriptor.assumptions.model
    price = model_price(catalog, model)
    current = catalog_binding(model, price)
    if current != descriptor.catalog:
        raise RoleError(
            f"the catalog's entry for {model} (digest {current.digest[:16]}) is not the bound "
            f"one ({descriptor.catalog.digest[:16]})",
            code="lookup_pilot_catalog_changed",
            location="descriptor.catalog",
        )
    return price


def _wrapped(wrapped: WrappedRegistration, where: str) -> Registration:
    """The external registration a pilot wraps, verified against what the pilot records.

    Raises:
        RoleError: ``lookup_pilot_registration_sha256_mismatch``, ``role_registration_invalid``,
            ``lookup_pilot_registration_refused``, ``lookup_pilot_registration_not_external``,
            ``lookup_pilot_registration_invalid``.
    """
    try:
        registration, digest, _ = read_registration(Path(wrapped.path), wrapped.sha256)
    except RoleError as exc:
        if exc.code != "role_registration_sha256_mismatch":
            raise
        raise RoleError(
            f"the wrapped registration {wrapped.path} no longer hashes to the bound sha256 "
            f"{wrapped.sha256}: {exc.message}",
            code="lookup_pilot_registration_sha256_mismatch",
            location=f"{where}:$.registration.sha256",
        ) from None
    _external(registration, wrapped.path)
    if (wrapped.schema, wrapped.registration_digest) != (registration.schema, digest):
        raise RoleError(
            "the recorded schema or canonical digest is not the wrapped registration's",
            code="lookup_pilot_registration_invalid",
            location=f"{where}:$.registration",
        )
    return registration


def _verify(
    pilot: PilotRegistration, registration: Registration, catalog: Catalog
) -> tuple[HoldoutWorkload, FixedBudget, ModelPrice | None]:
    """Steps 4 and 5 of the module doc over a pilot whose descriptor checked and the
    registration it wraps: the holdout part, the sizing and the reader's price."""
    held = _external(registration, pilot.registration.path)
    budget = load_fixed_budget(Path(held.sizing), held.sizing_sha256)
    registry = pilot.descriptor.assumptions
    _check_reader(registration, budget, registry)
    if registry.version == CATALOG_BOUNDED_VERSION and registry.max_output != held.output_limit:
        raise RoleError(
            f"the registry's output cap {registry.max_output:,} is not the registration's "
            f"per-call output limit {held.output_limit:,}",
            code="lookup_pilot_registration_invalid",
            location="descriptor.assumptions.max_output",
        )
    price = _check_bindings(pilot.descriptor, held, budget, catalog)
    return held, budget, price


def read_pilot(path: Path, sha256: str, *, pricing: Path | None = None) -> VerifiedPilot:
    """The pilot registration at `path`, verified (module doc, steps 1-5) against the
    catalog at `pricing` (default the checked-in one).

    Raises:
        RoleError, SpendError, LookupError_, PricingError: the codes of the module doc.
    """
    data, raw = registration_bytes(path, sha256)
    pilot = decode_pilot(data, str(path))
    cap = check_descriptor(pilot.descriptor, location=f"{path}:$.descriptor")
    registration = _wrapped(pilot.registration, str(path))
    held, budget, price = _verify(pilot, registration, load_catalog(pricing))
    return VerifiedPilot(pilot, raw, cap, registration, held, budget, price)


def registry_for(reader: str, price: ModelPrice | None, output_limit: int) -> Assumptions:
    """The registry a pilot of `reader` reserves by: catalog-bounded-v1 for a reader on
    a vendor API that enforces the output cap (its catalog entry's rates and window, and
    the registration's per-call output limit as the cap), else assumed-v1 (whose reader
    check refuses any reader but Sol).

    Raises:
        SpendError: ``lookup_pilot_prices_missing`` (a vendor reader's entry lacks a
            rate or a limit).
    """
    if reader.partition(":")[0] not in VENDOR_PROVIDERS:
        return ASSUMED_V1
    binding = catalog_binding(reader, price)
    rates = Rates(
        input=binding.input,
        output=binding.output,
        cache_read=binding.cache_read,
        cache_write=binding.cache_write,
    )
    return catalog_bounded(
        reader, rates=rates, context_window=binding.context_window, output_cap=output_limit
    )


def _descriptor(
    registration: Registration, cap_usd: str, seed: int, catalog: Catalog
) -> PilotDescriptor:
    held = _external(registration, "--registration")
    registry = registry_for(
        registration.workload.reader_model,
        model_price(catalog, registration.workload.reader_model),
        held.output_limit,
    )
    cap = cap_amount(cap_usd, reservation(registry), location="--cap-usd")
    cents = int(cap * 100)
    return PilotDescriptor(
        schema=PILOT_DESCRIPTOR_SCHEMA,
        mode=PILOT_MODE,
        cap_usd=f"{cents // 100}.{cents % 100:02d}",
        concurrency=PILOT_CONCURRENCY,
        assumptions=registry,
        assumptions_digest=assumptions_digest(registry),
        catalog=catalog_binding(registry.model, model_price(catalog, registry.model)),
        schedule=_schedule(held, seed),
        deadlines=configured_pilot_deadlines(),
        transport_key_policy=TRANSPORT_KEY_POLICY,
    )


def register_pilot(
    registration_path: Path,
    sha256: str,
    cap_usd: str,
    schedule_seed: int,
    output: str,
    *,
    pricing: Path | None = None,
) -> PilotRegistered:
    """Wrap the external registration at `registration_path` (raw sha256 `sha256`) and a
    descriptor with cap `cap_usd` and `schedule_seed` into
    ``<output>/pilot-registration.json``, verified as `read_pilot` verifies it before the
    output directory is made or anything is written.

    Raises:
        RoleError: `read_registration`'s codes (``lookup_pilot_registration_refused`` for
            a pilot), ``role_output_not_absolute``, ``role_output_exists``,
            ``role_output_inside_checkout``, and `read_pilot`'s.
        SpendError: the descriptor's codes (``lookup_pilot_cap_*`` at ``--cap-usd``).
    """
    registration, digest, raw = read_registration(registration_path, sha256)
    catalog = load_catalog(pricing)
    pilot = PilotRegistration(
        schema=PILOT_REGISTRATION_SCHEMA,
        registration=WrappedRegistration(
            path=str(registration_path.absolute()),
            sha256=raw,
            schema=registration.schema,
            registration_digest=digest,
        ),
        descriptor=_descriptor(registration, cap_usd, schedule_seed, catalog),
    )
    check_descriptor(pilot.descriptor)
    _verify(pilot, registration, catalog)
    out = check_output(output, [Path(registration.r0.path), Path(registration.rpack.path)])
    data = msgspec.json.encode(pilot, order="sorted")
    write_output(out / PILOT_FILE, data)
    return PilotRegistered(
        path=out / PILOT_FILE, sha256=hashlib.sha256(data).hexdigest(), pilot=pilot
    )
