"""`doit compare_run` over real worktrees, real venvs and real role children (issue 15,
item 5): six roles with verified receipts, the refusals before anything runs, a changed
build, and a role child killed mid-run while the other roles complete."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from continuity.errors import RoleError
from continuity.roles.aggregate_render import compare_aggregate
from continuity.roles.receipt import read_role_receipt
from continuity.roles.register import Registered, register, workload
from continuity.roles.register_build import PTH_FILE
from continuity.roles.run import LAUNCHES_FILE, LAUNCHES_SCHEMA, Launches, compare_run
from continuity.roles.run_launch import verify_build
from continuity.roles.table import ROLES
from continuity.store import Store
from tests.conftest import REPO
from tests.roles.test_register import Pair, checkout_pair


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with checkout_pair(tmp_path_factory.mktemp("launch-checkouts")) as made:
        yield made


@pytest.fixture(scope="module")
def registered(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Registered:
    base = tmp_path_factory.mktemp("launch-registration")
    return register(
        Store(base / "store"),
        (pair.r0, pair.r0_sha),
        (pair.rpack, pair.rpack_sha),
        str(base / "registration"),
        workload(["original"], ["brightline-return"], 1),
    )


def _store(registered: Registered) -> Store:
    """The store `registered` was registered into (the fixture's)."""
    return Store(registered.path.parents[1] / "store")


def _command(registered: Registered, output: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "doit", "-f", str(REPO / "dodo.py"), "compare_run"),
        *("--registration", str(registered.path), "--store", str(_store(registered).root)),
        *("--sha256", registered.sha256, "--output", str(output)),
    ]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "CONTINUITY_STORE": str(tmp_path / "store"), "CI": "1"}


def _launches(output: Path) -> Launches:
    return msgspec.json.decode((output / LAUNCHES_FILE).read_bytes(), type=Launches)


_MARKER = "ROLEBUILD-WORK-TREE-IMPORTED"


def test_six_roles_run_with_verified_receipts(
    registered: Registered, pair: Pair, tmp_path: Path
) -> None:
    output = tmp_path / "run"
    # After registration, both checkouts' work trees change under assume-unchanged (git
    # status stays clean): a child importing the work tree, not the verified export,
    # would print the marker into its child.log.
    inits = [root / "continuity" / "__init__.py" for root in (pair.r0, pair.rpack)]
    originals = [path.read_bytes() for path in inits]
    try:
        for path, data in zip(inits, originals, strict=True):
            path.write_bytes(data + f"\nprint({_MARKER!r})\n".encode())
            subprocess.run(
                ["git", "-C", str(path.parents[1]), "update-index", "--assume-unchanged",
                 "continuity/__init__.py"],
                check=True,
            )  # fmt: skip
        result = subprocess.run(
            _command(registered, output),
            cwd=REPO,
            env=_env(tmp_path),  # CI set: an offline role run must not refuse
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    finally:
        for path, data in zip(inits, originals, strict=True):
            subprocess.run(
                ["git", "-C", str(path.parents[1]), "update-index", "--no-assume-unchanged",
                 "continuity/__init__.py"],
                check=True,
            )  # fmt: skip
            path.write_bytes(data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == f"launches in {output / LAUNCHES_FILE}"
    launches = _launches(output)
    assert launches.schema == LAUNCHES_SCHEMA
    assert (launches.registration_digest, launches.registration_sha256) == (
        registered.registration_digest,
        registered.sha256,
    )
    assert [(entry.role, entry.code, entry.suite) for entry in launches.launches] == [
        (role.name, role.code.lower(), "original") for role in ROLES
    ]
    for entry, role in zip(launches.launches, ROLES, strict=True):
        assert (entry.exit_code, entry.reason) == (0, None)
        assert entry.build_verified_before and entry.build_verified_after
        assert entry.receipt == f"roles/{role.name}/original/out/runs/{role.name}/role-receipt.json"
        path = output / entry.receipt
        assert entry.receipt_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        receipt = read_role_receipt(path)
        assert (receipt.role, receipt.arm, receipt.soul) == (role.name, role.arm, role.soul)
        assert receipt.registration_digest == registered.registration_digest
        checkout = (
            registered.registration.r0 if role.code == "R0" else registered.registration.rpack
        )
        assert receipt.revision == checkout.revision and receipt.witness == (role.code == "Rpack")
        assert receipt.outcome == "complete" and len(receipt.units) == 1
        store = output / "roles" / role.name / "original" / "store"
        log = output / "roles" / role.name / "original" / "child.log"
        assert store.is_dir() and log.is_file()
        assert _MARKER not in log.read_text(encoding="utf-8", errors="replace")
    assert _MARKER not in result.stdout + result.stderr


def test_a_raw_sha256_mismatch_is_refused_before_anything_runs(
    registered: Registered, tmp_path: Path
) -> None:
    with pytest.raises(RoleError) as caught:
        compare_run(registered.path, "0" * 64, str(tmp_path / "run"))
    assert (caught.value.code, caught.value.location) == (
        "role_registration_sha256_mismatch",
        "--sha256",
    )
    assert not (tmp_path / "run").exists()
    result = subprocess.run(
        [*_command(registered, tmp_path / "run")[:-4], "--sha256", "ab" * 32,
         "--output", str(tmp_path / "run")],
        cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "role_registration_sha256_mismatch" in result.stdout + result.stderr
    assert not (tmp_path / "run").exists()


def test_a_file_that_is_no_registration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "registration.json"
    path.write_bytes(b'{"schema": "something else"}')
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(RoleError) as caught:
        compare_run(path, digest, str(tmp_path / "run"))
    assert (caught.value.code, caught.value.location) == ("role_registration_invalid", str(path))
    with pytest.raises(RoleError) as caught:
        compare_run(tmp_path / "absent.json", digest, str(tmp_path / "run"))
    assert caught.value.code == "role_registration_invalid"
    assert not (tmp_path / "run").exists()


def test_a_registration_edited_after_registering_is_refused_whatever_its_sha256(
    registered: Registered, tmp_path: Path
) -> None:
    """compare_run and compare_aggregate check the file against the copy compare_register
    stored, not only against the operator's --sha256 (issue 36, item 7)."""
    work = msgspec.structs.replace(registered.registration.workload, probe_limit=2)
    path = tmp_path / "registration.json"
    path.write_bytes(
        msgspec.json.encode(
            msgspec.structs.replace(registered.registration, workload=work), order="sorted"
        )
    )
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()  # the edited file's own sha256
    output = tmp_path / "run"
    with pytest.raises(RoleError) as caught:
        compare_run(path, sha256, str(output), _store(registered))
    assert (caught.value.code, caught.value.location) == ("role_registration_changed", str(path))
    assert not output.exists()  # refused before the output directory: no role ran
    result = subprocess.run(
        [*_command(registered, output)[:-8], "--registration", str(path),
         "--store", str(_store(registered).root), "--sha256", sha256, "--output", str(output)],
        cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stdout + result.stderr
    assert "role_registration_changed: " in result.stdout + result.stderr
    assert not output.exists()
    with pytest.raises(RoleError) as caught:
        compare_aggregate(path, sha256, tmp_path, _store(registered))
    assert caught.value.code == "role_registration_changed"
    assert not (tmp_path / "compare.json").exists()
    # The registered bytes pass wherever they lie (the store is content-addressed), and
    # register pinned them with a ref, so gc keeps them.
    copy = tmp_path / "copy.json"
    copy.write_bytes(registered.path.read_bytes())
    with pytest.raises(RoleError) as caught:
        compare_run(copy, registered.sha256, "relative/run", _store(registered))
    assert caught.value.code == "role_output_not_absolute"  # past the stored copy's check
    assert _store(registered).get_ref(f"registrations/{registered.sha256}") is not None


def test_the_output_directory_must_be_new_absolute_and_outside(
    registered: Registered, pair: Pair, tmp_path: Path
) -> None:
    existing = tmp_path / "exists"
    existing.mkdir()
    for output, code in (
        (str(existing), "role_output_exists"),
        ("relative/run", "role_output_not_absolute"),
        (str(pair.r0 / "run"), "role_output_inside_checkout"),
    ):
        with pytest.raises(RoleError) as caught:
            compare_run(registered.path, registered.sha256, output, _store(registered))
        assert caught.value.code == code
    assert list(existing.iterdir()) == [] and not (pair.r0 / "run").exists()


def test_a_changed_build_stops_the_run_once_recorded(
    registered: Registered, tmp_path: Path
) -> None:
    build = registered.registration.builds["r0"]
    tampered = msgspec.structs.replace(build, files={**build.files, "continuity/extra.py": "0"})
    with pytest.raises(RoleError) as caught:
        verify_build("r0", tampered)
    assert (caught.value.code, caught.value.location) == ("role_build_changed", build.venv)
    verify_build("r0", build)  # the registered build itself still verifies
    # What the child imports is hashed: a changed exported file or .pth is refused.
    for changed_file in (
        Path(build.src) / "continuity" / "__init__.py",
        Path(build.src) / "dodo.py",
        Path(build.site_packages) / PTH_FILE,
    ):
        data = changed_file.read_bytes()
        changed_file.write_bytes(data + b"\n")
        try:
            with pytest.raises(RoleError) as caught:
                verify_build("r0", build)
            assert caught.value.code == "role_build_changed"
        finally:
            changed_file.write_bytes(data)
    verify_build("r0", build)
    # Rpack's build changed: the first role (native, on R0) is stopped too, since both
    # builds are re-verified around every role.
    rpack = registered.registration.builds["rpack"]
    changed = msgspec.structs.replace(
        registered.registration,
        builds={
            **registered.registration.builds,
            "rpack": msgspec.structs.replace(rpack, files={**rpack.files, "continuity/x.py": "0"}),
        },
    )
    path = tmp_path / "registration.json"
    path.write_bytes(msgspec.json.encode(changed, order="sorted"))
    store = Store(tmp_path / "store")
    store.put_blob(path.read_bytes())  # as registered: only the build changed since
    with pytest.raises(RoleError) as caught:
        compare_run(
            path, hashlib.sha256(path.read_bytes()).hexdigest(), str(tmp_path / "run"), store
        )
    assert caught.value.code == "role_build_changed"
    (entry,) = _launches(tmp_path / "run").launches  # native (R0) was never launched
    assert (entry.role, entry.exit_code, entry.build_verified_before) == ("native", None, False)
    assert entry.reason is not None and entry.reason.startswith("role_build_changed")
    assert rpack.venv in entry.reason
    assert not (tmp_path / "run" / "roles").exists()


def _child_pid(marker: bytes, parent: subprocess.Popen[bytes]) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == parent.pid:
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker in command and b" units " in command:
            return int(entry.name)
    return None


def test_a_killed_role_is_recorded_while_the_others_complete(
    registered: Registered, tmp_path: Path
) -> None:
    output = tmp_path / "run"
    marker = (
        b"--lookup-role pack-only --registration-digest " + registered.registration_digest.encode()
    )
    proc = subprocess.Popen(
        _command(registered, output),
        cwd=REPO,
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        pid = None
        while pid is None and time.monotonic() < deadline and proc.poll() is None:
            pid = _child_pid(marker, proc)
            time.sleep(0.02)
        assert pid is not None, "the pack-only child was never seen"
        os.kill(pid, signal.SIGKILL)
        assert proc.wait(timeout=240) != 0  # role_launch_failed, after every role ran
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    launches = _launches(output)
    assert [entry.role for entry in launches.launches] == [role.name for role in ROLES]
    for entry in launches.launches:
        if entry.role == "pack-only":
            assert entry.exit_code == -signal.SIGKILL and entry.receipt is None
            assert entry.reason is not None and entry.reason.startswith("role_receipt_missing")
        else:
            assert (entry.exit_code, entry.reason) == (0, None) and entry.receipt is not None
        assert entry.build_verified_before and entry.build_verified_after
