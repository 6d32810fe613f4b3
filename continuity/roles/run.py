"""`doit compare_run`: run the six registered roles, each with its checkout's registered build.

Steps, each refusing with a `RoleError` code before anything runs:

1. the registration file's raw sha256 must equal ``--sha256``
   (``role_registration_sha256_mismatch``), and its bytes must be the copy
   `doit compare_register` stored in ``--store`` (``role_registration_changed``: a file
   edited after registering is refused whatever sha256 is given);
2. it must decode as a `Registration` (``role_registration_invalid``); a pilot
   registration (`continuity.roles.pilot.registration`) is refused here and by every command that
   reads a compare registration (``lookup_pilot_registration_refused``); its canonical
   digest (`continuity.digest.value_digest`, as `register` prints it) is bound into
   every role receipt through ``--registration-digest``;
3. the output directory: absolute, new, outside both checkouts through symlinks
   (`continuity.roles.register.check_output`); there is no resume.

Then, for each role in `ROLES` order and each registered suite, the role's build is
re-verified (``role_build_changed``), the child runs (`continuity.roles.run_launch`), the
build is verified again, and ``<output>/launches.json`` (schema `LAUNCHES_SCHEMA`) is
rewritten atomically, so a killed run leaves a truthful file. A child that fails, with
or without a receipt, is recorded with its exit status and reason and later roles
still run; a changed build stops the run (recorded first), since no later role could
be attributed to the registered code.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec
from msgspec import UNSET

from continuity.digest import digest_bytes, value_digest
from continuity.errors import RoleError
from continuity.holdout import HoldoutSource, load_frozen
from continuity.holdout.export import export_frozen
from continuity.inputs import REGISTRATION_MAX_BYTES, read_user_bytes
from continuity.outputs import write_output
from continuity.roles.register import Registration, check_output, make_output
from continuity.roles.run_launch import (
    check_receipt,
    child_command,
    child_env,
    launch_child,
    verify_build,
)
from continuity.roles.table import ROLES, Role
from continuity.store import Store

__all__ = [
    "LAUNCHES_FILE",
    "LAUNCHES_SCHEMA",
    "Launch",
    "Launches",
    "check_stored",
    "compare_run",
    "failed_launches",
    "is_pilot_registration",
    "read_registration",
    "registration_bytes",
]

LAUNCHES_SCHEMA = "continuity-lookup-launches-v1"
LAUNCHES_FILE = "launches.json"


class Launch(msgspec.Struct, frozen=True, kw_only=True):
    """One role x suite launch.

    Attributes:
        role: the role's name; code: the checkout it ran in (``r0`` or ``rpack``).
        suite: the registered suite.
        exit_code: the child's exit status (negative: the signal that ended it); None
            when the child never started.
        receipt: the verified receipt's path below the output directory, or None.
        receipt_sha256: its raw sha256, or None.
        reason: None for a clean launch; else ``code: message`` (a failed child, a
            missing or unverified receipt, a changed build).
        started, finished: UTC ISO-8601 times (finished None while it runs).
        build_verified_before, build_verified_after: the build re-verification results.
    """

    role: str
    code: Literal["r0", "rpack"]
    suite: str
    exit_code: int | None
    receipt: str | None
    receipt_sha256: str | None
    reason: str | None
    started: str
    finished: str | None
    build_verified_before: bool
    build_verified_after: bool


class Launches(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = LAUNCHES_SCHEMA
    registration_digest: str
    registration_sha256: str
    launches: list[Launch]


def registration_bytes(path: Path, sha256: str) -> tuple[bytes, str]:
    """The bytes of the registration file at `path` and their raw sha256, which must be
    `sha256` (a compare registration's or a pilot registration's).

    Raises:
        RoleError: ``role_registration_invalid`` (at the file) when it cannot be read;
            ``role_registration_sha256_mismatch`` (at ``--sha256``).
        InputError: ``input_not_a_file``, ``input_too_large`` (over
            `REGISTRATION_MAX_BYTES`; `continuity.inputs`).
    """
    try:
        data = read_user_bytes(path, limit=REGISTRATION_MAX_BYTES, what="the registration")
    except OSError as exc:
        raise RoleError(
            f"cannot read the registration: {exc.strerror}",
            code="role_registration_invalid",
            location=str(path),
        ) from None
    raw = hashlib.sha256(data).hexdigest()
    if raw != sha256.strip().lower():
        raise RoleError(
            f"the registration's sha256 is {raw}, not the one given",
            code="role_registration_sha256_mismatch",
            location="--sha256",
        )
    return data, raw


class _Head(msgspec.Struct):
    schema: object = None


def is_pilot_registration(data: bytes) -> bool:
    """Whether `data` is a pilot registration (`continuity.spend.descriptor`'s schema):
    never a compare registration, whatever else it holds."""
    from continuity.spend.descriptor import PILOT_REGISTRATION_SCHEMA

    try:
        head = msgspec.json.decode(data, type=_Head)
    except msgspec.MsgspecError:
        return False
    return head.schema == PILOT_REGISTRATION_SCHEMA


def check_stored(store: Store, data: bytes, path: Path) -> None:
    """The registration's bytes are the copy `doit compare_register` stored in `store`
    (content-addressed, so any edit after registering gives another object): the
    operator's ``--sha256`` alone would accept an edited file given its new sha256.

    Raises:
        RoleError: ``role_registration_changed`` (at the file).
    """
    if not store.has_object(digest_bytes(data)):
        raise RoleError(
            "the registration is not the copy doit compare_register stored in "
            f"{store.root}: it was changed after registering (or registered into another "
            "store: give that one's --store)",
            code="role_registration_changed",
            location=str(path),
        )


def read_registration(
    path: Path, sha256: str, *, stored_in: Store | None = None
) -> tuple[Registration, str, str]:
    """The registration at `path`, its canonical digest and its raw sha256; with
    `stored_in`, also checked against the copy registered there (`check_stored`).

    Raises:
        RoleError: ``role_registration_invalid`` (at the file) when it cannot be read or
            decoded; ``role_registration_sha256_mismatch`` (at ``--sha256``) when its
            raw sha256 is not `sha256`; ``role_registration_changed`` (at the file) when
            it is not the stored copy; ``lookup_pilot_registration_refused`` (at the
            file) for a pilot registration, which is not a compare registration and
            runs, measures or registers nothing.
        InputError: ``input_not_a_file``, ``input_too_large`` (`registration_bytes`).
    """
    data, raw = registration_bytes(path, sha256)
    if is_pilot_registration(data):
        raise RoleError(
            "a pilot registration is not a compare registration: it enables no paid "
            "route and runs no role (doit estimate reads it; give the external "
            "registration it wraps here)",
            code="lookup_pilot_registration_refused",
            location=str(path),
        )
    try:
        registration = msgspec.json.decode(data, type=Registration)
    except msgspec.MsgspecError as exc:
        raise RoleError(
            f"not a registration: {exc}", code="role_registration_invalid", location=str(path)
        ) from None
    if stored_in is not None:
        check_stored(stored_in, data, path)
    return registration, value_digest(registration), raw


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write(output: Path, launches: Launches) -> None:
    data = msgspec.json.format(msgspec.json.encode(launches)) + b"\n"
    write_output(output / LAUNCHES_FILE, data)


def _verify_builds(registration: Registration) -> None:
    """Both registered builds still hold their recorded installed-file hashes (the issue
    re-verifies both around every role, not only the one the role runs).

    Raises:
        RoleError: ``role_build_changed`` naming the build that changed.
    """
    for code in ("r0", "rpack"):
        verify_build(code, registration.builds[code])


def _launch(
    output: Path,
    registration: Registration,
    digest: str,
    role: Role,
    suite: str,
    holdout: tuple[Store, HoldoutSource] | None = None,
) -> tuple[Launch, RoleError | None]:
    """Run one role on one suite between two build verifications (`holdout`: the store
    a frozen source is copied from into the role's own store first)."""
    code: Literal["r0", "rpack"] = "r0" if role.code == "R0" else "rpack"
    started = _now()
    blank = Launch(
        role=role.name,
        code=code,
        suite=suite,
        exit_code=None,
        receipt=None,
        receipt_sha256=None,
        reason=None,
        started=started,
        finished=None,
        build_verified_before=False,
        build_verified_after=False,
    )
    try:
        _verify_builds(registration)
    except RoleError as exc:
        return msgspec.structs.replace(blank, reason=str(exc), finished=_now()), exc
    role_dir = output / "roles" / role.name / suite
    role_dir.mkdir(parents=True)
    if holdout is not None:
        export_frozen(holdout[0], Store(role_dir / "store"), holdout[1])
    command = child_command(registration, role, suite, digest, role_dir)
    # The role's own directory, never the checkout: nothing of its work tree is imported.
    exit_code = launch_child(command, child_env(role_dir), role_dir, str(role_dir))
    checked = check_receipt(output, role_dir, role, registration, digest)
    reason = checked.reason
    if reason is None and exit_code != 0:
        reason = f"role_child_failed: exit {exit_code}, outcome {checked.outcome}"
    launch = msgspec.structs.replace(
        blank,
        exit_code=exit_code,
        receipt=checked.receipt,
        receipt_sha256=checked.receipt_sha256,
        reason=reason,
        build_verified_before=True,
    )
    try:
        _verify_builds(registration)
    except RoleError as exc:
        return msgspec.structs.replace(launch, reason=str(exc), finished=_now()), exc
    return msgspec.structs.replace(launch, build_verified_after=True, finished=_now()), None


def compare_run(
    registration_path: Path, sha256: str, output: str, store: Store | None = None
) -> tuple[Path, Launches]:
    """Run every registered role x suite; return ``launches.json``'s path and content.
    An external registration's frozen holdout is verified in `store` (the default store
    when None) before anything runs, and copied into each role's own store.

    Raises:
        RoleError: the refusals of the module docstring's steps 1-3, and
            ``role_build_changed`` once recorded in ``launches.json``.
        HoldoutError: an external registration whose source is not frozen in `store`
            (or no longer verifies), before anything runs.
    """
    store = store or Store()
    registration, digest, raw = read_registration(registration_path, sha256, stored_in=store)
    held = registration.workload.holdout
    source = None
    if held is not UNSET:
        source = HoldoutSource(
            Path(held.manifest), held.manifest_sha256, Path(held.statistical_spec)
        )
        load_frozen(store, source)  # verified before anything runs
    out = check_output(output, [Path(registration.r0.path), Path(registration.rpack.path)])
    make_output(out, output)
    launches = Launches(registration_digest=digest, registration_sha256=raw, launches=[])
    _write(out, launches)
    for role in ROLES:
        for suite in registration.workload.suites:
            seed = None if source is None else (store, source)
            launch, changed = _launch(out, registration, digest, role, suite, seed)
            launches.launches.append(launch)
            _write(out, launches)
            if changed is not None:
                raise changed
    return out / LAUNCHES_FILE, launches


def failed_launches(launches: Launches) -> list[Launch]:
    """The launches that did not end with a clean child and a verified receipt."""
    return [launch for launch in launches.launches if launch.reason is not None]
