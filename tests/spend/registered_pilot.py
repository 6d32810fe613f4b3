"""A registered real-domain pilot for the real-send factory's tests.

`register` writes a pilot registration (a fictional, sound descriptor over the given
registry) wrapping a compare registration whose R0 and Rpack builds are one exported
tree, and returns it with the bindings an authorization of it carries. The tree is
either this checkout's package and fixtures without bytecode (`export(..., package=True)`:
a child runs it when ``PYTHONPATH`` points at it and the test's interpreter is the
build's) or a few files (`export(root)`: for in-process checks, where only the
running-code lookup is redirected to it, as the burn registry's home lookup is).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from continuity.digest import value_digest
from continuity.installation import tree_hashes
from continuity.roles.guidance import RENDERER_PATH, ROLE_PROTOCOL
from continuity.roles.register import (
    ENTRYPOINT_PATHS,
    LOCK_PATH,
    READER_PATH,
    REGISTRATION_SCHEMA_V2,
    BoundDigests,
    Checkout,
    Registration,
    Workload,
)
from continuity.roles.register_build import PTH_FILE, BuildReceipt
from continuity.roles.table import ROLES
from continuity.spend.assumptions import ASSUMED_V1, Assumptions, assumptions_digest
from continuity.spend.authorization import Bindings
from continuity.spend.descriptor import (
    PILOT_REGISTRATION_SCHEMA,
    CatalogBinding,
    PilotRegistration,
    WrappedRegistration,
    descriptor_digest,
    sealed_catalog,
)
from tests.spend.test_descriptor import DESCRIPTOR

REPO = Path(__file__).resolve().parents[2]
REVISION = "1" * 40
TREE = "2" * 40
_NO_BYTECODE = shutil.ignore_patterns("__pycache__", "*.pyc")


def export(root: Path, *, package: bool = False, revision: str = REVISION) -> Path:
    """A build's exported tree under `root`: this checkout's package and fixtures, or a
    few files; with its ``REVISION``."""
    src = root / "src"
    if package:
        shutil.copytree(REPO / "continuity", src / "continuity", ignore=_NO_BYTECODE)
        shutil.copytree(REPO / "fixtures", src / "fixtures", ignore=_NO_BYTECODE)
    else:
        (src / "continuity").mkdir(parents=True)
        (src / "continuity" / "__init__.py").write_text('"""A build\'s package."""\n')
        (src / "dodo.py").write_text("# the build's tasks\n")
    (src / "REVISION").write_text(f"{revision}\n")
    return src


def receipt(src: Path, python: str = sys.executable) -> BuildReceipt:
    """The receipt of a build whose export is `src`, run by `python`."""
    site = src.parent / "site"
    site.mkdir(exist_ok=True)
    (site / PTH_FILE).write_text(f"{src}\n")
    return BuildReceipt(
        venv=str(src.parent / "venv"),
        python=python,
        python_version="3",
        site_packages=str(site),
        src=str(src),
        files=tree_hashes(src),
        pth_sha256=hashlib.sha256((site / PTH_FILE).read_bytes()).hexdigest(),
        files_digest="",
        seconds=0.25,
    )


def digests(src: Path) -> BoundDigests:
    """The bound digests of the export `src` (``missing`` where it holds no such file)."""

    def group(*paths: str) -> dict[str, str]:
        return {
            path: hashlib.sha256((src / path).read_bytes()).hexdigest()
            if (src / path).is_file()
            else "missing"
            for path in paths
        }

    return BoundDigests(
        entrypoint=group(*ENTRYPOINT_PATHS),
        reader=group(READER_PATH),
        scorer={},
        lock=group(LOCK_PATH),
        budget={},
    )


def descriptor_of(registry: Assumptions) -> Any:
    """A sound descriptor binding `registry` (its catalog binding is the registry's)."""
    rates = registry.rates
    catalog = sealed_catalog(
        CatalogBinding(
            model=registry.model,
            input=rates.input,
            output=rates.output,
            cache_read=rates.cache_read,
            cache_write=rates.cache_write,
            context_window=registry.input_envelope,
            max_output=max(registry.max_output, 128_000),
            tiers=(),
            digest="",
        )
    )
    return msgspec.structs.replace(
        DESCRIPTOR,
        assumptions=registry,
        assumptions_digest=assumptions_digest(registry),
        catalog=catalog,
    )


@dataclass(frozen=True)
class Registered:
    """A written pilot registration, the wrapped one and what their bindings are."""

    path: Path
    wrapped: Path
    src: Path
    values: dict[str, str]  # every binding but the output root and credentials

    def bindings(self, credentials: Path, output_root: str = "output-root") -> Bindings:
        return Bindings(**self.values, output_root=output_root, credentials_path=str(credentials))


def register(root: Path, src: Path, **change: Any) -> Registered:
    """Write the registrations under `root` for the build exported at `src`. `change`:
    ``registry``, ``effort``, ``reader``, ``descriptor``, ``revision``, ``digests``,
    ``built`` (the checkouts with a build), ``python`` (the build's interpreter) and
    ``bindings`` (values the authorization binds instead)."""
    registry = change.get("registry", ASSUMED_V1)
    reader = change.get("reader", registry.model)
    build = receipt(src, change.get("python", sys.executable))
    checkout = Checkout(path="/nonexistent", revision=change.get("revision", REVISION), tree=TREE)
    wrapped = Registration(
        schema=REGISTRATION_SCHEMA_V2,
        protocol=ROLE_PROTOCOL,
        r0=checkout,
        rpack=checkout,
        differing=[RENDERER_PATH],
        digests=change.get("digests", digests(src)),
        workload=Workload(
            suites=[],
            traces=[],
            probe_limit=None,
            repeats=1,
            reader_binding="default",
            reader_model=reader,
            effort=change.get("effort", "high"),
            judge=None,
            restricted=False,
        ),
        roles=list(ROLES),
        builds={name: build for name in change.get("built", ("r0", "rpack"))},
    )
    wrapped_path = root / "registration.json"
    wrapped_path.write_bytes(msgspec.json.encode(wrapped, order="sorted"))
    descriptor = change.get("descriptor", descriptor_of(registry))
    pilot = PilotRegistration(
        schema=PILOT_REGISTRATION_SCHEMA,
        registration=WrappedRegistration(
            path=str(wrapped_path),
            sha256=hashlib.sha256(wrapped_path.read_bytes()).hexdigest(),
            schema=REGISTRATION_SCHEMA_V2,
            registration_digest="d" * 64,
        ),
        descriptor=descriptor,
    )
    path = root / "pilot-registration.json"
    path.write_bytes(msgspec.json.encode(pilot, order="sorted"))

    def build_digest(name: str) -> str:
        return value_digest(msgspec.to_builtins(wrapped.builds.get(name)))

    values = {
        "registration_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "registration_digest": value_digest(msgspec.to_builtins(pilot)),
        "controller_revision": "controller-revision",
        "r0_code": TREE,
        "r0_build": build_digest("r0"),
        "rpack_code": TREE,
        "rpack_build": build_digest("rpack"),
        "protocol": ROLE_PROTOCOL,
        "catalog": descriptor.catalog.digest,
        "policy": "policy",
        "source": "source",
        "selection": descriptor.schedule.selection_digest,
        "reader": reader,
        "effort": wrapped.workload.effort,
        "descriptor": descriptor_digest(descriptor),
    }
    values.update(change.get("bindings", {}))
    return Registered(path=path, wrapped=wrapped_path, src=src, values=values)


def with_builds(registration: Path, src: Path) -> str:
    """Give the compare registration at `registration` R0 and Rpack builds that are the
    export `src` (run by this interpreter); its new raw sha256."""
    build = msgspec.to_builtins(receipt(src))
    data = msgspec.json.decode(registration.read_bytes())
    data["builds"] = {"r0": build, "rpack": build}
    registration.write_bytes(msgspec.json.encode(data, order="sorted"))
    return hashlib.sha256(registration.read_bytes()).hexdigest()
