"""`doit compare_register`: bind two clean checkouts, R0 and Rpack, into a registration.

The registration (schema `REGISTRATION_SCHEMA`) binds both checkouts at full SHAs,
their entrypoint, reader and scorer digests, the lock file and frozen budget digests,
one corpus and model setting for every role, the six roles, and a fresh build of each
checkout. It is written as canonical JSON (sorted keys, compact) to
``<output>/registration.json`` and stored as a content-addressed object whose action key
covers everything it binds except where it was built, so registering the same inputs
again finds the same key (pinned by the ref ``registrations/<raw sha256>``: compare_run
and compare_aggregate accept only this copy). Steps, each refusing with a `RoleError` code:

1. the output directory: absolute, new, outside both checkouts (through symlinks);
   reserved before anything is built;
2. each checkout: at its full SHA, clean, implementing `ROLE_PROTOCOL`;
3. the full tree comparison: Rpack differs, only within `GUIDANCE_PATHS`, touching
   `RENDERER_PATH`, with the `WITNESS` in Rpack's renderer and not in R0's;
4. the bound digests (identical in both: none is a guidance path, and step 3 refused
   any other difference);
5. a fresh build of each (`continuity.roles.register_build`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import msgspec
from msgspec import UNSET, UnsetType

from continuity.digest import artifact_key, code_digest, value_digest
from continuity.errors import RoleError, UsageError
from continuity.roles.guidance import (
    GUIDANCE_PATHS,
    RENDERER_PATH,
    ROLE_PROTOCOL,
    WITNESS,
    exports_witness,
)
from continuity.roles.register_build import BuildReceipt, build_checkout
from continuity.roles.register_git import (
    TreeEntry,
    check_clean,
    check_revision,
    list_tree,
    read_blob,
    tree_id,
)
from continuity.roles.register_holdout import HoldoutWorkload, check_sizing_build
from continuity.roles.table import ROLES, Role
from continuity.store import Store

__all__ = [
    "DEFAULT_SUITES",
    "ENTRYPOINT_PATHS",
    "LOCK_PATH",
    "PROTOCOL_PATH",
    "READER_PATH",
    "REGISTRATION_SCHEMA",
    "REGISTRATION_SCHEMA_V2",
    "ROLE_NAMES",
    "BoundDigests",
    "Checkout",
    "Registered",
    "Registration",
    "Workload",
    "budget_path",
    "check_output",
    "compare_trees",
    "make_output",
    "register",
    "workload",
]

REGISTRATION_SCHEMA = "continuity-lookup-registration-v1"
# An external registration (a frozen holdout source, `continuity.roles.register_holdout`).
REGISTRATION_SCHEMA_V2 = "continuity-lookup-registration-v2"
DEFAULT_SUITES = ("original", "hard", "hard-distractors")
# The six roles, bound with their arm, code and soul (continuity.roles.table).
ROLE_NAMES = tuple(role.name for role in ROLES)
# The units command: its task's options (rules/units.py) and its entry point. A checkout
# from before the command moved into the package records the latter as "missing".
ENTRYPOINT_PATHS = (
    "dodo.py",
    "rules/units.py",
    "continuity/commands/units.py",
    "continuity/commands/units_request.py",
)
READER_PATH = "continuity/lookup/reader.py"
LOCK_PATH = "pyproject.toml"
PROTOCOL_PATH = "continuity/roles/guidance.py"
_SALT = "1"


class Checkout(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    revision: str
    tree: str  # the git tree object id of `revision`


class BoundDigests(msgspec.Struct, frozen=True, kw_only=True):
    """sha256 of the blobs each role's code and data come from, by repository path."""

    entrypoint: dict[str, str]
    reader: dict[str, str]
    scorer: dict[str, str]
    lock: dict[str, str]
    budget: dict[str, str]


class Workload(msgspec.Struct, frozen=True, kw_only=True):
    """The corpus and model settings every role runs with (one for all six)."""

    suites: list[str]
    traces: list[str]
    probe_limit: int | None
    repeats: int
    reader_binding: str
    reader_model: str
    effort: str
    judge: str | None
    restricted: bool
    # An external registration's source, selection, sizing, output limit and cap; left
    # out of a v1 registration, which keeps its bytes and digest.
    holdout: HoldoutWorkload | UnsetType = UNSET


class Registration(msgspec.Struct, frozen=True, kw_only=True):
    schema: str
    protocol: str
    r0: Checkout
    rpack: Checkout
    differing: list[str]
    digests: BoundDigests
    workload: Workload
    roles: list[Role]
    builds: dict[str, BuildReceipt]


class Registered(msgspec.Struct, frozen=True, kw_only=True):
    """What `register` wrote: the file, its raw sha256, canonical digest and store key."""

    path: Path
    sha256: str
    registration_digest: str
    key: str
    registration: Registration


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_output(output: str, checkouts: Sequence[Path]) -> Path:
    """The output directory: absolute, not there yet, outside every checkout.

    Raises:
        RoleError: ``role_output_not_absolute``, ``role_output_exists``,
            ``role_output_inside_checkout`` (and, creating it, `make_output`'s
            ``role_output_invalid``).
    """
    path = Path(output)
    if not output or not path.is_absolute():
        raise RoleError(
            "the output directory must be an absolute path",
            code="role_output_not_absolute",
            location=output,
        )
    if os.path.lexists(path):
        raise RoleError(
            "the output directory exists; use a new path",
            code="role_output_exists",
            location=output,
        )
    parent = path
    rest: list[str] = []
    while not os.path.lexists(parent):
        rest.insert(0, parent.name)
        parent = parent.parent
    real = Path(os.path.realpath(parent)).joinpath(*rest)
    for checkout in checkouts:
        root = Path(os.path.realpath(checkout))
        if _inside(real, root):
            raise RoleError(
                f"the output directory resolves to {real}, inside the checkout {root}",
                code="role_output_inside_checkout",
                location=output,
            )
    return real


def make_output(path: Path, output: str) -> None:
    """Create the checked output directory `path` (``--output`` as given: `output`).

    Raises:
        RoleError: ``role_output_invalid`` when it cannot be created (a parent that is a
            file, ``/proc``, no permission).
    """
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise RoleError(
            f"cannot create the output directory: {exc.strerror or type(exc).__name__}",
            code="role_output_invalid",
            location=output,
        ) from None


def _blob(checkout: Path, tree: dict[str, TreeEntry], path: str) -> bytes | None:
    entry = tree.get(path)
    return None if entry is None else read_blob(checkout, entry.object_id)


def compare_trees(
    r0: tuple[Path, dict[str, TreeEntry]], rpack: tuple[Path, dict[str, TreeEntry]]
) -> list[str]:
    """The differing paths (modes and deletions count) once they make a treatment.

    Raises:
        RoleError: ``role_no_difference``, ``role_diff_outside_guidance``,
            ``role_renderer_untouched``, ``lookup_rpack_direction_invalid``,
            ``role_witness_missing``.
    """
    (r0_path, r0_tree), (rpack_path, rpack_tree) = r0, rpack
    differing = sorted(
        path
        for path in r0_tree.keys() | rpack_tree.keys()
        if r0_tree.get(path) != rpack_tree.get(path)
    )
    if not differing:
        raise RoleError(
            "Rpack's tree is R0's: no treatment",
            code="role_no_difference",
            location=str(rpack_path),
        )
    outside = [path for path in differing if path not in GUIDANCE_PATHS]
    if outside:
        raise RoleError(
            f"{len(outside)} differing paths are outside the guidance paths "
            f"(first: {', '.join(outside[:3])})",
            code="role_diff_outside_guidance",
            location=str(rpack_path),
        )
    if RENDERER_PATH not in differing:
        raise RoleError(
            f"the difference does not touch {RENDERER_PATH}",
            code="role_renderer_untouched",
            location=str(rpack_path),
        )
    in_r0 = exports_witness(_blob(r0_path, r0_tree, RENDERER_PATH) or b"")
    in_rpack = exports_witness(_blob(rpack_path, rpack_tree, RENDERER_PATH) or b"")
    if in_r0 and not in_rpack:
        raise RoleError(
            f"{WITNESS} is in R0's {RENDERER_PATH} and not in Rpack's: the roles are reversed",
            code="lookup_rpack_direction_invalid",
            location=str(rpack_path),
        )
    if in_r0 or not in_rpack:
        raise RoleError(
            f"{WITNESS} must be in Rpack's {RENDERER_PATH} and absent from R0's "
            f"(R0 {'has' if in_r0 else 'lacks'} it, Rpack {'has' if in_rpack else 'lacks'} it)",
            code="role_witness_missing",
            location=str(rpack_path),
        )
    return differing


def _check_protocol(checkout: Path, tree: dict[str, TreeEntry]) -> None:
    blob = _blob(checkout, tree, PROTOCOL_PATH)
    if blob is None or f'"{ROLE_PROTOCOL}"'.encode() not in blob:
        raise RoleError(
            f"the checkout does not declare {ROLE_PROTOCOL} in {PROTOCOL_PATH}; "
            "an older checkout is incompatible (no shim)",
            code="role_protocol_missing",
            location=str(checkout),
        )


def _scorer_paths() -> tuple[str, ...]:
    from continuity.probes.scorer_version import SCORER_MODULES

    return tuple(name.replace(".", "/") + ".py" for name in SCORER_MODULES)


def budget_path() -> str:
    """The frozen budget a registration binds: the current probe protocol's policy."""
    from continuity.lookup.policy import DEFAULT_POLICY

    return f"fixtures/lookup/{DEFAULT_POLICY}"


def _digests(checkout: Path, tree: dict[str, TreeEntry]) -> BoundDigests:
    def group(paths: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for path in paths:
            blob = _blob(checkout, tree, path)
            found[path] = "missing" if blob is None else hashlib.sha256(blob).hexdigest()
        return found

    return BoundDigests(
        entrypoint=group(ENTRYPOINT_PATHS),
        reader=group((READER_PATH,)),
        scorer=group(_scorer_paths()),
        lock=group((LOCK_PATH,)),
        budget=group((budget_path(),)),
    )


def _sized_reader(holdout: HoldoutWorkload) -> str:
    """The paid reader an external registration's sizing prices (`doit lookup_budget
    --reader-model`; the scripted binding's reader, Sol, by default)."""
    from continuity.lookup.fixed_budget import load_fixed_budget

    return load_fixed_budget(Path(holdout.sizing), holdout.sizing_sha256).reader.reader


def workload(
    suites: Sequence[str],
    traces: Sequence[str],
    probe_limit: int | None,
    holdout: HoldoutWorkload | None = None,
) -> Workload:
    """The one corpus and model setting of every role: the lookup defaults (the default
    scripted reader binding, effort low, no judge, one repeat). With `holdout` (an
    external registration) the suite is ``holdout``, its traces are the selection's, and
    the reader model is the one its sizing prices.

    Raises:
        UsageError: ``suite_unknown``; ``holdout_trace_selection_refused`` (--suites or
            --trace beside a holdout source).
    """
    from continuity.lookup.reader import binding_models
    from continuity.traces.keys import SUITES

    if holdout is not None:
        from continuity.holdout import refuse_explicit_traces

        if suites or traces:
            refuse_explicit_traces("--suites" if suites else "--trace")
        return Workload(
            suites=["holdout"],
            traces=[],
            probe_limit=probe_limit,
            repeats=1,
            reader_binding="default",
            reader_model=_sized_reader(holdout),
            effort="low",
            judge=None,
            restricted=probe_limit is not None,
            holdout=holdout,
        )
    chosen = list(suites) or list(DEFAULT_SUITES)
    for suite in chosen:
        if suite not in SUITES:
            raise UsageError(
                f"unknown suite {suite[:40]!r}; choose from {', '.join(SUITES)}",
                code="suite_unknown",
                location="--suites",
            )
    restricted = tuple(chosen) != DEFAULT_SUITES or bool(traces) or probe_limit is not None
    return Workload(
        suites=chosen,
        traces=list(traces),
        probe_limit=probe_limit,
        repeats=1,
        reader_binding="default",
        reader_model=binding_models("default")[0],
        effort="low",
        judge=None,
        restricted=restricted,
    )


def _store_key(registration: Registration) -> str:
    # Everything bound, except where it was built (the venv paths and the build time):
    # the same checkouts, settings and installed files give the same key.
    builds = {
        name: (receipt.python_version, receipt.files_digest)
        for name, receipt in registration.builds.items()
    }
    params = {
        "registration": msgspec.to_builtins(msgspec.structs.replace(registration, builds={})),
        "builds": builds,
    }
    return artifact_key(
        "lookup-registration",
        salt=_SALT,
        code=code_digest(["continuity.roles.register", "continuity.roles.register_build"]),
        params=params,
    )


def register(
    store: Store,
    r0: tuple[Path, str],
    rpack: tuple[Path, str],
    output: str,
    work: Workload,
) -> Registered:
    """Check, build and bind R0 and Rpack; write and store ``registration.json``.

    Raises:
        RoleError: every refusal of the steps in the module docstring.
    """
    out = check_output(output, [r0[0], rpack[0]])
    if work.holdout is not UNSET:  # an external registration's sizing: clean, at Rpack
        check_sizing_build(work.holdout, rpack[1])
    make_output(out, output)  # reserved before anything is built
    trees: dict[str, dict[str, TreeEntry]] = {}
    checkouts: dict[str, Checkout] = {}
    for name, (path, revision) in (("r0", r0), ("rpack", rpack)):
        check_revision(path, revision, f"--{name}-revision")
        check_clean(path)
        trees[name] = list_tree(path, revision)
        _check_protocol(path, trees[name])
        checkouts[name] = Checkout(
            path=str(path.resolve()), revision=revision, tree=tree_id(path, revision)
        )
    differing = compare_trees((r0[0], trees["r0"]), (rpack[0], trees["rpack"]))
    # R0's digests are Rpack's too: no bound path is a guidance path, and the tree
    # comparison refused any other difference.
    digests = _digests(r0[0], trees["r0"])
    builds = {
        name: build_checkout(path, revision, out / "build" / name)
        for name, (path, revision) in (("r0", r0), ("rpack", rpack))
    }
    registration = Registration(
        schema=REGISTRATION_SCHEMA if work.holdout is UNSET else REGISTRATION_SCHEMA_V2,
        protocol=ROLE_PROTOCOL,
        r0=checkouts["r0"],
        rpack=checkouts["rpack"],
        differing=differing,
        digests=digests,
        workload=work,
        roles=list(ROLES),
        builds=builds,
    )
    data = msgspec.json.encode(registration, order="sorted")
    target = out / "registration.json"
    target.write_bytes(data)
    key = _store_key(registration)
    stored = store.put_blob(data)
    store.record_action(
        key,
        kind="lookup-registration",
        output=stored,
        meta={"path": str(target), "sha256": hashlib.sha256(data).hexdigest()},
    )
    store.set_ref(  # compare_run and compare_aggregate check the file against this copy
        f"registrations/{hashlib.sha256(data).hexdigest()}", objects=[stored], actions=[key]
    )
    return Registered(
        path=target,
        sha256=hashlib.sha256(data).hexdigest(),
        registration_digest=value_digest(registration),
        key=key,
        registration=registration,
    )
