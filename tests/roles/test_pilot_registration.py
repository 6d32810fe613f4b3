"""Pilot registrations: written by doit pilot_register over an unchanged external
registration, verified on every read, refused with a code wherever they are not what
was registered, and never accepted where a compare registration is expected."""

from __future__ import annotations

import json
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.commands.pilot_runs import PilotRegisterRequest, pilot_register
from continuity.errors import ContinuityError
from continuity.lookup.fixed_budget import ReaderBinding, load_fixed_budget
from continuity.roles.pilot.registration import (
    PILOT_FILE,
    configured_pilot_deadlines,
    read_pilot,
    register_pilot,
)
from continuity.roles.register import REGISTRATION_SCHEMA, workload
from continuity.roles.run import compare_run
from continuity.spend.assumptions import ASSUMED_V1, assumptions_digest
from continuity.spend.descriptor import (
    MAX_SAFE_SEED,
    PILOT_MODE,
    PILOT_REGISTRATION_SCHEMA,
    TRANSPORT_KEY_POLICY,
    PilotRegistration,
)
from rules.pilot import task_pilot_register
from tests.conftest import REPO
from tests.graph.test_dodo import doit_command, doit_env
from tests.plan.test_holdout_estimate import write_budget
from tests.roles.pilot_toy import (
    PILOT_CAP,
    SCHEDULE_SEED,
    PilotToy,
    external,
    pilot_toy,  # noqa: F401
    registered,
    rewritten,
    sha256_of,
)


def code_of(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ContinuityError) as caught:
        call(*args, **kwargs)
    return caught.value.code, caught.value.location


def test_a_pilot_registration_round_trips(pilot_toy: PilotToy) -> None:  # noqa: F811
    done = registered(pilot_toy)
    assert done.path == pilot_toy.root / "pilot" / PILOT_FILE
    assert done.sha256 == sha256_of(done.path)
    pilot = msgspec.json.decode(done.path.read_bytes(), type=PilotRegistration)
    assert pilot == done.pilot and pilot.schema == PILOT_REGISTRATION_SCHEMA
    wrapped, descriptor = pilot.registration, pilot.descriptor
    assert wrapped.path == str(pilot_toy.registration) and wrapped.sha256 == pilot_toy.sha256
    assert wrapped.schema == "continuity-lookup-registration-v2"
    assert (descriptor.mode, descriptor.concurrency, descriptor.cap_usd) == (PILOT_MODE, 1, "25.00")
    assert descriptor.assumptions == ASSUMED_V1
    assert descriptor.assumptions_digest == assumptions_digest(ASSUMED_V1)
    rates = (descriptor.catalog.input, descriptor.catalog.output, descriptor.catalog.cache_read)
    assert rates == ("2.0", "10.0", "0.1") and descriptor.catalog.cache_write == "2.5"
    assert descriptor.transport_key_policy == TRANSPORT_KEY_POLICY
    assert descriptor.deadlines == configured_pilot_deadlines()
    assert descriptor.deadlines.probe_seconds == 600.0
    schedule = descriptor.schedule
    assert (schedule.seed, schedule.sizing_sha256) == (SCHEDULE_SEED, sha256_of(pilot_toy.budget))
    verified = read_pilot(done.path, done.sha256, pricing=pilot_toy.catalog)
    assert verified.cap == Decimal("25.00") and verified.sha256 == done.sha256
    assert verified.held.catalog_cap_usd == "68.40"  # the external registration, unchanged
    # the wrapped registration is untouched; the cap is written as whole cents
    assert sha256_of(pilot_toy.registration) == pilot_toy.sha256
    assert registered(pilot_toy, "again", cap_usd="25").pilot.descriptor.cap_usd == "25.00"


def test_the_task_prints_the_path_and_sha256(pilot_toy: PilotToy) -> None:  # noqa: F811
    out = pilot_toy.root / "by-task"
    line = pilot_register(
        PilotRegisterRequest(
            registration=str(pilot_toy.registration),
            sha256=pilot_toy.sha256,
            cap_usd=PILOT_CAP,
            schedule_seed=SCHEDULE_SEED,
            output=str(out),
            pricing=str(pilot_toy.catalog),
        )
    )
    path = out / PILOT_FILE
    assert f"sha256 {sha256_of(path)}" in line.splitlines()
    assert line.splitlines()[-1] == f"pilot registration in {path}"
    assert "enables no paid route" in line
    for missing, where in (
        ({"cap_usd": ""}, "--cap-usd"),
        ({"output": ""}, "--output"),
        ({"schedule_seed": -1}, "--schedule-seed"),
    ):
        options: dict[str, Any] = {
            "registration": str(pilot_toy.registration),
            "sha256": pilot_toy.sha256,
            "cap_usd": PILOT_CAP,
            "schedule_seed": SCHEDULE_SEED,
            "output": str(pilot_toy.root / "other"),
            **missing,
        }
        request = PilotRegisterRequest.of(options)
        assert code_of(pilot_register, request) == ("option_value_missing", where)
    (kind,) = [p["type"] for p in task_pilot_register()["params"] if p["name"] == "schedule_seed"]
    for text in ("-1", "x", str(2**53)):
        with pytest.raises(ValueError, match=r"^lookup_pilot_schedule_seed_invalid: "):
            kind(text)
    assert kind(str(MAX_SAFE_SEED)) == MAX_SAFE_SEED == 2**53 - 1


@pytest.mark.parametrize(
    ("change", "code", "where"),
    [
        ({"cap_usd": "3.91"}, "lookup_pilot_cap_below_rmax", "--cap-usd"),
        ({"cap_usd": "25.005"}, "lookup_pilot_cap_not_cents", "--cap-usd"),
        ({"cap_usd": "90071992547409.92"}, "lookup_pilot_cap_unsafe", "--cap-usd"),
        ({"cap_usd": "$25"}, "lookup_pilot_cap_invalid", "--cap-usd"),
        ({"sha256": "0" * 64}, "role_registration_sha256_mismatch", "--sha256"),
    ],
)
def test_registration_refuses_a_bad_cap_or_sha256(
    pilot_toy: PilotToy,  # noqa: F811
    change: dict[str, Any],
    code: str,
    where: str,
) -> None:
    assert code_of(registered, pilot_toy, **change) == (code, where)
    assert not (pilot_toy.root / "pilot").exists()  # nothing written


def test_registration_refuses_missing_or_other_prices(pilot_toy: PilotToy) -> None:  # noqa: F811
    catalog = json.loads(pilot_toy.catalog.read_text())
    sol = catalog["models"][ASSUMED_V1.model]
    for rates, code in (
        ({"cache_write": None}, "lookup_pilot_prices_missing"),
        ({"context_window": None}, "lookup_pilot_prices_missing"),
        ({"cache_write": 2.0}, "lookup_pilot_catalog_mismatch"),
        (
            {"tiers": [{"above_input_tokens": 200000, "input": 4.0, "output": 20.0,
                        "cache_read": 0.2, "cache_write": 5.0}]},
            "lookup_pilot_catalog_mismatch",
        ),
    ):  # fmt: skip
        other = pilot_toy.root / "other-catalog.json"
        models = {**catalog["models"], ASSUMED_V1.model: {**sol, **rates}}
        other.write_text(json.dumps({**catalog, "models": models}))
        assert code_of(registered, pilot_toy, pricing=other)[0] == code, rates
    assert not (pilot_toy.root / "pilot").exists()


def test_registration_refuses_what_is_not_an_external_registration(
    pilot_toy: PilotToy,  # noqa: F811
) -> None:
    v1 = pilot_toy.root / "v1.json"
    v1.write_bytes(
        msgspec.json.encode(external(workload(["original"], [], None), REGISTRATION_SCHEMA))
    )
    assert code_of(registered, pilot_toy, registration=v1, sha256=sha256_of(v1)) == (
        "lookup_pilot_registration_not_external",
        "--registration",
    )
    done = registered(pilot_toy)  # a pilot is no registration to wrap
    assert code_of(registered, pilot_toy, "nested", registration=done.path, sha256=done.sha256) == (
        "lookup_pilot_registration_refused",
        str(done.path),
    )
    assert code_of(registered, pilot_toy) == ("role_output_exists", str(pilot_toy.root / "pilot"))
    relative = code_of(
        register_pilot, pilot_toy.registration, pilot_toy.sha256, PILOT_CAP, 1, "rel/out",
        pricing=pilot_toy.catalog,
    )  # fmt: skip
    assert relative == ("role_output_not_absolute", "rel/out")


def test_registration_refuses_a_sizing_read_by_another_model(pilot_toy: PilotToy) -> None:  # noqa: F811
    budget = load_fixed_budget(pilot_toy.budget, sha256_of(pilot_toy.budget))
    other = ReaderBinding(binding="alternate", reader="openai-codex:gpt-6.1-luna", alternate="x")
    sizing_sha = write_budget(pilot_toy.budget, msgspec.structs.replace(budget, reader=other))

    def moved(data: dict[str, Any]) -> None:
        data["workload"]["holdout"]["sizing_sha256"] = sizing_sha

    sha = rewritten(pilot_toy.registration, moved)
    assert code_of(registered, pilot_toy, sha256=sha) == (
        "lookup_pilot_reader_mismatch",
        "sizing:$.reader.reader",
    )


def _pilot_edit(toy: PilotToy, change: Any) -> tuple[Path, str]:
    done = registered(toy)
    return done.path, rewritten(done.path, change)


def _descriptor(field: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        target = data["descriptor"]
        *path, last = field.split(".")
        for name in path:
            target = target[name]
        target[last] = value

    return change


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("cap_usd", "3.00", "lookup_pilot_cap_below_rmax"),
        ("cap_usd", "25.001", "lookup_pilot_cap_not_cents"),
        ("concurrency", 4, "lookup_pilot_concurrency_invalid"),
        ("mode", "full-upfront", "lookup_pilot_descriptor_invalid"),
        ("transport_key_policy", "caller", "lookup_pilot_descriptor_invalid"),
        ("assumptions.max_output", 200_000, "lookup_assumptions_changed"),
        ("assumptions.rmax", "3.00", "lookup_rmax_altered"),
        ("assumptions_digest", "0" * 64, "lookup_assumptions_changed"),
        ("catalog.output", "12.0", "lookup_pilot_catalog_changed"),
        ("schedule.seed", 8, "lookup_pilot_schedule_mismatch"),
        ("deadlines.probe_seconds", 1200.0, "lookup_pilot_deadlines_changed"),
        ("schema", "other", "lookup_pilot_descriptor_invalid"),
    ],
)
def test_an_edited_descriptor_is_refused_on_read(
    pilot_toy: PilotToy,  # noqa: F811
    field: str,
    value: Any,
    code: str,
) -> None:
    path, sha = _pilot_edit(pilot_toy, _descriptor(field, value))
    assert code_of(read_pilot, path, sha, pricing=pilot_toy.catalog)[0] == code


def test_a_resealed_schedule_must_still_bind_the_registrations_sizing(
    pilot_toy: PilotToy,  # noqa: F811
) -> None:
    from continuity.spend.descriptor import Schedule, sealed_schedule

    def resealed(data: dict[str, Any]) -> None:
        bound = msgspec.convert(data["descriptor"]["schedule"], Schedule)
        other = sealed_schedule(msgspec.structs.replace(bound, sizing_sha256="f" * 64))
        data["descriptor"]["schedule"] = msgspec.to_builtins(other)

    path, sha = _pilot_edit(pilot_toy, resealed)
    assert code_of(read_pilot, path, sha, pricing=pilot_toy.catalog) == (
        "lookup_pilot_schedule_mismatch",
        "descriptor.schedule",
    )


def test_the_wrapped_registration_and_the_catalog_must_be_unchanged(
    pilot_toy: PilotToy,  # noqa: F811
) -> None:
    done = registered(pilot_toy)
    catalog = json.loads(pilot_toy.catalog.read_text())
    sol = catalog["models"][ASSUMED_V1.model]
    for rates, code in (
        ({"output": 12.0}, "lookup_pilot_catalog_changed"),
        ({"cache_read": None}, "lookup_pilot_prices_missing"),
    ):
        other = pilot_toy.root / "changed-catalog.json"
        models = {**catalog["models"], ASSUMED_V1.model: {**sol, **rates}}
        other.write_text(json.dumps({**catalog, "models": models}))
        assert code_of(read_pilot, done.path, done.sha256, pricing=other)[0] == code
    # the recorded digest of the wrapped registration is checked too
    path = done.path
    sha = rewritten(path, lambda data: data["registration"].update(registration_digest="0" * 64))
    assert code_of(read_pilot, path, sha, pricing=pilot_toy.catalog) == (
        "lookup_pilot_registration_invalid",
        f"{path}:$.registration",
    )
    fresh = registered(pilot_toy, "fresh")
    rewritten(pilot_toy.registration, lambda data: data.update(differing=[]))
    assert code_of(read_pilot, fresh.path, fresh.sha256, pricing=pilot_toy.catalog) == (
        "lookup_pilot_registration_sha256_mismatch",
        f"{fresh.path}:$.registration.sha256",
    )
    assert code_of(read_pilot, fresh.path, "1" * 64) == (
        "role_registration_sha256_mismatch",
        "--sha256",
    )
    # a compare registration is not a pilot registration
    assert code_of(read_pilot, pilot_toy.registration, sha256_of(pilot_toy.registration)) == (
        "lookup_pilot_registration_invalid",
        str(pilot_toy.registration),
    )


def test_a_pilot_is_refused_where_a_compare_registration_is_expected(
    pilot_toy: PilotToy,  # noqa: F811
) -> None:
    from continuity.roles.aggregate_read import read_registration

    done = registered(pilot_toy)
    refused = ("lookup_pilot_registration_refused", str(done.path))
    assert code_of(compare_run, done.path, done.sha256, str(pilot_toy.root / "run")) == refused
    assert code_of(read_registration, done.path, done.sha256) == refused
    assert not (pilot_toy.root / "run").exists()


@pytest.mark.slow
def test_the_front_door_refuses_a_pilot_without_a_traceback(pilot_toy: PilotToy) -> None:  # noqa: F811
    done = registered(pilot_toy)
    command = doit_command(
        "compare_run", "--registration", str(done.path), "--sha256", done.sha256,
        "--output", str(pilot_toy.root / "run"),
    )  # fmt: skip
    ran = subprocess.run(
        command,
        cwd=REPO,
        env=doit_env(pilot_toy.root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    both = ran.stdout + ran.stderr
    assert ran.returncode != 0 and "lookup_pilot_registration_refused" in both
    assert "Traceback" not in both
