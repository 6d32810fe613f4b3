"""One-use consumption of a pilot authorization, under the writer lease.

An authorization can be consumed once, ever, however its id is spelled. The **burn
registry** keeps one entry per consumed authorization, ``<registry>/<sha256(domain NUL
identity)>/``, where the identity is what was authorized, not its spelling
(`continuity.spend.authorization`: a digest of the account commitment, the salt, the
approver, the approval reference and the id in its canonical form, `canonical_text`:
NFKC, case-folded, whitespace collapsed and stripped). A caller without an
authorization artifact (the faux smoke) burns the canonical id alone (`id_identity`).
Reformatting the artifact, renaming it or respelling its id (a trailing space, another
case, full-width letters) cannot make a second use, and the raw artifact digest lives
inside the claim, not in the key. An entry keyed by the id itself (the registry before
identities: ``sha256(domain NUL id)``, literal or canonical) still burns. The real
registry is fixed from the password database's home of this user
(`pwd.getpwuid(os.getuid()).pw_dir`), never ``$HOME``, XDG variables, configuration or
arguments:
``~/.local/state/continuity/lookup-pilot/consumed-v1/``. The faux (test) domain keeps its
own registry under the output root's parent, never the real one.

`consume` runs under a verified `continuity.spend.lease.Lease`:

1. revalidate (the caller's validator: the attestation, its bindings, the account),
   check the paths (`check_paths`), and require an unused output root (nothing in it but
   the lease, no ``units/``, no marker);
2. exclusively create the registry entry. Its existence alone burns the authorization
   (an entry of the id itself, from before burn identities, counts as burned); every
   ancestor's parent is synced as the path is made, and the entry's parent before any
   claim is written;
3. exclusively write and sync ``authorization-consumed.json`` in the output root, then
   ``claim.json`` in the registry entry;
4. verify the complete pair (`verify_consumption`): authorization id, identity and raw
   digest,
   output root, run id, epoch, the controller's PID and start identity, and the device
   and inode of the output root and of the lease file, with the lease still held.

A partial or corrupt pair is permanently unusable: there is no replay, repair or
rollback, and recreating the output root does not undo a burn. The real domain refuses
whenever ``CI`` or ``CONTINUITY_DEBUG`` is set, even empty.

Codes (`SpendError`): ``lookup_pilot_environment_refused``,
``lookup_consumption_path_invalid``, ``lookup_pilot_root_used``,
``lookup_authorization_consumed``, ``lookup_consumption_failed``,
``lookup_consumption_invalid``; and the lease's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import stat
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from continuity.digest import value_digest
from continuity.errors import SpendError
from continuity.spend.lease import LEASE_NAME, Lease
from continuity.spend.private import read_private, sync_directory, write_new

__all__ = [
    "CLAIM_FILE",
    "CONSUMED_MARKER",
    "FAUX_DOMAIN",
    "REAL_DOMAIN",
    "Claim",
    "canonical_text",
    "check_paths",
    "consume",
    "id_identity",
    "registry_entry",
    "registry_root",
    "verify_consumption",
]

REAL_DOMAIN = "continuity-lookup-authorization-v1"
FAUX_DOMAIN = "continuity-lookup-faux-authorization-v1"
CONSUMED_MARKER = "authorization-consumed.json"
CLAIM_FILE = "claim.json"
_REGISTRY = Path(".local/state/continuity/lookup-pilot/consumed-v1")
_REFUSED_VARIABLES = ("CI", "CONTINUITY_DEBUG")


def _home() -> Path:
    """This user's home from the password database (the one lookup tests redirect)."""
    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def registry_root(domain: str, output_root: Path) -> Path:
    """The burn registry of `domain`: the real one under the password database's home,
    the faux one beside the output root."""
    if domain == REAL_DOMAIN:
        return _home() / _REGISTRY
    if domain == FAUX_DOMAIN:
        return output_root.parent / ".faux-consumed-v1"
    raise SpendError(
        f"unknown authorization domain {domain!r}",
        code="lookup_consumption_invalid",
        location="domain",
    )


def canonical_text(text: str) -> str:
    """`text` as one spelling of everything it may be written as: NFKC (full-width and
    compatibility forms to their plain ones), case-folded, NFKC again, every run of
    whitespace one space, the ends stripped."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def id_identity(authorization_id: str) -> str:
    """The burn identity of an id alone (no authorization artifact): its canonical form."""
    return value_digest(("continuity-lookup-authorization-id-v1", canonical_text(authorization_id)))


def _key(domain: str, material: str) -> str:
    return hashlib.sha256(domain.encode() + b"\0" + material.encode()).hexdigest()


def registry_entry(
    domain: str, authorization_id: str, output_root: Path, identity: str | None = None
) -> Path:
    """The registry entry that burns `identity` (default: `id_identity` of the id)."""
    burned = identity if identity is not None else id_identity(authorization_id)
    return registry_root(domain, output_root) / _key(domain, burned)


def _burned_by_id(domain: str, authorization_id: str, output_root: Path) -> bool:
    """An entry keyed by the id itself, literal or canonical, exists (the registry's
    keys before burn identities)."""
    root = registry_root(domain, output_root)
    spellings = {authorization_id, canonical_text(authorization_id)}
    return any(os.path.lexists(root / _key(domain, spelling)) for spelling in spellings)


@dataclass(frozen=True)
class Claim:
    """What both halves of a consumption record (the same in each)."""

    domain: str
    authorization_id: str
    identity: str  # what the registry entry burns (module doc)
    raw_sha256: str
    output_root: str
    run_id: str
    epoch: str
    controller_pid: int
    controller_start: str
    root_device: int
    root_inode: int
    lease_device: int
    lease_inode: int


def _inside(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def _owner_safe(path: Path) -> bool:
    """Every ancestor is owned by this user or root and writable by no one else (a
    sticky directory such as /tmp excepted)."""
    for directory in (path, *path.parents):
        try:
            info = os.lstat(directory)
        except FileNotFoundError:
            continue  # made later, privately
        if stat.S_ISLNK(info.st_mode) or info.st_uid not in (0, os.getuid()):
            return False
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            return False
    return True


def check_paths(output_root: Path, registry: Path, checkouts: Sequence[Path]) -> None:
    """The output root and the registry are canonical, disjoint, outside every
    registered checkout, with owner-safe ancestors; the output root is private.

    Raises:
        SpendError: ``lookup_consumption_path_invalid``.
    """
    for name, path in (("output root", output_root), ("registry", registry)):
        if not path.is_absolute() or Path(os.path.realpath(path)) != path:
            raise SpendError(
                f"the {name} must be an absolute path with no link in it",
                code="lookup_consumption_path_invalid",
                location=name,
            )
        if not _owner_safe(path):
            raise SpendError(
                f"an ancestor of the {name} is another user's or writable by others",
                code="lookup_consumption_path_invalid",
                location=name,
            )
        for checkout in checkouts:
            real = Path(os.path.realpath(checkout))
            if _inside(path, real) or _inside(real, path):
                raise SpendError(
                    f"the {name} overlaps a registered checkout",
                    code="lookup_consumption_path_invalid",
                    location=name,
                )
    if _inside(output_root, registry) or _inside(registry, output_root):
        raise SpendError(
            "the output root and the registry overlap",
            code="lookup_consumption_path_invalid",
            location="paths",
        )
    info = os.lstat(output_root)
    if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) & 0o077:
        raise SpendError(
            "the output root must be a private directory",
            code="lookup_consumption_path_invalid",
            location="output root",
        )


def _make_registry(registry: Path) -> None:
    """Create the registry's missing ancestors privately, syncing each parent (even when
    the directory already existed)."""
    missing = [p for p in (registry, *registry.parents) if not p.exists()]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        sync_directory(directory.parent)
    sync_directory(registry.parent)


def _write_new(path: Path, value: Mapping[str, object]) -> None:
    """Exclusively create `path` with `value` as JSON, synced (`write_new`)."""
    write_new(path, json.dumps(value, sort_keys=True, indent=2).encode() + b"\n")


def _read_private(path: Path) -> dict[str, object]:
    """A private JSON claim of this user (`read_private`: no link, no alias, no swap)."""
    if not path.exists() and not path.is_symlink():
        raise SpendError(
            f"{path.name} is missing", code="lookup_consumption_invalid", location=path.name
        )
    data = read_private(path)
    try:
        value = json.loads(data) if data is not None else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise SpendError(
            f"{path.name} is not a sound claim",
            code="lookup_consumption_invalid",
            location=path.name,
        )
    return value


def _refuse_environment(domain: str, environ: Mapping[str, str]) -> None:
    if domain == REAL_DOMAIN:
        present = [name for name in _REFUSED_VARIABLES if name in environ]
        if present:
            raise SpendError(
                f"{', '.join(present)} is set: a real authorization is never consumed under "
                "CI or debugging",
                code="lookup_pilot_environment_refused",
                location=present[0],
            )


def _require_unused(output_root: Path) -> None:
    allowed = {LEASE_NAME, LEASE_NAME + "-journal"}
    used = sorted(name for name in os.listdir(output_root) if name not in allowed)
    if used:
        raise SpendError(
            f"the output root is not unused ({', '.join(used[:3])})",
            code="lookup_pilot_root_used",
            location=str(output_root),
        )


def _burn(entry: Path, domain: str, authorization_id: str, output_root: Path) -> None:
    """Make the authorization's registry `entry` (the burn, module docstring step 2).

    Raises:
        SpendError: ``lookup_authorization_consumed`` when it was burned already;
            ``lookup_consumption_failed`` when the entry cannot be made.
    """
    try:
        _make_registry(entry.parent)
        spent = _burned_by_id(domain, authorization_id, output_root)
        if not spent:
            entry.mkdir(mode=0o700)  # the burn
    except FileExistsError:
        spent = True
    except OSError as exc:
        raise SpendError(
            f"the registry entry cannot be made ({exc.strerror})",
            code="lookup_consumption_failed",
            location="registry",
        ) from None
    if spent:
        raise SpendError(
            "this authorization was consumed already",
            code="lookup_authorization_consumed",
            location="registry",
        )


def consume(
    *,
    domain: str,
    authorization_id: str,
    raw_sha256: str,
    output_root: Path,
    run_id: str,
    epoch: str,
    lease: Lease,
    revalidate: Callable[[], None],
    checkouts: Sequence[Path],
    environ: Mapping[str, str] | None = None,
    identity: str | None = None,
) -> Claim:
    """Burn `identity` (the validated authorization's, `AuthorizationHandle.identity`;
    default: `id_identity` of `authorization_id`) and write the claim pair (module
    docstring, steps 1-4).

    Raises:
        SpendError: the module's codes and the lease's.
    """
    _refuse_environment(domain, os.environ if environ is None else environ)
    lease.verify()
    revalidate()
    burned = identity if identity is not None else id_identity(authorization_id)
    entry = registry_entry(domain, authorization_id, output_root, burned)
    check_paths(output_root, entry.parent, checkouts)
    if lease.path.parent != output_root:
        raise SpendError(
            "the lease is not the output root's",
            code="lookup_consumption_invalid",
            location="lease",
        )
    _require_unused(output_root)
    root_info = os.lstat(output_root)
    claim = Claim(
        domain=domain,
        authorization_id=authorization_id,
        identity=burned,
        raw_sha256=raw_sha256,
        output_root=str(output_root),
        run_id=run_id,
        epoch=epoch,
        controller_pid=lease.holder.pid,
        controller_start=lease.holder.start,
        root_device=root_info.st_dev,
        root_inode=root_info.st_ino,
        lease_device=lease.device,
        lease_inode=lease.inode,
    )
    _burn(entry, domain, authorization_id, output_root)
    try:
        sync_directory(entry.parent)
        _write_new(output_root / CONSUMED_MARKER, asdict(claim))
        _write_new(entry / CLAIM_FILE, asdict(claim))
    except OSError as exc:  # the id stays burned: no rollback
        raise SpendError(
            f"the claim pair cannot be written ({exc.strerror}); the authorization is spent",
            code="lookup_consumption_failed",
            location="claim",
        ) from None
    verify_consumption(claim, lease)
    return claim


def verify_consumption(claim: Claim, lease: Lease) -> None:
    """Both halves match `claim`, the output root and the lease are the same inodes, and
    the lease is still held.

    Raises:
        SpendError: ``lookup_consumption_invalid`` and the lease's codes.
    """
    lease.verify()
    root = Path(claim.output_root)
    expected = asdict(claim)
    entry = registry_entry(claim.domain, claim.authorization_id, root, claim.identity)
    for path in (root / CONSUMED_MARKER, entry / CLAIM_FILE):
        if _read_private(path) != expected:
            raise SpendError(
                f"{path.name} does not match the consumption",
                code="lookup_consumption_invalid",
                location=path.name,
            )
    info = os.lstat(root)
    if (info.st_dev, info.st_ino) != (claim.root_device, claim.root_inode):
        raise SpendError(
            "the output root was recreated", code="lookup_consumption_invalid", location=str(root)
        )
    if (lease.device, lease.inode) != (claim.lease_device, claim.lease_inode):
        raise SpendError(
            "the claim names another lease", code="lookup_consumption_invalid", location="lease"
        )
