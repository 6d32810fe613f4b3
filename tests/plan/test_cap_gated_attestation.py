"""Cap-gated readiness that can become ready: a validated, descriptor-bound attestation
(the pilot's own authorization, checked by the shared validator) walks Sol's cap-gated
readiness from awaiting_authorization to ready; every invalid one is refused with its
stable code and leaves it awaiting authorization; incomplete pricing still blocks."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace

from continuity.errors import SpendError
from continuity.plan.attestation import Attestation, check_attestation
from continuity.plan.readiness import AUTHORIZATION_REQUIRED, CapGatedReadiness, cap_gated_readiness
from continuity.spend.assumptions import ASSUMED_V1
from continuity.spend.authorization import Authorization, Bindings, account_commitment
from continuity.spend.consumption import FAUX_DOMAIN, REAL_DOMAIN
from continuity.spend.descriptor import descriptor_digest
from tests.plan.test_pilot_estimate import SOL, SOL_PRICE, descriptor
from tests.spend.test_authorization import SALT, _credentials

DESCRIPTOR = descriptor()


def bindings(credentials: Path, **change: str) -> Bindings:
    """What this pilot's authorization binds: the descriptor's digest, its catalog and
    its reader, beside synthetic registration, checkout and build digests."""
    fields = {name: f"{name}-value" for name in Bindings.__struct_fields__}
    fields.update(
        registration_sha256="1" * 64,
        registration_digest="2" * 64,
        catalog=DESCRIPTOR.catalog.digest,
        reader=SOL,
        descriptor=descriptor_digest(DESCRIPTOR),
        credentials_path=str(credentials),
    )
    fields.update(change)
    return Bindings(**fields)


def authorization(credentials: Path, *, account: str = "acct-1", **change: Any) -> bytes:
    value = Authorization(
        schema=REAL_DOMAIN,
        id="auth-pilot-7",
        bindings=bindings(credentials),
        salt=SALT,
        account_commitment=account_commitment(SALT, account),
        issued_at="2026-12-01T09:00:00+00:00",
        approver="owner",
        approval_reference="2500",
    )
    return msgspec.json.encode(replace(value, **change))


def attestation(credentials: Path, raw: bytes | None = None, **more: Any) -> Attestation:
    raw = authorization(credentials) if raw is None else raw
    values: dict[str, Any] = {
        "raw": raw,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "expected": bindings(credentials),
        "descriptor": DESCRIPTOR,
    }
    values.update(more)
    return Attestation(**values)


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    return _credentials(tmp_path / "auth.json", "acct-1")


def readiness(offered: Attestation | None) -> CapGatedReadiness:
    return cap_gated_readiness(SOL, SOL_PRICE, ASSUMED_V1, offered)


def test_a_valid_attestation_walks_awaiting_authorization_to_ready(credentials: Path) -> None:
    before = os.stat(credentials)
    waiting = readiness(None)
    assert waiting.status == "awaiting_authorization"
    assert waiting.blockers == [AUTHORIZATION_REQUIRED] and waiting.attestation is None
    assert (waiting.output_cap.status, waiting.input_envelope.status) == ("assumed", "assumed")
    ready = readiness(attestation(credentials))
    assert (ready.status, ready.blockers) == ("ready", [])
    assert (ready.pricing.status, ready.assumptions.status) == ("ready", "ready")
    assert (ready.output_cap.status, ready.input_envelope.status) == ("ready", "ready")
    assert ready.output_cap.detail.startswith(waiting.output_cap.detail)  # the same bound
    assert "promoted by the validated authorization" in ready.input_envelope.detail
    assert ready.attestation is not None and ready.attestation.status == "validated"
    assert ready.attestation.code is None and "auth-pilot-7" in ready.attestation.detail
    assert "never dispatch authority" in ready.note
    shown = json.dumps(msgspec.to_builtins(ready))  # nothing secret leaves the validator
    for secret in (SALT, account_commitment(SALT, "acct-1"), "acct-1", str(credentials)):
        assert secret not in shown
    after = os.stat(credentials)  # read for its account, never changed
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def _tampered(credentials: Path) -> Attestation:
    raw = authorization(credentials)
    stated = hashlib.sha256(raw).hexdigest()
    return attestation(credentials, raw.replace(b'"owner"', b'"other"'), sha256=stated)


def _unknown_field(credentials: Path) -> Attestation:
    value = json.loads(authorization(credentials))
    value["upgrade_to_real"] = True
    return attestation(credentials, json.dumps(value).encode())


def _another_account(credentials: Path) -> Attestation:
    _credentials(credentials, "acct-2")
    return attestation(credentials)


def _no_account(credentials: Path) -> Attestation:
    credentials.write_text(json.dumps({"api_key": "sk-not-a-jwt"}))
    return attestation(credentials)


def _bound(credentials: Path, **change: str) -> Attestation:
    """An authorization that binds another value than this registration's."""
    other = replace(bindings(credentials), **change)
    return attestation(credentials, authorization(credentials, bindings=other))


REFUSALS: dict[str, tuple[Callable[[Path], Attestation], str, str]] = {
    "another descriptor digest": (
        lambda c: _bound(c, descriptor="d" * 64),
        "lookup_authorization_mismatch",
        "authorization.bindings.descriptor",
    ),
    "another registration hash": (
        lambda c: _bound(c, registration_sha256="e" * 64),
        "lookup_authorization_mismatch",
        "authorization.bindings.registration_sha256",
    ),
    "another canonical registration": (
        lambda c: _bound(c, registration_digest="f" * 64),
        "lookup_authorization_mismatch",
        "authorization.bindings.registration_digest",
    ),
    "another output root": (
        lambda c: _bound(c, output_root="/elsewhere"),
        "lookup_authorization_mismatch",
        "authorization.bindings.output_root",
    ),
    "the faux domain": (
        lambda c: attestation(c, authorization(c, schema=FAUX_DOMAIN)),
        "lookup_authorization_faux_refused",
        "authorization.schema",
    ),
    "another schema": (
        lambda c: attestation(c, authorization(c, schema="continuity-lookup-authorization-v0")),
        "lookup_authorization_faux_refused",
        "authorization.schema",
    ),
    "tampered bytes": (_tampered, "lookup_authorization_sha256_mismatch", "attestation.sha256"),
    "bytes that are no authorization": (
        lambda c: attestation(c, b"not json"),
        "lookup_authorization_invalid",
        "authorization",
    ),
    "an unknown field": (_unknown_field, "lookup_authorization_invalid", "authorization"),
    "a malformed salt": (
        lambda c: attestation(c, authorization(c, salt="short")),
        "lookup_authorization_invalid",
        "authorization.salt",
    ),
    "another account": (_another_account, "lookup_account_substituted", "credentials"),
    "credentials naming no account": (_no_account, "lookup_account_unknown", "credentials"),
    "bindings of another descriptor": (
        lambda c: attestation(c, descriptor=descriptor(cap="30.00")),
        "lookup_authorization_mismatch",
        "attestation.expected.descriptor",
    ),
    "bindings of another catalog": (
        lambda c: attestation(c, expected=bindings(c, catalog="c" * 64)),
        "lookup_authorization_mismatch",
        "attestation.expected.catalog",
    ),
    "bindings of another reader": (
        lambda c: attestation(c, expected=bindings(c, reader="openai-codex:gpt-6.1-luna")),
        "lookup_authorization_mismatch",
        "attestation.expected.reader",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_an_invalid_attestation_is_refused_and_still_awaits_authorization(
    credentials: Path, case: str
) -> None:
    make, code, location = REFUSALS[case]
    offered = make(credentials)
    found = readiness(offered)
    assert found.status == "awaiting_authorization"
    assert found.blockers == [AUTHORIZATION_REQUIRED]  # the sole blocker, never mixed
    assert (found.output_cap.status, found.input_envelope.status) == ("assumed", "assumed")
    assert found.attestation is not None and found.attestation.status == "refused"
    assert found.attestation.code == code
    assert found.attestation.detail.startswith(f"{code}: ")
    with pytest.raises(SpendError) as caught:  # the same refusal, raised, where it is coded
        check_attestation(offered, SOL, ASSUMED_V1)
    assert (caught.value.code, caught.value.location) == (code, location)


def test_a_registry_that_is_not_the_descriptors_is_refused(credentials: Path) -> None:
    other = replace(ASSUMED_V1, rmax="4.00")
    with pytest.raises(SpendError) as caught:
        check_attestation(attestation(credentials), SOL, other)
    assert caught.value.code == "lookup_authorization_mismatch"
    assert caught.value.location == "attestation.descriptor.assumptions"


@pytest.mark.parametrize(
    ("price", "registry", "blockers"),
    [
        (None, ASSUMED_V1, ["lookup_pilot_prices_missing"]),
        (replace(SOL_PRICE, cache_write=None), ASSUMED_V1, ["lookup_pilot_prices_missing"]),
        (replace(SOL_PRICE, output=12.0), ASSUMED_V1, ["lookup_pilot_catalog_mismatch"]),
        (SOL_PRICE, replace(ASSUMED_V1, rmax="4.00"), ["lookup_rmax_altered"]),
    ],
)
def test_a_valid_attestation_never_lifts_a_pricing_or_assumptions_block(
    credentials: Path, price: Any, registry: Any, blockers: list[str]
) -> None:
    found = cap_gated_readiness(SOL, price, registry, attestation(credentials))
    assert found.status == "blocked" and found.blockers == blockers
    assert (found.output_cap.status, found.input_envelope.status) == ("assumed", "assumed")
    assert found.attestation is not None  # what it came to is still shown
