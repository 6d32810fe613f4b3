"""What the real-send factory (`continuity.spend.real_send`) re-derives for itself before
it mints: the child's registered plan, role, build and code, its epoch and exact cache
key, and readiness, each from the files on disk and the running code, never from what
the controller says about them (`check_registered`). In order, each refusal
``refused_pre_send``:

1. **plan** (``lookup_plan_mismatch``): the pilot registration the grant names (a regular
   file, never read through a link) has the bound raw sha256, canonical digest and
   descriptor digest, and its catalog and selection digests are the bound ones; the
   external registration it wraps still has its recorded raw sha256 and schema, the bound
   protocol and the bound reader; and the child runs that plan: its registry is the
   descriptor's and its effort the bound one;
2. **role** (``lookup_role_mismatch``): the slot's role is exactly one of the
   registration's roles and has the slot's arm; its code (R0 or Rpack) names the checkout
   and the build the next checks use;
3. **build** (``lookup_build_mismatch``): the registration holds a build of that checkout
   whose receipt digests to the bound ``r0_build`` or ``rpack_build``; this process runs
   the receipt's interpreter and imports the package from its exported tree
   (`continuity.installation.tree_root`); that tree holds exactly the receipt's files
   with their sha256 (bytecode aside); and the bytecode this process reads is its own,
   under a pycache prefix in the run's output root (``PYTHONPYCACHEPREFIX``, which the
   controller sets), so none planted beside the tree is ever run;
4. **code** (``lookup_code_mismatch``): the checkout's tree is the bound ``r0_code`` or
   ``rpack_code``, the export's ``REVISION`` is the checkout's revision, and every path the
   registration's bound digests name (entrypoint, reader, scorer, lock, budget) hashes in
   the running tree as registered (``missing`` when absent);
5. **epoch and cache key**: the slot's epoch is the claim's (``lookup_consumption_invalid``);
   its key is its slot's, unique, plain ASCII of at most 64 characters
   (`continuity.spend.safety.check_assignment`), and the whole assignment is exactly the
   keys `allocate_cache_keys` gives the claim's run id over its slots
   (``lookup_cache_assignment_invalid``);
6. **readiness** (``lookup_readiness_blocked``): nothing blocks the registered pilot's
   cap-gated readiness: the descriptor checks whole (`check_descriptor`), and the two
   refusals `continuity.plan.readiness.cap_gated_readiness` blocks on
   (`continuity.spend.descriptor.pricing_refusal` over the bound catalog,
   `assumptions_refusal` for the registration's reader) are both None: one
   implementation, which the diagnostic a layer above calls too.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

import msgspec

from continuity.digest import value_digest
from continuity.errors import SpendError
from continuity.installation import is_bytecode, tree_hashes, tree_root
from continuity.spend.authorization import Bindings
from continuity.spend.consumption import Claim
from continuity.spend.descriptor import (
    PilotRegistration,
    assumptions_refusal,
    check_descriptor,
    decode_pilot,
    descriptor_digest,
    pricing_refusal,
)
from continuity.spend.real_grant import RealSlot
from continuity.spend.safety import allocate_cache_keys, check_assignment

__all__ = ["CHECKOUTS", "REVISION_FILE", "check_registered"]

CHECKOUTS = {"R0": "r0", "Rpack": "rpack"}  # a role's code -> its checkout and build
REVISION_FILE = "REVISION"  # the commit a build's export holds (`roles.register_build`)
_MAX_FILE = 1 << 24


def _refuse(code: str, message: str, location: str) -> NoReturn:
    raise SpendError(message, code=code, location=location, outcome="refused_pre_send")


class _Checkout(msgspec.Struct, frozen=True):
    revision: str
    tree: str


class _Role(msgspec.Struct, frozen=True):
    name: str
    arm: str
    code: str


class _Workload(msgspec.Struct, frozen=True):
    reader_model: str


class _Wrapped(msgspec.Struct, frozen=True):
    """What the factory reads of a compare registration
    (`continuity.roles.register.Registration`); its raw sha256 binds the rest."""

    schema: str
    protocol: str
    r0: _Checkout
    rpack: _Checkout
    digests: dict[str, dict[str, str]]
    workload: _Workload
    roles: list[_Role]
    builds: dict[str, dict[str, Any]]


def _running() -> tuple[str, Path]:
    """This process's interpreter and the tree its package is imported from."""
    return sys.executable, tree_root()


def _read(path: Path) -> bytes | None:
    """A regular file's bytes, never through a link (None: missing, not a regular file,
    unreadable or larger than 16 MiB)."""
    try:  # O_NONBLOCK: a FIFO cannot hang the open; only a regular file is read
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = handle.read(_MAX_FILE + 1)
        except OSError:
            return None
    return data if len(data) <= _MAX_FILE else None


def _sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _plan_mismatch(message: str, location: str) -> NoReturn:
    _refuse("lookup_plan_mismatch", message, location)


def _wrapped(pilot: PilotRegistration, bindings: Bindings) -> _Wrapped:
    bound = pilot.registration
    raw = _read(Path(bound.path))
    if raw is None or _sha256(raw) != bound.sha256:
        _plan_mismatch("the wrapped registration is not the one recorded", "registration.wrapped")
    try:
        wrapped = msgspec.json.decode(raw, type=_Wrapped)
    except msgspec.MsgspecError:
        _plan_mismatch("the wrapped registration does not decode", "registration.wrapped")
    for same, field in (
        (wrapped.schema == bound.schema, "schema"),
        (wrapped.protocol == bindings.protocol, "protocol"),
        (wrapped.workload.reader_model == bindings.reader, "reader"),
    ):
        if not same:
            _plan_mismatch(f"the wrapped registration binds another {field}", f"plan.{field}")
    return wrapped


def _plan(path: Path, bindings: Bindings, slot: RealSlot) -> tuple[PilotRegistration, _Wrapped]:
    raw = _read(path)
    if raw is None or _sha256(raw) != bindings.registration_sha256:
        _plan_mismatch(
            "the pilot registration is not the one the authorization binds", "registration"
        )
    try:
        pilot = decode_pilot(raw, "registration")
    except SpendError:
        _plan_mismatch("the pilot registration does not decode", "registration")
    descriptor = pilot.descriptor
    for same, field in (
        (value_digest(msgspec.to_builtins(pilot)) == bindings.registration_digest, "digest"),
        (descriptor_digest(descriptor) == bindings.descriptor, "descriptor"),
        (descriptor.catalog.digest == bindings.catalog, "catalog"),
        (descriptor.schedule.selection_digest == bindings.selection, "selection"),
        (slot.assumptions == descriptor.assumptions, "assumptions"),
        (slot.effort == bindings.effort, "effort"),
    ):
        if not same:
            _plan_mismatch(f"the child's plan is not the registered one ({field})", f"plan.{field}")
    return pilot, _wrapped(pilot, bindings)


def _role(wrapped: _Wrapped, slot: RealSlot) -> str:
    found = [role for role in wrapped.roles if role.name == slot.role]
    if len(found) != 1 or found[0].arm != slot.arm or found[0].code not in CHECKOUTS:
        _refuse(
            "lookup_role_mismatch",
            f"the slot's role {slot.role[:40]!r} with arm {slot.arm[:40]!r} is not one "
            "registered role",
            "role",
        )
    return CHECKOUTS[found[0].code]


def _build(wrapped: _Wrapped, key: str, bindings: Bindings, running: tuple[str, Path]) -> None:
    receipt = wrapped.builds.get(key)
    if receipt is None or value_digest(receipt) != getattr(bindings, f"{key}_build"):
        _refuse(
            "lookup_build_mismatch",
            f"the registration holds no build of {key} the authorization binds",
            f"builds.{key}",
        )
    python, src, files = receipt.get("python"), receipt.get("src"), receipt.get("files")
    if not (isinstance(python, str) and isinstance(src, str) and isinstance(files, dict)):
        _refuse("lookup_build_mismatch", "the build receipt is not sound", f"builds.{key}")
    executable, root = running
    if executable != python:
        _refuse(
            "lookup_build_mismatch",
            "this process does not run the registered build's interpreter",
            f"builds.{key}.python",
        )
    if root.resolve() != Path(src).resolve():
        _refuse(
            "lookup_build_mismatch",
            "this process does not import the registered build's exported tree",
            f"builds.{key}.src",
        )
    registered = {path: digest for path, digest in files.items() if not is_bytecode(path)}
    found = tree_hashes(root, bytecode=False)
    if found != registered:
        changed = sorted(
            p for p in found.keys() | registered.keys() if found.get(p) != registered.get(p)
        )
        _refuse(
            "lookup_build_mismatch",
            f"the running build differs from the registered one ({len(changed)} files, "
            f"first {changed[0][:120]})",
            f"builds.{key}.files",
        )


def _pycache_prefix() -> str | None:
    return sys.pycache_prefix


def _private_bytecode(claim: Claim) -> None:
    """The build check skips bytecode, so the bytecode this process reads must be its
    own: written under a private prefix in the run's output root
    (``PYTHONPYCACHEPREFIX``, set by the controller), never a ``__pycache__`` planted
    beside the exported tree."""
    prefix = _pycache_prefix()
    root = Path(claim.output_root).resolve()
    if prefix is None or not Path(prefix).resolve().is_relative_to(root):
        _refuse(
            "lookup_build_mismatch",
            "this process may read bytecode from beside the build: its pycache prefix is "
            "not private to the run",
            "pycache",
        )


def _code(wrapped: _Wrapped, key: str, bindings: Bindings, root: Path) -> None:
    checkout = wrapped.r0 if key == "r0" else wrapped.rpack
    if checkout.tree != getattr(bindings, f"{key}_code"):
        _refuse(
            "lookup_code_mismatch",
            f"the registered {key} checkout is not the code the authorization binds",
            f"{key}.tree",
        )
    revision = _read(root / REVISION_FILE)
    if revision is None or revision.decode("utf-8", "replace").strip() != checkout.revision:
        _refuse(
            "lookup_code_mismatch",
            f"the running tree is not the registered {key} revision",
            REVISION_FILE,
        )
    for group, paths in sorted(wrapped.digests.items()):
        for path, digest in sorted(paths.items()):
            relative = PurePosixPath(path)
            safe = not relative.is_absolute() and ".." not in relative.parts
            if not safe or (_sha256(_read(root / relative)) or "missing") != digest:
                _refuse(
                    "lookup_code_mismatch",
                    f"the running tree's {group} code is not the registered code",
                    f"digests.{group}",
                )


def _cache_key(claim: Claim, slot: RealSlot) -> None:
    if slot.epoch != claim.epoch:
        _refuse("lookup_consumption_invalid", "the slot's epoch is not the consumption's", "epoch")
    check_assignment(slot.cache_key, slot.slot_id, slot.assigned)
    if allocate_cache_keys(claim.run_id, list(slot.assigned)) != slot.assigned:
        _refuse(
            "lookup_cache_assignment_invalid",
            "the assignment is not the keys of the claim's run",
            "assigned",
        )


def _readiness(pilot: PilotRegistration, wrapped: _Wrapped) -> None:
    """The registered pilot's cap-gated readiness is not blocked: the descriptor whole,
    then the pricing and assumptions refusals the diagnostic blocks on
    (`continuity.plan.readiness.cap_gated_readiness` judges by the same two functions)."""
    descriptor = pilot.descriptor
    blockers: list[str] = []
    try:
        check_descriptor(descriptor)
    except SpendError as error:
        blockers.append(error.code)
    refusals = (
        pricing_refusal(descriptor.catalog, descriptor.assumptions),
        assumptions_refusal(descriptor.assumptions, wrapped.workload.reader_model),
    )
    blockers.extend(refusal.code for refusal in refusals if refusal is not None)
    if blockers:
        _refuse(
            "lookup_readiness_blocked",
            "the registered pilot's cap-gated readiness is blocked: "
            + ", ".join(dict.fromkeys(blockers)),
            "readiness",
        )


def check_registered(registration: Path, bindings: Bindings, claim: Claim, slot: RealSlot) -> None:
    """Re-derive and check the child's plan, role, build, code, epoch, cache key and
    readiness (module doc) from the pilot registration at `registration`, the validated
    `bindings`, the consumption `claim` and what the child was told of its `slot`.

    Raises:
        SpendError: ``lookup_plan_mismatch``, ``lookup_role_mismatch``,
            ``lookup_build_mismatch``, ``lookup_code_mismatch``,
            ``lookup_consumption_invalid``, ``lookup_cache_assignment_invalid``,
            ``lookup_readiness_blocked``.
    """
    pilot, wrapped = _plan(registration, bindings, slot)
    key = _role(wrapped, slot)
    running = _running()
    _build(wrapped, key, bindings, running)
    _private_bytecode(claim)
    _code(wrapped, key, bindings, running[1])
    _cache_key(claim, slot)
    _readiness(pilot, wrapped)
