"""External registrations (v2): the six roles on a frozen holdout source.

A toy holdout is frozen for real and sized by hand (`tests.plan.test_holdout_estimate`:
the pricing reads recorded metrics only, against a one-model test catalog). Registration
binds the source, the selection, the sizing, the output limit and the estimate's cap C
(to the cent), refused with a code on any mismatch; the v1 shape is unchanged; a role's
child options name the source and the sizing, and the plan they give binds both; the
frozen source is copied into a role's own store, where the child's code loads it."""

from __future__ import annotations

import subprocess
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from continuity.errors import ContinuityError, HoldoutError, RoleError
from continuity.holdout import load_frozen
from continuity.holdout.export import export_frozen
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import LookupPlan
from continuity.plan.request import HoldoutRequest
from continuity.roles.register import Workload, workload
from continuity.roles.register_holdout import HoldoutWorkload, holdout_workload, parse_cap
from continuity.roles.run_launch import role_flags, role_plan_request
from continuity.roles.table import role_named
from continuity.store import Store
from tests.conftest import REPO, store_files
from tests.graph.test_dodo import doit_command, doit_env
from tests.plan.test_holdout_estimate import SEED, Fixture, estimated, toy  # noqa: F401


def _workload(toy: Fixture, cap: str | None, **more: object) -> HoldoutWorkload:  # noqa: F811
    return holdout_workload(
        toy.store,
        HoldoutRequest(
            manifest=str(toy.source.manifest),
            manifest_sha256=toy.source.manifest_sha256,
            statistical_spec=str(toy.source.spec),
            selection_seed=more.pop("seed", SEED),  # type: ignore[arg-type]
            per_group=more.pop("per_group", 0),  # type: ignore[arg-type]
        ),
        (toy.budget, str(more.pop("sha", toy.sha256))),
        (more.pop("limit", 1_000), more.pop("limit_source", "catalog_max")),  # type: ignore[arg-type]
        cap,
        pricing=toy.catalog,
    )


def _cap(toy: Fixture) -> str:  # noqa: F811
    result, _ = estimated(toy)
    assert result.holdout is not None and result.holdout.pricing.cap_usd is not None
    return str(result.holdout.pricing.cap_usd)


def test_registration_binds_the_estimates_cap_to_the_cent(toy: Fixture) -> None:  # noqa: F811
    cap = _cap(toy)
    held = _workload(toy, cap)
    assert held.catalog_cap_usd == cap and held.sizing_sha256 == toy.sha256
    assert held.selection.seed == SEED and len(held.selection.selected) == 4
    assert Path(held.manifest).is_absolute() and Path(held.sizing).is_absolute()
    work = workload([], [], None, held)
    assert work.suites == ["holdout"] and work.traces == [] and work.holdout == held
    # a v1 workload keeps its bytes: the holdout field is left out
    plain = workload(["original"], [], None)
    assert b"holdout" not in msgspec.json.encode(plain)
    assert msgspec.json.decode(msgspec.json.encode(work), type=Workload) == work


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"cap": None}, "role_catalog_cap_required"),
        ({"cap": "1.234"}, "role_catalog_cap_invalid"),
        ({"cap": "-3"}, "role_catalog_cap_invalid"),
        ({"cap": "abc"}, "role_catalog_cap_invalid"),
        ({"delta": Decimal("0.01")}, "role_catalog_cap_mismatch"),
        ({"limit": None, "limit_source": None}, "role_catalog_cap_mismatch"),
        ({"seed": SEED + 1}, "lookup_policy_holdout_mismatch"),
        ({"sha": "0" * 64}, "lookup_policy_sha256_mismatch"),
    ],
)
def test_registration_refuses_with_codes(
    toy: Fixture,  # noqa: F811
    change: dict[str, object],
    code: str,
) -> None:
    cap = _cap(toy)
    given: str | None = cap
    if "cap" in change:
        given = change.pop("cap")  # type: ignore[assignment]
    if "delta" in change:
        given = str(Decimal(cap) + change.pop("delta"))  # type: ignore[operator]
    with pytest.raises(ContinuityError) as caught:
        _workload(toy, given, **change)
    assert caught.value.code == code


def test_suites_or_traces_beside_a_holdout_are_refused(toy: Fixture) -> None:  # noqa: F811
    held = _workload(toy, _cap(toy))
    for suites, traces in ((["original"], []), ([], ["toy-north-1"])):
        with pytest.raises(HoldoutError) as caught:
            workload(suites, traces, None, held)
        assert caught.value.code == "holdout_trace_selection_refused"
    assert parse_cap("12.30") == Decimal("12.30")


def test_a_roles_child_options_name_the_source_and_the_sizing(toy: Fixture) -> None:  # noqa: F811
    held = _workload(toy, _cap(toy))
    work = workload([], [], 1, held)
    request = role_plan_request(work, role_named("pack"), "holdout")
    flags = role_flags(work, role_named("pack"), "holdout")
    assert request.suite == "holdout" and "--trace" not in flags
    assert request.policy == held.sizing and request.policy_sha256 == toy.sha256
    assert request.selection_seed == SEED
    pairs = dict(zip(flags[::2], flags[1::2], strict=True))
    assert pairs["--suite"] == "holdout" and pairs["--selection-seed"] == str(SEED)
    assert (pairs["--policy"], pairs["--policy-sha256"]) == (held.sizing, toy.sha256)
    plan = plan_from_request(msgspec.structs.replace(request, store=str(toy.store.root)))
    assert isinstance(plan, LookupPlan) and plan.holdout == held.selection
    assert plan.policy_sha256 == toy.sha256


def test_the_frozen_source_is_copied_into_a_roles_store(toy: Fixture, tmp_path: Path) -> None:  # noqa: F811
    role_store = Store(tmp_path / "role-store")
    frozen = export_frozen(toy.store, role_store, toy.source)
    assert load_frozen(role_store, toy.source).freeze_digest == frozen.freeze_digest
    first = store_files(role_store)
    export_frozen(toy.store, role_store, toy.source)  # idempotent
    assert store_files(role_store) == first
    # a store without the freeze copies nothing
    empty = Store(tmp_path / "empty")
    with pytest.raises(HoldoutError) as caught:
        export_frozen(empty, Store(tmp_path / "other"), toy.source)
    assert caught.value.code == "holdout_not_frozen"
    assert store_files(Store(tmp_path / "other")) == {}


def test_a_role_child_runs_the_holdout_from_its_own_store(
    toy: Fixture,  # noqa: F811
    tmp_path: Path,
) -> None:
    held = _workload(toy, _cap(toy))
    work = workload([], [], 1, held)
    role = role_named("pack")
    role_dir = tmp_path / "roles" / "pack" / "holdout"
    export_frozen(toy.store, Store(role_dir / "store"), toy.source)
    flags = role_flags(work, role, "holdout")
    command = doit_command(
        "units", "--lookup-role", "pack", *flags, "--run", "pack",
        "--out", str(role_dir / "out"), "--store", str(role_dir / "store"),
    )  # fmt: skip
    done = subprocess.run(
        command, cwd=REPO, env=doit_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    run = role_dir / "out" / "runs" / "pack"
    assert (run / "role-receipt.json").is_file(), done.stdout + done.stderr
    # every planned slot took the pack role's class from the sizing; the hand-made
    # sizing lists two of the four selected traces, so the others are unknown and block
    budget = msgspec.json.decode(toy.budget.read_bytes())
    classes = {(s["trace_id"], s["probe_id"]): s["classification"] for s in budget["slots"]}
    slots = msgspec.json.decode((run / "lookup-slots.json").read_bytes())["slots"]
    assert {s["trace_id"] for s in slots} == set(held.selection.selected)
    for slot in slots:
        assert slot["disposition"] == classes.get((slot["trace_id"], slot["probe_id"]), "unknown")
    assert done.returncode != 0 and "lookup_unknown_feasibility" in done.stdout


def test_a_registration_is_refused_when_the_cap_is_not_reproduced(toy: Fixture) -> None:  # noqa: F811
    with pytest.raises(RoleError) as caught:
        _workload(toy, "0.01")
    assert caught.value.code == "role_catalog_cap_mismatch"
    assert "doit estimate" in str(caught.value)


def test_the_estimate_prices_an_external_registration(toy: Fixture, tmp_path: Path) -> None:  # noqa: F811
    import hashlib

    from continuity.roles.guidance import RENDERER_PATH, ROLE_PROTOCOL
    from continuity.roles.register import (
        REGISTRATION_SCHEMA_V2,
        BoundDigests,
        Checkout,
        Registration,
    )
    from continuity.roles.table import ROLES
    from rules.estimate import _estimate

    cap = _cap(toy)
    checkout = Checkout(path="/nonexistent/checkout", revision="0" * 40, tree="0" * 40)
    registration = Registration(
        schema=REGISTRATION_SCHEMA_V2,
        protocol=ROLE_PROTOCOL,
        r0=checkout,
        rpack=checkout,
        differing=[RENDERER_PATH],
        digests=BoundDigests(entrypoint={}, reader={}, scorer={}, lock={}, budget={}),
        workload=workload([], [], None, _workload(toy, cap)),
        roles=list(ROLES),
        builds={},
    )
    path = tmp_path / "registration.json"
    path.write_bytes(msgspec.json.encode(registration, order="sorted"))
    where = _estimate(
        probe_mode="lookup-allowed-v1",
        registration=str(path),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        pricing=str(toy.catalog),
        store=str(toy.store.root),
        out=str(tmp_path / "out"),
    )
    assert where is not None
    from continuity.plan.lookup_estimate import LookupEstimate

    result = msgspec.json.decode(Path(where.split(" in ", 1)[1]).read_bytes(), type=LookupEstimate)
    assert result.holdout is not None and str(result.holdout.pricing.cap_usd) == cap
    with pytest.raises(ContinuityError) as caught:
        _estimate(
            probe_mode="lookup-allowed-v1",
            registration=str(path),
            sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
            suites="original",
        )
    assert caught.value.code == "plan_invalid"


def test_preflight_schedules_an_external_registrations_selected_traces(toy: Fixture) -> None:  # noqa: F811
    import sys

    from continuity.commands.preflight_runs import ComparePreflightRequest, registration_slots
    from continuity.roles.guidance import RENDERER_PATH, ROLE_PROTOCOL
    from continuity.roles.register import (
        REGISTRATION_SCHEMA_V2,
        BoundDigests,
        Checkout,
        Registration,
    )
    from continuity.roles.register_build import BuildReceipt
    from continuity.roles.table import ROLES
    from continuity.runner.preflight.run import CHILD_PATH
    from continuity.store import ObjectRef

    build = BuildReceipt(
        venv="/nonexistent/venv", python=sys.executable, python_version="3", site_packages="-",
        src="-", files={CHILD_PATH: "0" * 64}, pth_sha256="0" * 64, files_digest="0" * 64,
        seconds=0.0,
    )  # fmt: skip
    checkout = Checkout(path="/nonexistent/checkout", revision="0" * 40, tree="0" * 40)
    held = _workload(toy, _cap(toy))
    registration = Registration(
        schema=REGISTRATION_SCHEMA_V2,
        protocol=ROLE_PROTOCOL,
        r0=checkout,
        rpack=checkout,
        differing=[RENDERER_PATH],
        digests=BoundDigests(entrypoint={}, reader={}, scorer={}, lock={}, budget={}),
        workload=workload([], [], 1, held),
        roles=list(ROLES),
        builds={"r0": build, "rpack": build},
    )
    slots = registration_slots(registration, ComparePreflightRequest(store=str(toy.store.root)))
    assert len(slots) == len(ROLES) * len(held.selection.selected)
    assert [s.trace_id for s in slots[:4]] == list(held.selection.selected)
    for slot in slots:
        assert slot.suite == "holdout" and slot.trace is not None
        assert toy.store.has_object(ObjectRef("blob", slot.trace.digest, len(slot.trace.data)))


def test_a_registered_sizing_must_be_clean_and_at_rpacks_revision(
    toy: Fixture,  # noqa: F811
    tmp_path: Path,
) -> None:
    import hashlib

    from continuity.lookup.fixed_budget import CodeBinding, fixed_budget_bytes, load_fixed_budget
    from continuity.roles.register_holdout import check_sizing_build

    held = _workload(toy, _cap(toy))
    with pytest.raises(RoleError) as caught:  # the hand-made sizing was measured outside git
        check_sizing_build(held, "a" * 40)
    assert caught.value.code == "role_sizing_dirty"
    budget = load_fixed_budget(toy.budget, toy.sha256)
    clean = msgspec.structs.replace(
        budget, code=CodeBinding(commit="b" * 40, dirty=False, measurement_code="0" * 64)
    )
    path = tmp_path / "clean-budget.json"
    path.write_bytes(fixed_budget_bytes(clean))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    moved = msgspec.structs.replace(held, sizing=str(path), sizing_sha256=sha)
    check_sizing_build(moved, "b" * 40)
    with pytest.raises(RoleError) as caught:
        check_sizing_build(moved, "c" * 40)
    assert caught.value.code == "role_sizing_revision_mismatch"
