"""The controller checkout (`continuity.roles.pilot.run.check_controller`): it runs from
the registered R0 checkout, both checkouts at their revisions and clean, both builds
unchanged, the role protocol. Real git repositories in temporary directories; each build
receipt is taken over a real exported tree and ``.pth`` file, as registration takes it."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from continuity.errors import RoleError
from continuity.installation import tree_hashes
from continuity.roles.pilot.registration import VerifiedPilot, read_pilot
from continuity.roles.pilot.run import check_controller
from continuity.roles.register import Checkout
from continuity.roles.register_build import PTH_FILE, BuildReceipt
from tests.roles.pilot_toy import PilotToy, pilot_toy, registered  # noqa: F401 (fixture)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _checkout(root: Path, name: str) -> Checkout:
    repo = root / name
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "README").write_text(f"{name}\n")
    _git(repo, "add", "README")
    _git(repo, "commit", "-q", "-m", "init")
    revision = _git(repo, "rev-parse", "HEAD")
    return Checkout(path=str(repo), revision=revision, tree=_git(repo, "rev-parse", "HEAD^{tree}"))


def _build(root: Path, name: str) -> BuildReceipt:
    src, site = root / f"{name}-src", root / f"{name}-site"
    src.mkdir()
    site.mkdir()
    (src / "REVISION").write_text("0" * 40)
    (site / PTH_FILE).write_text(str(src) + "\n")
    return BuildReceipt(
        venv=str(root / f"{name}-venv"),
        python=sys.executable,
        python_version="3",
        site_packages=str(site),
        src=str(src),
        files=tree_hashes(src),
        pth_sha256=hashlib.sha256((site / PTH_FILE).read_bytes()).hexdigest(),
        files_digest="",
        seconds=0.0,
    )


class Setup:
    def __init__(self, verified: VerifiedPilot, root: Path) -> None:
        self.r0, self.rpack = _checkout(root, "r0"), _checkout(root, "rpack")
        builds = {"r0": _build(root, "r0"), "rpack": _build(root, "rpack")}
        registration = msgspec.structs.replace(
            verified.registration, r0=self.r0, rpack=self.rpack, builds=builds
        )
        self.verified = replace(verified, registration=registration)


@pytest.fixture
def setup(pilot_toy: PilotToy, tmp_path: Path) -> Setup:  # noqa: F811
    done = registered(pilot_toy)
    verified = read_pilot(done.path, done.sha256, pricing=pilot_toy.catalog)
    return Setup(verified, tmp_path / "checkouts")


def test_the_registered_r0_checkout_clean_with_its_builds_passes(setup: Setup) -> None:
    check_controller(setup.verified, Path(setup.r0.path))


def _refused(setup: Setup, checkout: Path | None = None) -> RoleError:
    with pytest.raises(RoleError) as caught:
        check_controller(setup.verified, checkout or Path(setup.r0.path))
    return caught.value


def test_another_checkout_is_not_the_controller(setup: Setup) -> None:
    error = _refused(setup, Path(setup.rpack.path))
    assert error.code == "lookup_pilot_controller_invalid" and error.location == setup.r0.path


def test_a_registration_without_both_builds_or_the_protocol_is_refused(setup: Setup) -> None:
    registration = setup.verified.registration
    for changed in (
        msgspec.structs.replace(registration, builds={"r0": registration.builds["r0"]}),
        msgspec.structs.replace(registration, protocol="continuity-lookup-role-v0"),
    ):
        setup.verified = replace(setup.verified, registration=changed)
        assert _refused(setup).code == "lookup_pilot_controller_invalid"
        setup.verified = replace(setup.verified, registration=registration)


def test_a_dirty_or_moved_checkout_is_refused(setup: Setup) -> None:
    (Path(setup.rpack.path) / "untracked.txt").write_text("x")
    assert _refused(setup).code == "role_checkout_dirty"
    (Path(setup.rpack.path) / "untracked.txt").unlink()
    _git(Path(setup.r0.path), "commit", "-q", "--allow-empty", "-m", "moved on")
    assert _refused(setup).code == "role_revision_invalid"


def test_a_changed_build_is_refused(setup: Setup) -> None:
    (Path(setup.verified.registration.builds["rpack"].src) / "added.py").write_text("")
    assert _refused(setup).code == "role_build_changed"
