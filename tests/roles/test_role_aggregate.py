"""`doit compare_aggregate` (issue 15 items 6 and 7) over a real role layout.

The six roles run for real (`doit units --lookup-role ROLE --registration-digest D`, the
restricted smoke workload) into ``roles/<role>/original/{out,store}`` exactly as
`doit compare_run` lays them out; the registration is a real `Registration` whose
checkouts are this one at its commit, and ``launches.json`` is written as compare_run
writes it. Each test copies that layout and breaks it one way.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import msgspec
import pytest

from continuity.digest import value_digest
from continuity.errors import InputError, RoleError
from continuity.roles.aggregate import COMPARE_SCHEMA, CONTRASTS, CompareReport
from continuity.roles.aggregate_read import expected_plan_digest, receipt_path
from continuity.roles.aggregate_render import compare_aggregate
from continuity.roles.guidance import RENDERER_PATH, ROLE_PROTOCOL
from continuity.roles.receipt import RoleReceipt, RoleUnit
from continuity.roles.register import (
    REGISTRATION_SCHEMA,
    BoundDigests,
    Checkout,
    Registration,
    workload,
)
from continuity.roles.run import LAUNCHES_SCHEMA
from continuity.roles.table import ROLES
from continuity.runner.manifest import code_revision
from continuity.store import Store
from tests.conftest import REPO
from tests.graph.test_dodo import doit_command, doit_env

# One worker runs this module: its module fixture is built once, not once per worker.
pytestmark = pytest.mark.xdist_group("role-aggregate")

SMOKE = ("--suite", "original", "--trace", "brightline-return", "--probe-limit", "1")


def _registration() -> Registration:
    revision = code_revision()[0]
    checkout = Checkout(path="/nonexistent/checkout", revision=revision, tree="0" * 40)
    return Registration(
        schema=REGISTRATION_SCHEMA,
        protocol=ROLE_PROTOCOL,
        r0=checkout,
        rpack=checkout,
        differing=[RENDERER_PATH],
        digests=BoundDigests(entrypoint={}, reader={}, scorer={}, lock={}, budget={}),
        workload=workload(["original"], ["brightline-return"], 1),
        roles=list(ROLES),
        builds={},
    )


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _store(reg_file: Path) -> Store:
    """The store a registration file beside it was registered into (``store/``)."""
    return Store(reg_file.parent / "store")


def _register(reg_file: Path) -> None:
    """Store the file's bytes as `doit compare_register` does: compare_aggregate reads
    only a registration that is its stored copy."""
    _store(reg_file).put_blob(reg_file.read_bytes())


def aggregate(reg_file: Path, sha256: str, out: Path) -> tuple[CompareReport, Path]:
    return compare_aggregate(reg_file, sha256, out, _store(reg_file))


def _write_launches(out: Path, raw: str, digest: str, missing: dict[str, str]) -> None:
    launches = []
    for role in ROLES:
        path = out / receipt_path(role.name, "original")
        gone = role.name in missing
        launches.append(
            {
                "role": role.name,
                "code": role.code.lower(),
                "suite": "original",
                "exit_code": -9 if gone else 0,
                "receipt": None if gone else receipt_path(role.name, "original"),
                "receipt_sha256": None if gone else _sha(path),
                "reason": missing.get(role.name),
                "started": "2026-01-01T00:00:00Z",
                "finished": "2026-01-01T00:00:01Z",
                "build_verified_before": True,
                "build_verified_after": not gone,
            }
        )
    document = {
        "schema": LAUNCHES_SCHEMA,
        "registration_digest": digest,
        "registration_sha256": raw,
        "launches": launches,
    }
    (out / "launches.json").write_text(json.dumps(document, indent=2))


class Layout(msgspec.Struct, frozen=True):
    registration: Path
    raw: str
    digest: str
    out: Path


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("roles")
    registration = _registration()
    reg_file = root / "registration.json"
    reg_file.write_bytes(msgspec.json.encode(registration, order="sorted"))
    _register(reg_file)
    raw, digest = _sha(reg_file), value_digest(registration)
    out = root / "run"
    for role in ROLES:
        where = out / "roles" / role.name / "original"
        command = doit_command(
            "units", "--probe-mode", "lookup-allowed-v1", "--lookup-role", role.name,
            "--registration-digest", digest, *SMOKE, "--run", role.name,
            "--out", str(where / "out"), "--store", str(where / "store"),
        )  # fmt: skip
        done = subprocess.run(
            command, cwd=REPO, env=doit_env(root), capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr
    _write_launches(out, raw, digest, {})
    return Layout(reg_file, raw, digest, out)


def _copy(base: Layout, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(base.out, out, ignore=shutil.ignore_patterns("store"))
    return out


def _run_dir(out: Path, role: str) -> Path:
    return out / "roles" / role / "original" / "out" / "runs" / role


def _relist(out: Path, role: str) -> None:
    """Rewrite a role's receipt to list its unit files as they now are (a legitimate
    receipt of that content), and record its new sha256 in launches.json."""
    run = _run_dir(out, role)
    path = run / "role-receipt.json"
    receipt = msgspec.json.decode(path.read_bytes(), type=RoleReceipt)
    units = sorted((run / "units").rglob("*.json"))
    listed = [
        RoleUnit(p.relative_to(run / "units").as_posix(), _sha(p)) for p in units if p.is_file()
    ]
    path.write_bytes(msgspec.json.encode(msgspec.structs.replace(receipt, units=listed)))
    _rehash(out, role)


def _rehash(out: Path, role: str) -> None:
    document = json.loads((out / "launches.json").read_text())
    for launch in document["launches"]:
        if launch["role"] == role:
            launch["receipt_sha256"] = _sha(out / launch["receipt"])
    (out / "launches.json").write_text(json.dumps(document))


def _refused(base: Layout, out: Path) -> str:
    with pytest.raises(RoleError) as caught:
        aggregate(base.registration, base.raw, out)
    return caught.value.code


def test_every_role_and_contrast_row_is_reported(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    report, path = aggregate(base.registration, base.raw, out)
    stored = msgspec.json.decode(path.read_bytes(), type=CompareReport)
    assert stored == report and stored.schema == COMPARE_SCHEMA
    assert [(c.a, c.b) for c in report.contrasts] == [(a, b) for a, b, _ in CONTRASTS]
    assert report.slots_planned == 1 and report.workload.restricted
    for role in report.roles:
        assert role.status == "present" and role.lookup is not None, role.role
        assert (role.lookup.slots_planned, role.lookup.missing, role.lookup.duplicate) == (1, 0, 0)
        assert role.lookup.exact.n + role.lookup.inventory_infeasible == 1
    for row in report.contrasts:
        assert row.planned == 1 and row.paired_completed == row.failure_inclusive == 1
        assert row.delta_pp == 100 * (row.a_only - row.b_only)
    markdown = (out / "compare.md").read_text()
    assert "not significance" in markdown and "pack-only - pack" in markdown
    assert "S1's feasibility is not re-measured" in markdown
    html = (out / "compare.html").read_text()
    assert "<script" not in html and "shipping - pack" in html


def test_a_missing_role_stays_missing_with_its_reason(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    shutil.rmtree(out / "roles" / "native-soul")
    _write_launches(out, base.raw, base.digest, {"native-soul": "role_launch_failed: killed"})
    report, _ = aggregate(base.registration, base.raw, out)
    by_role = {r.role: r for r in report.roles}
    missing = by_role["native-soul"]
    assert missing.status == "missing"
    assert missing.launches[0].missing_reason == "role_launch_failed: killed"
    assert missing.lookup is not None and missing.lookup.missing == 1
    assert all(r.status == "present" for name, r in by_role.items() if name != "native-soul")
    soul = next(c for c in report.contrasts if c.a == "native-soul")
    assert (soul.planned, soul.paired_completed, soul.delta_pp) == (1, 0, None)
    assert "role_launch_failed: killed" in (out / "compare.md").read_text()


def test_a_duplicate_slot_is_counted_not_scored(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    units = _run_dir(out, "pack") / "units"
    (first,) = list(units.glob("*.json"))
    (units / "chunk-2").mkdir()
    shutil.copy(first, units / "chunk-2" / first.name)
    _relist(out, "pack")
    report, _ = aggregate(base.registration, base.raw, out)
    pack = next(r for r in report.roles if r.role == "pack")
    assert pack.lookup is not None
    assert (pack.lookup.duplicate, pack.lookup.exact.n, pack.lookup.calls) == (1, 0, 0)
    assert pack.lookup.duplicate_occurrences[0].occurrences == 2
    for row in report.contrasts:
        assert row.paired_completed == (0 if "pack" in (row.a, row.b) else 1), row


def test_a_special_file_in_the_run_is_refused_without_blocking(
    base: Layout, tmp_path: Path
) -> None:
    out = _copy(base, tmp_path)
    (unit,) = list((_run_dir(out, "pack") / "units").glob("*.json"))
    unit.unlink()
    os.mkfifo(unit)  # no writer: a blocking open would hang
    with pytest.raises(InputError) as caught:
        aggregate(base.registration, base.raw, out)
    assert (caught.value.code, caught.value.location) == ("input_not_a_file", str(unit))
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(InputError) as caught:
        aggregate(base.registration, base.raw, afile)
    assert (caught.value.code, caught.value.location) == ("input_not_a_directory", str(afile))
    assert not (out / "compare.json").exists()


def test_a_registration_sha256_mismatch_is_refused(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    with pytest.raises(RoleError) as caught:
        aggregate(base.registration, "0" * 64, out)
    assert caught.value.code == "role_registration_sha256_mismatch"
    assert not (out / "compare.json").exists()


def test_launches_of_another_registration_are_refused(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    _write_launches(out, base.raw, "f" * 64, {})
    assert _refused(base, out) == "role_launches_invalid"


def test_an_edited_receipt_is_tampered(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    path = _run_dir(out, "shipping") / "role-receipt.json"
    path.write_bytes(path.read_bytes().replace(b'"outcome"', b' "outcome"'))
    assert _refused(base, out) == "role_receipt_tampered"


def test_an_edited_unit_is_tampered(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    (unit,) = list((_run_dir(out, "soul-only") / "units").glob("*.json"))
    unit.write_bytes(unit.read_bytes() + b" ")
    assert _refused(base, out) == "role_receipt_tampered"


def test_an_unlisted_unit_is_tampered(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    units = _run_dir(out, "native") / "units"
    (unit,) = list(units.glob("*.json"))
    shutil.copy(unit, units / "extra.json")
    assert _refused(base, out) == "role_receipt_tampered"


def test_a_receipt_of_another_registration_is_tampered(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    path = _run_dir(out, "pack") / "role-receipt.json"
    receipt = msgspec.json.decode(path.read_bytes(), type=RoleReceipt)
    path.write_bytes(
        msgspec.json.encode(msgspec.structs.replace(receipt, registration_digest="e" * 64))
    )
    _rehash(out, "pack")
    assert _refused(base, out) == "role_receipt_tampered"


def test_another_roles_receipt_is_cross_role_replay(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    shutil.copy(
        _run_dir(out, "pack") / "role-receipt.json",
        _run_dir(out, "pack-only") / "role-receipt.json",
    )
    _rehash(out, "pack-only")
    assert _refused(base, out) == "role_cross_replay"


def test_a_launch_pointing_at_another_roles_receipt_is_replay(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    document = json.loads((out / "launches.json").read_text())
    replayed = next(launch for launch in document["launches"] if launch["role"] == "pack")
    for launch in document["launches"]:
        if launch["role"] == "shipping":
            launch["receipt"], launch["receipt_sha256"] = (
                replayed["receipt"],
                replayed["receipt_sha256"],
            )
    (out / "launches.json").write_text(json.dumps(document))
    assert _refused(base, out) == "role_cross_replay"


@pytest.mark.parametrize(("source", "target"), [("native", "pack"), ("soul-only", "pack")])
def test_another_roles_unit_is_cross_role_replay(
    base: Layout, tmp_path: Path, source: str, target: str
) -> None:
    # native-lookup's unit is another arm; soul-only's is the same arm with soul S1.
    out = _copy(base, tmp_path)
    (unit,) = list((_run_dir(out, source) / "units").glob("*.json"))
    shutil.copy(unit, _run_dir(out, target) / "units" / f"from-{source}.json")
    _relist(out, target)
    assert _refused(base, out) == "role_cross_replay"


# Item 7: the registration never enters other gates.
# Besides the roles (their commands, `continuity.commands.role_runs`): the two commands
# seed 000 gives a registration to read, neither a gate (`doit estimate --registration`
# prices it, `continuity.commands.estimation`; `doit compare_preflight --registration`
# prepares its slots and authorizes nothing, `continuity.commands.preflight_runs`).
_ALLOWED = (
    "continuity/roles/",
    "continuity/commands/role_runs.py",
    "continuity/commands/estimation.py",
    "continuity/commands/preflight_runs.py",
    "rules/roles.py",
    "rules/estimate.py",
    "rules/preflight.py",
)
_ROLE_MODULES = ("register", "aggregate", "run")


def _imports(path: Path, package: str | None = None) -> set[str]:
    """Every module an import in `path` names (relative ones resolved in its package)."""
    if package is None:
        package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}".strip(".")
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return found


def _sources() -> list[Path]:
    return [*sorted((REPO / "continuity").rglob("*.py")), *sorted((REPO / "rules").glob("*.py")),
            REPO / "dodo.py"]  # fmt: skip


def test_no_module_outside_the_roles_imports_the_registration() -> None:
    offenders = []
    for path in _sources():
        relative = path.relative_to(REPO).as_posix()
        if relative.startswith(_ALLOWED):
            continue
        for name in _imports(path):
            parts = name.split(".")
            if parts[:2] == ["continuity", "roles"] and "".join(parts[2:3]).startswith(
                _ROLE_MODULES
            ):
                offenders.append(f"{relative}: {name}")
    assert offenders == []


def test_no_other_code_path_reads_the_registration_schema() -> None:
    # The ledger and qualification code (none of it exists yet) and every other gate:
    # no module outside the roles names the registration's schema or file.
    readers = [
        path.relative_to(REPO).as_posix()
        for path in _sources()
        if not path.relative_to(REPO).as_posix().startswith(_ALLOWED)
        and (
            REGISTRATION_SCHEMA in path.read_text(encoding="utf-8")
            or "registration.json" in path.read_text(encoding="utf-8")
        )
    ]
    assert readers == []


def test_the_import_walk_resolves_relative_imports(tmp_path: Path) -> None:
    # Without this, the two tests above could pass by missing `from .register import x`.
    probe = tmp_path / "probe.py"
    probe.write_text("from .register import x\nfrom ..roles import aggregate\n")
    found = _imports(probe, "continuity.roles")
    assert {"continuity.roles.register", "continuity.roles.aggregate"} <= found


def test_the_doit_command_ends_with_where_the_comparison_is(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    args = (
        "compare_aggregate", "--registration", str(base.registration), "--output", str(out),
        "--store", str(_store(base.registration).root),
    )  # fmt: skip
    done = subprocess.run(
        doit_command(*args, "--sha256", base.raw), cwd=REPO, env=doit_env(tmp_path),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "native-soul - native: 1 paired of 1 planned" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith(f"comparison in {out / 'compare.json'}")
    refused = subprocess.run(
        doit_command(*args, "--sha256", "1" * 64), cwd=REPO, env=doit_env(tmp_path),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "role_registration_sha256_mismatch" in refused.stdout + refused.stderr


def _rewrite_receipt(out: Path, role: str, **changes: object) -> None:
    path = _run_dir(out, role) / "role-receipt.json"
    receipt = msgspec.json.decode(path.read_bytes(), type=RoleReceipt)
    path.write_bytes(msgspec.json.encode(msgspec.structs.replace(receipt, **changes)))
    _rehash(out, role)


def test_every_receipt_binds_the_plan_its_workload_and_role_imply(base: Layout) -> None:
    registration = msgspec.json.decode(base.registration.read_bytes(), type=Registration)
    digests = set()
    for role in ROLES:
        path = _run_dir(base.out, role.name) / "role-receipt.json"
        receipt = msgspec.json.decode(path.read_bytes(), type=RoleReceipt)
        assert receipt.plan_digest == expected_plan_digest(registration, role, "original")
        digests.add(receipt.plan_digest)
    assert len(digests) == 4  # two arms x two souls: the plan tells the roles apart


def test_a_receipt_of_another_plan_is_tampered(base: Layout, tmp_path: Path) -> None:
    out = _copy(base, tmp_path)
    other = _run_dir(out, "native") / "role-receipt.json"
    native_plan = msgspec.json.decode(other.read_bytes(), type=RoleReceipt).plan_digest
    _rewrite_receipt(out, "pack", plan_digest=native_plan)  # a real plan, not pack's
    assert _refused(base, out) == "role_receipt_tampered"


@pytest.mark.parametrize("flag", ["build_verified_before", "build_verified_after"])
def test_a_receipt_without_verified_builds_is_tampered(
    base: Layout, tmp_path: Path, flag: str
) -> None:
    out = _copy(base, tmp_path)
    document = json.loads((out / "launches.json").read_text())
    document["launches"][2][flag] = False  # pack-only, which kept its receipt
    (out / "launches.json").write_text(json.dumps(document))
    with pytest.raises(RoleError) as caught:
        aggregate(base.registration, base.raw, out)
    assert caught.value.code == "role_receipt_tampered"
    assert caught.value.location == str(out / "launches.json")


def test_a_receipt_whose_witness_is_not_its_codes_is_tampered(base: Layout, tmp_path: Path) -> None:
    # A registration whose checkouts differ (as every real one does): R0 is this commit,
    # Rpack another. This checkout carries the witness, so its R0-coded receipts claim
    # it, which R0 must not; Rpack's roles have no receipt here (they stay missing).
    registration = msgspec.json.decode(base.registration.read_bytes(), type=Registration)
    other = msgspec.structs.replace(registration.rpack, revision="f" * 40)
    changed = msgspec.structs.replace(registration, rpack=other)
    reg_file = tmp_path / "registration.json"
    reg_file.write_bytes(msgspec.json.encode(changed, order="sorted"))
    _register(reg_file)
    raw, digest = _sha(reg_file), value_digest(changed)
    out = _copy(base, tmp_path)
    rpack_roles = {
        role.name: "role_receipt_missing: elsewhere" for role in ROLES if role.code == "Rpack"
    }
    for role in ROLES:
        if role.code == "R0":
            _rewrite_receipt(out, role.name, registration_digest=digest)
    _write_launches(out, raw, digest, rpack_roles)
    with pytest.raises(RoleError) as caught:
        aggregate(reg_file, raw, out)
    assert caught.value.code == "role_receipt_tampered"
    assert "witness" in caught.value.message
    # The same receipts without the witness claim are R0's: the check is what refused.
    for role in ROLES:
        if role.code == "R0":
            _rewrite_receipt(out, role.name, witness=False)
    _write_launches(out, raw, digest, rpack_roles)
    report, _ = aggregate(reg_file, raw, out)
    status = {r.role: r.status for r in report.roles}
    assert status == {role.name: "missing" if role.code == "Rpack" else "present" for role in ROLES}
