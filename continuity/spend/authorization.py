"""Pilot authorizations: a trusted local attestation, validated, never issued here (seed
000, "Private authorization and consumption").

An authorization is a JSON file an owner provisions outside this project after a fresh
pilot registration and a separate numeric-cap approval. It is **not a cryptographic
proof** of who approved it: it binds what was approved so that nothing else can be run
under it. There is no issuer or builder in this package (the tests write their own
fixtures), and the faux schema ``continuity-lookup-faux-authorization-v1`` has its own
registry domain and can never pass the real validator.

What it binds (`Authorization`): its id; the pilot registration's raw sha256 and
canonical digest; the controller checkout's revision; both roles' code and build
digests; the protocol, catalog, policy, source and selection digests; the reader and
effort; the complete pilot descriptor's digest (assumptions, cap, schedule, cache
policy, deadlines); the canonical output root and the credential location; a random
salt and a domain-separated commitment to the account identity in the credentials file
(``sha256("continuity-lookup-account-v1" NUL salt NUL account)``); the issue time, the
approver and the numeric approval reference.

`validate_authorization` checks every binding against what the caller expects, reads
the account from the credentials file (read-only, never through a link, never changed;
a rotated token of the same account passes, another account is refused) and returns an
`AuthorizationHandle` that carries the id and three digests only: tokens, the account,
paths, the salt and the commitment never leave it, and no error message repeats them.

The handle's `identity` is what one-use consumption burns
(`continuity.spend.consumption`): a digest of what was authorized, not of its spelling,
over the account commitment, the salt, the approver and the id in their canonical forms
(`canonical_text`: NFKC, case-folded, whitespace collapsed and stripped) and the
approval reference as a number. An id with a trailing or leading space, in another case
or in full-width letters is the same authorization; the id's canonical form must be 1-128
ASCII characters.

Codes (`SpendError`): ``lookup_authorization_invalid`` (not an authorization: bad JSON,
unknown or missing fields, a malformed salt, time, approver or approval reference),
``lookup_authorization_faux_refused`` (the faux schema, or any other, under the real
validator), ``lookup_authorization_mismatch`` (a binding differs; the location names
the field, never its value), ``lookup_account_unknown`` (the credentials name no
account), ``lookup_account_substituted`` (another account than the one approved).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from continuity.digest import value_digest
from continuity.errors import SpendError
from continuity.spend.consumption import FAUX_DOMAIN, REAL_DOMAIN, canonical_text

__all__ = [
    "ACCOUNT_DOMAIN",
    "ACCOUNT_HEADER",
    "Authorization",
    "AuthorizationHandle",
    "Bindings",
    "account_commitment",
    "account_of",
    "authorization_identity",
    "check_account_header",
    "validate_authorization",
]

ACCOUNT_DOMAIN = b"continuity-lookup-account-v1"
ACCOUNT_HEADER = "chatgpt-account-id"  # the account a guarded request names
_HEX64 = re.compile(r"[0-9a-f]{64}")
_APPROVAL = re.compile(r"[0-9]{1,32}")
_AUTH_CLAIM = "https://api.openai.com/auth"


class Bindings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an authorization binds besides its own identity (all digests are hex)."""

    registration_sha256: str
    registration_digest: str
    controller_revision: str
    r0_code: str
    r0_build: str
    rpack_code: str
    rpack_build: str
    protocol: str
    catalog: str
    policy: str
    source: str
    selection: str
    reader: str
    effort: str
    descriptor: str
    output_root: str
    credentials_path: str


class Authorization(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    schema: str
    id: str
    bindings: Bindings
    salt: str
    account_commitment: str
    issued_at: str
    approver: str
    approval_reference: str


class AuthorizationHandle(msgspec.Struct, frozen=True, kw_only=True):
    """A validated authorization, opaque: its id and digests, nothing secret."""

    domain: str
    authorization_id: str
    raw_sha256: str
    canonical_digest: str
    identity: str  # what consumption burns (`authorization_identity`)


def account_commitment(salt_hex: str, account: str) -> str:
    """The domain-separated commitment to `account` under `salt_hex`."""
    salt = bytes.fromhex(salt_hex)
    return hashlib.sha256(ACCOUNT_DOMAIN + b"\0" + salt + b"\0" + account.encode()).hexdigest()


def _jwt_account(token: str) -> str | None:
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(claims, dict):
        return None
    auth = claims.get(_AUTH_CLAIM)
    account = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    account = account or claims.get("account_id")
    return account if isinstance(account, str) and account else None


def account_of(credentials_path: Path) -> str | None:
    """The account a credentials file names: its ``account_id``, or the account claim of
    a JWT ``api_key`` / ``tokens.access_token``. Read-only, never through a link."""
    try:  # O_NONBLOCK: a FIFO cannot hang the open; only a regular file is read
        fd = os.open(credentials_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, 1 << 20)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data: Any = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("account_id"), str) and data["account_id"]:
        return str(data["account_id"])
    found = data.get("tokens")
    tokens: dict[str, Any] = found if isinstance(found, dict) else {}
    for token in (data.get("api_key"), tokens.get("access_token"), tokens.get("id_token")):
        if isinstance(token, str):
            account = _jwt_account(token)
            if account is not None:
                return account
    return None


def _decode(raw: bytes) -> Authorization:
    try:
        found = msgspec.json.decode(raw, type=Authorization)
    except msgspec.MsgspecError as exc:
        raise SpendError(
            f"not an authorization: {exc}",
            code="lookup_authorization_invalid",
            location="authorization",
        ) from None
    if not _HEX64.fullmatch(found.salt) or not _HEX64.fullmatch(found.account_commitment):
        raise SpendError(
            "the salt and the account commitment are 64 hex digits",
            code="lookup_authorization_invalid",
            location="authorization.salt",
        )
    try:
        issued = datetime.fromisoformat(found.issued_at)
    except ValueError:
        issued = None
    if issued is None or issued.tzinfo is None:
        raise SpendError(
            "issued_at is an ISO time with its offset",
            code="lookup_authorization_invalid",
            location="authorization.issued_at",
        )
    if not found.approver.strip() or not _APPROVAL.fullmatch(found.approval_reference):
        raise SpendError(
            "an approver and a numeric approval reference are required",
            code="lookup_authorization_invalid",
            location="authorization.approval_reference",
        )
    canonical = canonical_text(found.id)
    if not canonical or len(canonical) > 128 or not canonical.isascii():
        raise SpendError(
            "the id is 1-128 ASCII characters (in its canonical form)",
            code="lookup_authorization_invalid",
            location="id",
        )
    return found


def authorization_identity(found: Authorization) -> str:
    """What `found` authorizes, whatever its spelling (module doc): the digest one-use
    consumption burns. `found` has passed `_decode` (a numeric approval reference)."""
    return value_digest(
        (
            "continuity-lookup-authorization-identity-v1",
            found.account_commitment,
            found.salt,
            canonical_text(found.approver),
            int(found.approval_reference),
            canonical_text(found.id),
        )
    )


def validate_authorization(
    raw: bytes, *, expected: Bindings, domain: str = REAL_DOMAIN
) -> AuthorizationHandle:
    """Validate the authorization bytes `raw` against `expected` (see the module
    docstring); the credentials are read at ``expected.credentials_path``.

    Raises:
        SpendError: the module's codes.
    """
    if domain not in (REAL_DOMAIN, FAUX_DOMAIN):
        raise SpendError(
            "unknown authorization domain", code="lookup_authorization_invalid", location="domain"
        )
    found = _decode(raw)
    if found.schema != domain:
        raise SpendError(
            "this authorization's schema is not the validator's domain (a faux "
            "authorization never passes the real validator)",
            code="lookup_authorization_faux_refused",
            location="authorization.schema",
        )
    for field in Bindings.__struct_fields__:
        if not hmac.compare_digest(
            str(getattr(found.bindings, field)), str(getattr(expected, field))
        ):
            raise SpendError(
                f"the authorization binds another {field.replace('_', ' ')}",
                code="lookup_authorization_mismatch",
                location=f"authorization.bindings.{field}",
            )
    account = account_of(Path(expected.credentials_path))
    if account is None:
        raise SpendError(
            "the credentials name no account", code="lookup_account_unknown", location="credentials"
        )
    if not hmac.compare_digest(account_commitment(found.salt, account), found.account_commitment):
        raise SpendError(
            "the credentials are another account's than the one approved",
            code="lookup_account_substituted",
            location="credentials",
        )
    return AuthorizationHandle(
        domain=domain,
        authorization_id=found.id,
        raw_sha256=hashlib.sha256(raw).hexdigest(),
        canonical_digest=value_digest(
            ("continuity-lookup-authorization", msgspec.to_builtins(found))
        ),
        identity=authorization_identity(found),
    )


def check_account_header(raw: bytes, header: str | None) -> None:
    """Refuse a request whose account header is not the approved account: the header's
    value, under the authorization's own salt, must give its commitment (the salt and
    the commitment never leave this module).

    Raises:
        SpendError: ``lookup_authorization_invalid`` (`raw` is not an authorization),
            ``lookup_account_substituted`` (no header, or another account's).
    """
    found = _decode(raw)
    if header is None or not hmac.compare_digest(
        account_commitment(found.salt, header), found.account_commitment
    ):
        raise SpendError(
            "the request's account header is not the approved account",
            code="lookup_account_substituted",
            location="request.headers",
        )
