"""Pilot authorizations: every binding, the faux domain, the account commitment (token
rotation passes, substitution refuses), nothing secret leaving the validator, and the
credentials file never changed."""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import SpendError
from continuity.spend.authorization import (
    Authorization,
    Bindings,
    account_commitment,
    account_of,
    validate_authorization,
)
from continuity.spend.consumption import FAUX_DOMAIN, REAL_DOMAIN


def _jwt(account: str, nonce: str) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"https://api.openai.com/auth": {"chatgpt_account_id": account}, "n": nonce}
    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def _credentials(path: Path, account: str, nonce: str = "one") -> Path:
    path.write_text(json.dumps({"tokens": {"access_token": _jwt(account, nonce)}}))
    return path


def _bindings(credentials: Path, **change: str) -> Bindings:
    fields = {name: f"{name}-value" for name in Bindings.__struct_fields__}
    fields["credentials_path"] = str(credentials)
    fields.update(change)
    return Bindings(**fields)


SALT = "5a" * 32


def _authorization(credentials: Path, account: str = "acct-1", **change: Any) -> bytes:
    value = Authorization(
        schema=REAL_DOMAIN,
        id="auth-0001",
        bindings=_bindings(credentials),
        salt=SALT,
        account_commitment=account_commitment(SALT, account),
        issued_at="2026-12-01T09:00:00+00:00",
        approver="owner",
        approval_reference="4200",
    )
    return msgspec.json.encode(msgspec.structs.replace(value, **change))


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    return _credentials(tmp_path / "auth.json", "acct-1")


def test_a_sound_authorization_gives_an_opaque_handle(credentials: Path) -> None:
    before = os.stat(credentials)
    content = credentials.read_bytes()
    raw = _authorization(credentials)
    handle = validate_authorization(raw, expected=_bindings(credentials))
    assert handle.authorization_id == "auth-0001" and handle.domain == REAL_DOMAIN
    shown = repr(handle) + json.dumps(msgspec.to_builtins(handle))
    for secret in (SALT, account_commitment(SALT, "acct-1"), "acct-1", str(credentials)):
        assert secret not in shown
    after = os.stat(credentials)  # read, never changed
    assert credentials.read_bytes() == content
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_rotated_token_of_the_same_account_passes(credentials: Path) -> None:
    raw = _authorization(credentials)
    _credentials(credentials, "acct-1", nonce="rotated")
    validate_authorization(raw, expected=_bindings(credentials))


def test_another_account_is_refused_without_saying_which(credentials: Path) -> None:
    raw = _authorization(credentials)
    _credentials(credentials, "acct-2")
    with pytest.raises(SpendError) as caught:
        validate_authorization(raw, expected=_bindings(credentials))
    assert caught.value.code == "lookup_account_substituted"
    assert "acct" not in str(caught.value) and SALT not in str(caught.value)


def test_credentials_without_an_account_are_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"api_key": "sk-not-a-jwt"}))
    raw = _authorization(plain)
    with pytest.raises(SpendError) as caught:
        validate_authorization(raw, expected=_bindings(plain))
    assert caught.value.code == "lookup_account_unknown"
    link = tmp_path / "link.json"
    link.symlink_to(_credentials(tmp_path / "real.json", "acct-1"))
    assert account_of(link) is None  # never through a link


@pytest.mark.parametrize("field", Bindings.__struct_fields__)
def test_every_binding_is_checked(credentials: Path, field: str) -> None:
    raw = _authorization(credentials)
    expected = _bindings(credentials, **{field: "something-else"})
    with pytest.raises(SpendError) as caught:
        validate_authorization(raw, expected=expected)
    assert caught.value.code == "lookup_authorization_mismatch"
    assert caught.value.location == f"authorization.bindings.{field}"
    assert "something-else" not in str(caught.value)


def test_the_faux_schema_never_passes_the_real_validator(credentials: Path) -> None:
    faux = _authorization(credentials, schema=FAUX_DOMAIN)
    with pytest.raises(SpendError) as caught:
        validate_authorization(faux, expected=_bindings(credentials))
    assert caught.value.code == "lookup_authorization_faux_refused"
    handle = validate_authorization(faux, expected=_bindings(credentials), domain=FAUX_DOMAIN)
    assert handle.domain == FAUX_DOMAIN
    real = _authorization(credentials)
    with pytest.raises(SpendError) as caught:
        validate_authorization(real, expected=_bindings(credentials), domain=FAUX_DOMAIN)
    assert caught.value.code == "lookup_authorization_faux_refused"


@pytest.mark.parametrize(
    "change",
    [
        {"salt": "short"},
        {"account_commitment": "Z" * 64},
        {"issued_at": "yesterday"},
        {"issued_at": "2026-12-01T09:00:00"},  # no offset
        {"approver": " "},
        {"approval_reference": "four thousand"},
        {"id": ""},
    ],
)
def test_a_malformed_authorization_is_invalid(credentials: Path, change: dict[str, str]) -> None:
    with pytest.raises(SpendError) as caught:
        validate_authorization(
            _authorization(credentials, **change), expected=_bindings(credentials)
        )
    assert caught.value.code == "lookup_authorization_invalid"


@pytest.mark.parametrize("raw", [b"", b"[]", b'{"schema": 1}', b"not json"])
def test_bytes_that_are_no_authorization_are_invalid(credentials: Path, raw: bytes) -> None:
    with pytest.raises(SpendError) as caught:
        validate_authorization(raw, expected=_bindings(credentials))
    assert caught.value.code == "lookup_authorization_invalid"


def test_an_unknown_field_is_invalid(credentials: Path) -> None:
    value = json.loads(_authorization(credentials))
    value["upgrade_to_real"] = True
    with pytest.raises(SpendError) as caught:
        validate_authorization(json.dumps(value).encode(), expected=_bindings(credentials))
    assert caught.value.code == "lookup_authorization_invalid"


def test_the_salt_makes_commitments_unlinkable() -> None:
    other = secrets.token_hex(32)
    assert account_commitment(SALT, "acct-1") != account_commitment(other, "acct-1")
    assert account_commitment(SALT, "acct-1") != account_commitment(SALT, "acct-2")
