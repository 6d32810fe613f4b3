"""The attestation that can promote cap-gated readiness (seed 000: "only a locally
validated, descriptor-bound attestation can promote the assumed input/output components
to ready").

The attestation is the pilot's own authorization (`continuity.spend.authorization`,
schema ``continuity-lookup-authorization-v1``), the trusted local attestation an owner
provisions for ``doit compare_pilot``; there is no second format and no second
validator. An `Attestation` offers it to the diagnostic with

- `raw`: its bytes as read, and `sha256`: the raw sha256 its holder states for them
  (``--authorization-sha256``);
- `expected`: what an authorization of this pilot must bind
  (`continuity.roles.pilot.run.attestation_inputs`: the bindings ``doit compare_pilot``
  validates against and ``--show-bindings`` prints: the registration's raw and canonical
  hashes, the descriptor digest, the catalog, the reader, the checkouts and builds, the
  output root and the credentials location);
- `descriptor`: the registered descriptor those bindings belong to.

`check_attestation` refuses, in order, with a `SpendError`:

1. ``lookup_authorization_sha256_mismatch``: the bytes do not hash to the stated sha256
   (tampered, or another file);
2. ``lookup_authorization_mismatch`` at ``attestation.*``: the expected bindings are not
   this descriptor's (its digest, its catalog binding, its reader), or the descriptor
   registers another registry than the one the diagnostic judges;
3. the shared validator's codes (`validate_authorization`, the real domain only):
   ``lookup_authorization_invalid`` (not an authorization), ``lookup_authorization_faux_refused``
   (the faux schema or any other), ``lookup_authorization_mismatch`` at
   ``authorization.bindings.<field>`` (another registration hash, descriptor digest,
   catalog, reader, output root, ...), ``lookup_account_unknown`` and
   ``lookup_account_substituted`` (the credentials file is read for its account only,
   read-only, never through a link).

It returns the validator's opaque handle (the id and digests, nothing secret). Nothing
is consumed: validating is not consuming, and readiness dispatches nothing.
"""

from __future__ import annotations

import hashlib
import hmac

import msgspec

from continuity.errors import SpendError
from continuity.spend.assumptions import Assumptions
from continuity.spend.authorization import AuthorizationHandle, Bindings, validate_authorization
from continuity.spend.descriptor import PilotDescriptor, descriptor_digest

__all__ = ["Attestation", "check_attestation"]


class Attestation(msgspec.Struct, frozen=True, kw_only=True):
    """An authorization offered to the cap-gated diagnostic (see the module doc)."""

    raw: bytes
    sha256: str
    expected: Bindings
    descriptor: PilotDescriptor


def _unbound(message: str, location: str) -> SpendError:
    return SpendError(message, code="lookup_authorization_mismatch", location=location)


def check_attestation(
    attestation: Attestation, reader: str, registry: Assumptions
) -> AuthorizationHandle:
    """The handle of `attestation` when it is this descriptor's validated authorization
    for `reader` under `registry` (module doc).

    Raises:
        SpendError: ``lookup_authorization_sha256_mismatch``,
            ``lookup_authorization_mismatch`` and `validate_authorization`'s codes.
    """
    stated = attestation.sha256.strip().lower()
    if not hmac.compare_digest(hashlib.sha256(attestation.raw).hexdigest(), stated):
        raise SpendError(
            "the authorization's bytes do not hash to the stated sha256",
            code="lookup_authorization_sha256_mismatch",
            location="attestation.sha256",
        )
    descriptor, expected = attestation.descriptor, attestation.expected
    if descriptor.assumptions != registry:
        raise _unbound(
            "the descriptor registers another registry than the one judged",
            "attestation.descriptor.assumptions",
        )
    if expected.descriptor != descriptor_digest(descriptor):
        raise _unbound(
            "the expected bindings are another descriptor's", "attestation.expected.descriptor"
        )
    if expected.catalog != descriptor.catalog.digest:
        raise _unbound(
            "the expected bindings name another catalog binding", "attestation.expected.catalog"
        )
    if expected.reader != reader or registry.model != reader:
        raise _unbound("the expected bindings name another reader", "attestation.expected.reader")
    return validate_authorization(attestation.raw, expected=expected)
