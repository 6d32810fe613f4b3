"""The role receipt: what one ``doit units --lookup-role ROLE`` invocation ran, and in
which checkout.

Written to ``<run>/role-receipt.json`` (schema ``continuity-lookup-role-v1``, the role
protocol's name) after the units, whether they finished or failed, so a launcher can
tell a failed role from a missing one. It binds the role and its arm, the soul's name
and both digests, the plan digest, the checkout's commit and whether this checkout's
pack renderer carries the retrieval-guidance witness, every unit file's name and sha256,
the outcome (``complete`` or the error code) and, when a registered comparison launched
the role, the registration's canonical digest.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from continuity.errors import UsageError
from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.lookup.soul import KNOWN_SOULS, read_known_soul
from continuity.outputs import write_output
from continuity.plan.plan import LookupPlan, plan_digest
from continuity.roles.guidance import ROLE_PROTOCOL, WITNESS
from continuity.roles.table import Role

__all__ = [
    "RECEIPT_FILE",
    "RoleReceipt",
    "RoleUnit",
    "read_role_receipt",
    "role_arms",
    "role_plan",
    "role_receipt",
    "witness_present",
    "write_role_receipt",
]

RECEIPT_FILE = "role-receipt.json"


class RoleUnit(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One unit file the role wrote: its path under ``<run>/units/`` and its sha256."""

    name: str
    sha256: str


class RoleReceipt(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    schema: str = ROLE_PROTOCOL
    role: str
    arm: str
    code: str  # the role's checkout (R0 or Rpack), as the role table says
    soul: str  # S0 or S1
    soul_file: str
    soul_sha256: str
    soul_core_sha256: str
    plan_digest: str
    revision: str  # this checkout's commit (``unknown`` outside git)
    dirty: bool | None
    witness: bool  # this checkout's pack renderer exports the retrieval guidance
    units: list[RoleUnit]
    outcome: str  # ``complete`` or the error code the units ended with
    registration_digest: str | None = None


def role_arms(role: Role, arms: str | None) -> str:
    """The arm a role runs; an explicit ``--arms`` must name exactly it.

    Raises:
        UsageError: ``lookup_role_arms_conflict`` (at ``--arms``) for any other arms.
    """
    if arms not in (None, "", "all", role.arm):
        raise UsageError(
            f"role {role.name} runs arm {role.arm}; --arms {arms[:60]!r} conflicts with it "
            "(leave --arms out)",
            code="lookup_role_arms_conflict",
            location="--arms",
        )
    return role.arm


def role_plan(plan: LookupPlan, role: Role) -> LookupPlan:
    """`plan` bound to the role's frozen soul (read and checked against its pins).

    The sizing policy stays the frozen one: S1's feasibility is not re-measured.

    Raises:
        SoulError: ``lookup_soul_missing`` / ``lookup_soul_mismatch`` when the role's
            soul file is missing or not its frozen bytes.
        UsageError: ``lookup_role_arms_conflict`` when the plan runs other arms.
    """
    soul = read_known_soul(role.soul_file)
    if plan.arms != [role.arm]:
        role_arms(role, ",".join(plan.arms))
    return msgspec.structs.replace(plan, soul_sha256=soul.sha256, soul_core_sha256=soul.core_sha256)


def witness_present() -> bool:
    """Whether the pack renderer this process runs exports the guidance witness."""
    from continuity.memory import pack

    return WITNESS in getattr(pack, "__all__", ()) and isinstance(getattr(pack, WITNESS, None), str)


def _units(run_dir: Path) -> list[RoleUnit]:
    folder = run_dir / "units"
    files = sorted(p for p in folder.rglob("*.json") if p.is_file()) if folder.is_dir() else []
    return [
        RoleUnit(p.relative_to(folder).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
        for p in files
    ]


def role_receipt(
    run_dir: Path,
    role: Role,
    plan: LookupPlan,
    *,
    outcome: str,
    registration_digest: str | None = None,
) -> RoleReceipt:
    """The receipt of `role` run under `plan` into `run_dir` (its unit files as they are
    now)."""
    from continuity.runner.manifest import code_revision

    revision, dirty = code_revision()
    return RoleReceipt(
        role=role.name,
        arm=role.arm,
        code=role.code,
        soul=role.soul,
        soul_file=role.soul_file,
        soul_sha256=plan.soul_sha256,
        soul_core_sha256=plan.soul_core_sha256,
        plan_digest=plan_digest(plan),
        revision=revision,
        dirty=dirty,
        witness=witness_present(),
        units=_units(run_dir),
        outcome=outcome,
        registration_digest=registration_digest,
    )


def write_role_receipt(run_dir: Path, receipt: RoleReceipt) -> Path:
    """Write `receipt` to ``<run_dir>/role-receipt.json`` (atomically) and return it."""
    path = run_dir / RECEIPT_FILE
    run_dir.mkdir(parents=True, exist_ok=True)
    write_output(path, msgspec.json.format(msgspec.json.encode(receipt)) + b"\n")
    return path


def read_role_receipt(path: Path) -> RoleReceipt:
    """A role receipt read back, its soul checked against the frozen pins.

    Raises:
        UsageError: ``lookup_role_receipt_invalid`` for an unreadable or malformed file,
            another schema, or a soul binding that is not its soul's frozen digests.
    """
    try:
        data = read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="the role receipt")
        receipt = msgspec.json.decode(data, type=RoleReceipt)
    except (OSError, msgspec.MsgspecError) as exc:
        raise UsageError(
            f"cannot read the role receipt: {exc}",
            code="lookup_role_receipt_invalid",
            location=str(path),
        ) from None
    pins = KNOWN_SOULS.get(receipt.soul_file)
    if receipt.schema != ROLE_PROTOCOL or pins != (
        receipt.soul_sha256,
        receipt.soul_core_sha256,
    ):
        raise UsageError(
            f"the role receipt is not a {ROLE_PROTOCOL} receipt with a frozen soul binding",
            code="lookup_role_receipt_invalid",
            location=str(path),
        )
    return receipt
