"""`doit estimate --registration PILOT --sha256 S`: the external registration's estimate,
unchanged, plus the cap-gated part (E, Rmax, C, C - Rmax, C / E, the full-upfront
comparison and the cap-gated readiness), offline; ``--real`` refused before any read."""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec import UNSET

from continuity.errors import ContinuityError, UsageError
from continuity.plan.lookup_estimate import LookupEstimate
from continuity.roles.pilot import run as pilot_run
from continuity.roles.pilot.registration import read_pilot
from continuity.roles.pilot.slots import pilot_bindings
from continuity.spend.authorization import Authorization, account_commitment
from continuity.spend.consumption import REAL_DOMAIN
from rules.estimate import _estimate
from tests.roles.pilot_toy import (
    PilotToy,
    pilot_toy,  # noqa: F401
    registered,
    rewritten,
)
from tests.spend.test_authorization import SALT, _jwt

LOOKUP = "lookup-allowed-v1"


def estimate(toy: PilotToy, path: Path, sha256: str, **more: Any) -> tuple[LookupEstimate, str]:
    where = _estimate(
        probe_mode=LOOKUP,
        registration=str(path),
        sha256=sha256,
        pricing=str(toy.catalog),
        store=str(toy.store.root),
        out=str(toy.root / "out"),
        **more,
    )
    assert where is not None and where.startswith("estimate in ")
    found = Path(where.split(" in ", 1)[1])
    return msgspec.json.decode(found.read_bytes(), type=LookupEstimate), where


def _no_network(*args: object, **kwargs: object) -> None:
    raise AssertionError("the estimate opened a network connection")


def test_the_estimate_reports_the_cap_gated_numbers(
    pilot_toy: PilotToy,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    opened_files: list[str],
) -> None:
    done = registered(pilot_toy)
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
    opened_files.clear()
    result, _ = estimate(pilot_toy, done.path, done.sha256)
    # no credential is read (no auth file of any provider is even opened)
    assert not [p for p in opened_files if "credential" in p or "auth" in Path(p).name]
    pilot = result.pilot
    assert pilot is not UNSET
    # three eligible slots of 1,000 tokens, a 1,000-byte budget: 0.0186075 each (by hand
    # in tests.plan.test_pilot_estimate)
    assert pilot.expected_usd == Decimal("0.0558225")
    assert (pilot.rmax_usd, pilot.cap_usd) == (Decimal("3.92"), Decimal("25.00"))
    assert pilot.cap_minus_rmax_usd == Decimal("21.08")
    assert pilot.cap_over_expected == Decimal("447.8481")
    assert pilot.full_upfront.comparison_usd == Decimal("147.00")  # 1.25 x 10 x 3.92 x 3
    assert (pilot.planned, pilot.eligible) == (4, 3)
    assert (pilot.registration_sha256, pilot.wrapped_sha256) == (done.sha256, pilot_toy.sha256)
    assert pilot.readiness.status == "awaiting_authorization"
    assert pilot.readiness.blockers == ["lookup_authorization_required"]
    # the ordinary readiness is unchanged (the Sol subscription takes no output cap), and
    # the external registration's own full-upfront pricing and cap are as registered
    assert result.readiness.ready is False
    assert result.holdout is not None and result.holdout.pricing.cap_usd == Decimal("68.40")
    assert result.workload.source.kind == "registration"
    assert result.workload.source.sha256 == pilot_toy.sha256
    text = capsys.readouterr().out
    for part in (
        "E scenario (a scenario, not measured usage)",
        "C - Rmax = $21.08; C / E = 447.8481",
        "full-upfront comparison, not the admission gate",
        "cap-gated readiness of openai-codex:gpt-6.1-sol: awaiting_authorization, blockers "
        "lookup_authorization_required",
        "readiness of the main reader openai-codex:gpt-6.1-sol: not ready",
        "proposed cap C = ceil-to-cents(1.25 x eligible reservations) = 68.40",
    ):
        assert part in text, part


def test_a_compare_registrations_estimate_has_no_pilot_part(pilot_toy: PilotToy) -> None:  # noqa: F811
    result, _ = estimate(pilot_toy, pilot_toy.registration, pilot_toy.sha256)
    assert result.pilot is UNSET
    assert b'"pilot"' not in msgspec.json.encode(result)  # its bytes are as before


def test_the_estimate_refuses_an_edited_pilot(pilot_toy: PilotToy) -> None:  # noqa: F811
    done = registered(pilot_toy)
    sha = rewritten(done.path, lambda data: data["descriptor"].update(cap_usd="3.50"))
    with pytest.raises(ContinuityError) as caught:
        estimate(pilot_toy, done.path, sha)
    assert caught.value.code == "lookup_pilot_cap_below_rmax"
    with pytest.raises(ContinuityError) as caught:
        estimate(pilot_toy, done.path, "0" * 64)
    assert caught.value.code == "role_registration_sha256_mismatch"


def test_the_pilot_fixes_the_workload(pilot_toy: PilotToy) -> None:  # noqa: F811
    done = registered(pilot_toy)
    for name, value in (("suites", "original"), ("probe_limit", 1), ("policy", "p.json")):
        with pytest.raises(UsageError) as caught:
            estimate(pilot_toy, done.path, done.sha256, **{name: value})
        assert (caught.value.code, caught.value.location) == (
            "plan_invalid",
            f"--{name.replace('_', '-')}",
        )


def test_real_is_refused_before_the_pilot_is_read(
    pilot_toy: PilotToy,  # noqa: F811
    opened_files: list[str],
) -> None:
    done = registered(pilot_toy)
    opened_files.clear()
    with pytest.raises(UsageError) as caught:
        _estimate(probe_mode=LOOKUP, registration=str(done.path), sha256=done.sha256, real=True)
    assert (caught.value.code, caught.value.location) == ("estimate_real_refused", "--real")
    assert not [p for p in opened_files if p.startswith(str(pilot_toy.root))]


def _authorized(toy: PilotToy, done: Any, **change: Any) -> dict[str, str]:
    """An owner's authorization over the bindings `doit compare_pilot` would validate for
    this pilot (as --show-bindings prints them), and the options that offer it."""
    credentials = toy.root / "credentials.json"
    credentials.write_text(json.dumps({"api_key": _jwt("acct-1", "one")}))
    output = toy.root / "pilot-out"
    verified = read_pilot(done.path, done.sha256, pricing=toy.catalog)
    bindings = pilot_bindings(verified, output, credentials.resolve(), pilot_run._revision())
    value = Authorization(
        schema=REAL_DOMAIN,
        id="auth-estimate-1",
        bindings=msgspec.structs.replace(bindings, **change),
        salt=SALT,
        account_commitment=account_commitment(SALT, "acct-1"),
        issued_at="2026-12-02T09:00:00+00:00",
        approver="owner",
        approval_reference="2500",
    )
    path = toy.root / "authorization.json"
    path.write_bytes(msgspec.json.encode(value))
    return {
        "authorization": str(path),
        "authorization_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "pilot_output": str(output),
        "pilot_credentials": str(credentials),
    }


def test_an_offered_authorization_makes_the_cap_gated_readiness_ready(
    pilot_toy: PilotToy,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = registered(pilot_toy)
    offered = _authorized(pilot_toy, done)
    result, _ = estimate(pilot_toy, done.path, done.sha256, **offered)
    assert result.pilot is not UNSET
    ready = result.pilot.readiness
    assert (ready.status, ready.blockers) == ("ready", [])
    assert (ready.output_cap.status, ready.input_envelope.status) == ("ready", "ready")
    assert ready.attestation is not None and ready.attestation.status == "validated"
    assert result.readiness.ready is False  # the ordinary readiness is unchanged
    assert not Path(offered["pilot_output"]).exists()  # nothing made, nothing consumed
    text = capsys.readouterr().out
    assert "cap-gated readiness of openai-codex:gpt-6.1-sol: ready, blockers none" in text
    assert "attestation: validated: authorization auth-estimate-1" in text


def test_a_refused_authorization_leaves_it_awaiting_with_its_code(
    pilot_toy: PilotToy,  # noqa: F811
) -> None:
    done = registered(pilot_toy)
    cases: list[tuple[Callable[[], dict[str, str]], str]] = [
        (
            lambda: _authorized(pilot_toy, done, descriptor="d" * 64),
            "lookup_authorization_mismatch",
        ),
        (
            lambda: {**_authorized(pilot_toy, done), "authorization_sha256": "0" * 64},
            "lookup_authorization_sha256_mismatch",
        ),
    ]
    for offer, code in cases:  # each written, then offered
        result, _ = estimate(pilot_toy, done.path, done.sha256, **offer())
        assert result.pilot is not UNSET
        ready = result.pilot.readiness
        assert (ready.status, ready.blockers) == (
            "awaiting_authorization",
            ["lookup_authorization_required"],
        )
        assert ready.attestation is not None and ready.attestation.code == code


def test_an_authorization_needs_all_four_options_and_a_pilot(
    pilot_toy: PilotToy,  # noqa: F811
) -> None:
    done = registered(pilot_toy)
    offered = _authorized(pilot_toy, done)
    with pytest.raises(UsageError) as caught:
        estimate(pilot_toy, done.path, done.sha256, **{**offered, "pilot_credentials": ""})
    assert (caught.value.code, caught.value.location) == (
        "option_value_missing",
        "--pilot-credentials",
    )
    with pytest.raises(UsageError) as caught:  # a compare registration has no such part
        estimate(pilot_toy, pilot_toy.registration, pilot_toy.sha256, **offered)
    assert (caught.value.code, caught.value.location) == ("plan_invalid", "--authorization")
