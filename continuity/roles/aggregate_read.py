"""`doit compare_aggregate`'s reading side: the registration, ``launches.json``, every
role receipt and every unit payload, verified before anything is joined.

Checks, in order, each failing closed with a `RoleError` code:

1. the registration file's raw sha256 is the one given (``role_registration_sha256_mismatch``),
   then it decodes as a `Registration` (``role_registration_invalid``) and is the copy
   `doit compare_register` stored (``role_registration_changed``); its canonical
   digest (`continuity.digest.value_digest`) is what every receipt must bind;
2. ``launches.json`` decodes and names that registration (``role_launches_invalid``);
3. per launch with a recorded receipt: the receipt lies in its own role's directory (a
   receipt of one role found under another's: ``role_cross_replay``), its bytes hash to
   the recorded sha256, it is a `continuity-lookup-role-v1` receipt with a frozen soul,
   binds the registration digest and the registered checkout's revision, and its arm
   and code are the role table's, its plan digest is the plan the registered workload
   and the role imply (`expected_plan_digest`), its witness is its code's (R0 none,
   Rpack present; checked when the registration's two checkouts differ, as every real
   one does), and the launch verified the build before and after it
   (``role_receipt_tampered``); its role is the launch's (``role_cross_replay``);
4. per listed unit: the file exists, hashes to the listed sha256 and decodes as a
   `UnitRecord` (``role_receipt_tampered``; so is a unit file the receipt does not
   list); its arm and soul binding are the role's (``role_cross_replay``).

A launch without a receipt, or whose recorded receipt file is gone, is not an error: the
role's suite stays missing with the launch's reason, and the other roles are kept.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from continuity.errors import RoleError, UsageError
from continuity.inputs import (
    DOCUMENT_MAX_BYTES,
    UNIT_MAX_BYTES,
    check_user_dir,
    read_user_bytes,
)
from continuity.roles.receipt import RECEIPT_FILE, RoleReceipt, read_role_receipt, role_plan
from continuity.roles.register import REGISTRATION_SCHEMA, Registration
from continuity.roles.run import LAUNCHES_FILE, LAUNCHES_SCHEMA, Launch, Launches
from continuity.roles.run import read_registration as run_registration
from continuity.roles.run_launch import role_plan_request
from continuity.roles.table import ROLES, Role
from continuity.runner.units.record import UnitRecord
from continuity.store import Store

__all__ = [
    "RoleSuite",
    "expected_plan_digest",
    "read_launches",
    "read_registration",
    "read_role_suites",
    "receipt_path",
]


class RoleSuite(msgspec.Struct, frozen=True, kw_only=True):
    """One role's launch for one suite: its verified units, or why it has none."""

    role: Role
    suite: str
    exit_code: int | None
    outcome: str | None  # the receipt's outcome (``complete`` or an error code)
    reason: str | None  # why the suite is missing (None: its receipt verified)
    units: list[UnitRecord]
    planned: list[dict[str, object]]  # the run's lookup-slots.json entries (may be empty)


def read_registration(
    path: Path, sha256: str, store: Store | None = None
) -> tuple[Registration, str, str]:
    """The registration, its raw sha256 and canonical digest, after the checks
    `doit compare_run` made (`continuity.roles.run.read_registration`: the sha256, the
    copy stored in `store`, the default store when None) and its schema's.

    Raises:
        RoleError: ``role_registration_sha256_mismatch``, ``role_registration_changed``,
            ``role_registration_invalid``.
    """
    registration, digest, raw = run_registration(path, sha256, stored_in=store or Store())
    if registration.schema != REGISTRATION_SCHEMA:
        raise RoleError(
            f"schema {registration.schema[:60]!r} is not {REGISTRATION_SCHEMA}",
            code="role_registration_invalid",
            location=str(path),
        )
    return registration, raw, digest


def read_launches(output: Path, raw: str, digest: str) -> Launches:
    """``<output>/launches.json``, naming this registration by both hashes.

    Raises:
        RoleError: ``role_launches_invalid``.
        InputError: ``input_not_a_directory`` (`output`), ``input_not_a_file``,
            ``input_too_large`` (the launches).
    """
    path = output / LAUNCHES_FILE
    try:
        check_user_dir(output, what="the compare_run output directory")
        data = read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="launches.json")
        launches = msgspec.json.decode(data, type=Launches)
    except (OSError, msgspec.MsgspecError) as exc:
        raise RoleError(
            f"cannot read the launches: {exc}", code="role_launches_invalid", location=str(path)
        ) from None
    if launches.schema != LAUNCHES_SCHEMA or (
        launches.registration_digest,
        launches.registration_sha256,
    ) != (digest, raw):
        raise RoleError(
            f"the launches are not a {LAUNCHES_SCHEMA} run of this registration",
            code="role_launches_invalid",
            location=str(path),
        )
    return launches


def receipt_path(role: str, suite: str) -> str:
    """Where a role's receipt lies, relative to the run's output directory."""
    return f"roles/{role}/{suite}/out/runs/{role}/{RECEIPT_FILE}"


def _receipt(output: Path, entry: Launch, role: Role) -> tuple[Path, RoleReceipt] | None:
    """The launch's receipt, verified as the module doc's step 3; None when its file is
    gone (the suite stays missing)."""
    assert entry.receipt is not None
    path = output / entry.receipt
    expected = receipt_path(role.name, entry.suite)
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(output))
    if entry.receipt != expected or root not in real.parents:
        parts = Path(entry.receipt).parts
        other = len(parts) > 1 and parts[0] == "roles" and parts[1] != role.name
        raise RoleError(
            f"{role.name}'s receipt is recorded at {entry.receipt[:120]!r}, not {expected}",
            code="role_cross_replay" if other else "role_receipt_tampered",
            location=str(path),
        )
    if not path.is_file():
        return None
    data = read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="the role receipt")
    if hashlib.sha256(data).hexdigest() != entry.receipt_sha256:
        raise RoleError(
            "the receipt's sha256 is not the recorded one",
            code="role_receipt_tampered",
            location=str(path),
        )
    try:
        receipt = read_role_receipt(path)
    except UsageError as exc:
        raise RoleError(exc.message, code="role_receipt_tampered", location=str(path)) from None
    if receipt.role != role.name:
        raise RoleError(
            f"a {receipt.role[:40]} receipt under {role.name}'s directory",
            code="role_cross_replay",
            location=str(path),
        )
    return path, receipt


def expected_plan_digest(reg: Registration, role: Role, suite: str) -> str:
    """The plan digest a role's receipt must bind: the plan the registered workload and
    the role imply (the plan its child ran, `role_plan_request`, bound to the role's
    frozen soul).

    Raises:
        UsageError / SoulError: the plan's own codes when this checkout cannot build it.
    """
    from continuity.plan.from_request import plan_from_request
    from continuity.plan.plan import LookupPlan, plan_digest

    plan = plan_from_request(role_plan_request(reg.workload, role, suite))
    assert isinstance(plan, LookupPlan)  # probe_mode lookup-allowed-v1 plans a LookupPlan
    return plan_digest(role_plan(plan, role))


def _check_receipt(
    path: Path, receipt: RoleReceipt, role: Role, reg: Registration, digest: str, suite: str
) -> None:
    checkout = reg.r0 if role.code == "R0" else reg.rpack
    problem = None
    if (receipt.arm, receipt.code, receipt.soul) != (role.arm, role.code, role.soul):
        problem = f"arm/code/soul {receipt.arm}/{receipt.code}/{receipt.soul} are not the table's"
    elif receipt.registration_digest != digest:
        problem = "the receipt binds another registration digest"
    elif receipt.revision != checkout.revision:
        problem = f"the receipt's commit {receipt.revision[:12]} is not the registered {role.code}"
    elif receipt.plan_digest != expected_plan_digest(reg, role, suite):
        problem = "the receipt's plan is not the one the registered workload and role imply"
    # The witness tells R0 from Rpack only when the registration's checkouts differ (a
    # real registration always: register refuses an Rpack without a delta).
    elif reg.r0.revision != reg.rpack.revision and receipt.witness != (role.code == "Rpack"):
        problem = f"the receipt's witness ({receipt.witness}) is not {role.code}'s"
    if problem is not None:
        raise RoleError(problem, code="role_receipt_tampered", location=str(path))


def _units(run_dir: Path, receipt: RoleReceipt, role: Role) -> list[UnitRecord]:
    """Every unit the receipt lists, verified as the module doc's step 4."""
    folder = run_dir / "units"
    listed = {unit.name for unit in receipt.units}
    present = (
        {p.relative_to(folder).as_posix() for p in folder.rglob("*.json") if p.is_file()}
        if folder.is_dir()
        else set()
    )
    for extra in sorted(present - listed):
        raise RoleError(
            "a unit file the receipt does not list",
            code="role_receipt_tampered",
            location=str(folder / extra),
        )
    records = []
    for unit in receipt.units:
        path = folder / unit.name
        try:
            data = read_user_bytes(path, limit=UNIT_MAX_BYTES, what="the unit file")
        except OSError:
            raise RoleError(
                "a listed unit file is gone", code="role_receipt_tampered", location=str(path)
            ) from None
        if hashlib.sha256(data).hexdigest() != unit.sha256:
            raise RoleError(
                "the unit's sha256 is not the listed one",
                code="role_receipt_tampered",
                location=str(path),
            )
        try:
            record = msgspec.json.decode(data, type=UnitRecord)
        except msgspec.MsgspecError as exc:
            raise RoleError(
                f"not a unit record: {exc}", code="role_receipt_tampered", location=str(path)
            ) from None
        lookup = (record.binding or {}).get("lookup") or {}
        if record.arm != role.arm or lookup.get("soul_sha256") != receipt.soul_sha256:
            raise RoleError(
                f"a unit of arm {record.arm[:40]} (another soul or role) under {role.name}",
                code="role_cross_replay",
                location=str(path),
            )
        records.append(record)
    return records


def _planned(run_dir: Path) -> list[dict[str, object]]:
    from continuity.runner.lookup_run import SLOTS_FILE

    try:
        data = read_user_bytes(run_dir / SLOTS_FILE, limit=DOCUMENT_MAX_BYTES, what=SLOTS_FILE)
        slots = msgspec.json.decode(data)
    except (OSError, msgspec.MsgspecError):
        return []
    found = slots.get("slots") if isinstance(slots, dict) else None
    return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def _role_suite(
    output: Path, entry: Launch | None, role: Role, suite: str, reg: Registration, digest: str
) -> RoleSuite:
    def missing(reason: str) -> RoleSuite:
        exit_code = entry.exit_code if entry is not None else None
        return RoleSuite(
            role=role,
            suite=suite,
            exit_code=exit_code,
            outcome=None,
            reason=reason,
            units=[],
            planned=[],
        )

    if entry is None:
        return missing("no launch recorded in launches.json")
    if entry.receipt is None:
        return missing(entry.reason or "the launch recorded no receipt")
    if not (entry.build_verified_before and entry.build_verified_after):
        # A receipt is only attributable to the registered code between two verifications.
        raise RoleError(
            f"{role.name}'s launch has a receipt but its build was not verified before and after",
            code="role_receipt_tampered",
            location=str(output / LAUNCHES_FILE),
        )
    found = _receipt(output, entry, role)
    if found is None:
        return missing(f"role_receipt_missing: {entry.receipt} is gone")
    path, receipt = found
    _check_receipt(path, receipt, role, reg, digest, suite)
    return RoleSuite(
        role=role,
        suite=suite,
        exit_code=entry.exit_code,
        outcome=receipt.outcome,
        reason=None,
        units=_units(path.parent, receipt, role),
        planned=_planned(path.parent),
    )


def read_role_suites(
    output: Path, registration: Registration, raw: str, digest: str
) -> list[RoleSuite]:
    """Every role x registered suite, verified (module doc), in the role table's order.

    Raises:
        RoleError: every code of the module doc.
    """
    launches = read_launches(output, raw, digest)
    by_key: dict[tuple[str, str], Launch] = {}
    for entry in launches.launches:
        by_key.setdefault((entry.role, entry.suite), entry)
    return [
        _role_suite(output, by_key.get((role.name, suite)), role, suite, registration, digest)
        for role in ROLES
        for suite in registration.workload.suites
    ]
