"""The role protocol end to end: `doit units --lookup-role ROLE` runs the role's arm with
its frozen soul and writes a role receipt; ordinary plan digests do not move."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest

from continuity.errors import UsageError
from continuity.lookup.soul import KNOWN_SOULS
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import LookupPlan, plan_digest
from continuity.plan.request import PlanRequest
from continuity.roles.guidance import ROLE_PROTOCOL
from continuity.roles.receipt import RECEIPT_FILE, read_role_receipt, role_plan
from continuity.roles.table import role_named
from continuity.runner.manifest import code_revision
from tests.graph.test_dodo import doit

LOOKUP = "lookup-allowed-v1"
SMOKE = ("--suite", "original", "--trace", "brightline-return", "--probe-limit", "1")
# Measured at d35026d, before the role protocol existed, and after it: identical. All
# five were re-pinned by issue 17: they bind the trace keys, which moved when the trace
# schema gained free recall and decoys (the validation code every trace key binds), and
# the three lookup plans also bind the frozen policy's sha256 (budget-v2.json ->
# budget-v3.json, the protocol-bound policy). Every other field encodes as before.
# Re-pinned again by issue 34: the trace schema gained the smoke family (trace keys) and
# the default reader is the current profile's real model (tests/plan/test_plan.py
# reproduces the previous default digest from exactly those two changes).
# Re-pinned by issue 35: each binds probe-protocol-v3, and the lookup plans budget-v4.json;
# with probe-protocol-v2 and budget-v3.json's sha256 put back, all five digest as before.
ORDINARY: dict[str, dict[str, object]] = {
    "ed2ed049bae9736005a8ae4adee9d26a4f5dc5935b7ed43b4005d455334a7f2c": {},
    "f462a60131b6d80002173a53767adb64a2aa5a0d6984a7941f37a6b5fbc594f6": {
        "probe_mode": "recall-only",
        "suite": "original",
        "probe_limit": 1,
        "arms": "native,continuity-pack-cold",
    },
    "2e5b767dfd43b02b0429292adc920f16bc1361e2d1e1160ff1b1a0df6f486749": {"probe_mode": LOOKUP},
    "12892ebbcc25b189692c1ee3e7894049a94eac29a352514c0b558be1ce9365c5": {
        "probe_mode": LOOKUP,
        "arms": "continuity-pack-cold",
        "probe_limit": 1,
    },
    "557f995396929a5491a68b0f3f95f8c0b30fbb74acd8b2176655a90787441b48": {
        "probe_mode": LOOKUP,
        "arms": "native-lookup",
        "lookup_reader": "alternate",
    },
}


@pytest.mark.parametrize("digest", ORDINARY)
def test_ordinary_plan_digests_are_unchanged(digest: str) -> None:
    assert plan_digest(plan_from_request(PlanRequest.of(ORDINARY[digest]))) == digest


def test_a_role_plan_binds_its_soul_and_keeps_the_frozen_budget() -> None:
    base = plan_from_request(PlanRequest.of({"probe_mode": LOOKUP, "arms": "continuity-pack-cold"}))
    assert isinstance(base, LookupPlan)
    pack, soul_only = role_plan(base, role_named("pack")), role_plan(base, role_named("soul-only"))
    assert plan_digest(pack) == plan_digest(base)  # S0 is the soul the policy binds
    assert (soul_only.soul_sha256, soul_only.soul_core_sha256) == KNOWN_SOULS[
        "continuity-soul-v2.md"
    ]
    assert (soul_only.policy_sha256, soul_only.call_budget, soul_only.byte_budget) == (
        base.policy_sha256,
        base.call_budget,
        base.byte_budget,
    )
    every_arm = plan_from_request(PlanRequest.of({"probe_mode": LOOKUP}))
    assert isinstance(every_arm, LookupPlan)
    with pytest.raises(UsageError) as caught:
        role_plan(every_arm, role_named("native"))
    assert caught.value.code == "lookup_role_arms_conflict"


def test_a_role_run_writes_its_receipt(tmp_path: Path) -> None:
    result = doit(tmp_path, "units", "--probe-mode", LOOKUP, "--lookup-role", "pack", *SMOKE)
    run = tmp_path / "out" / "runs" / "lookup"
    assert f"receipt in {run / RECEIPT_FILE}" in result.stdout.strip().splitlines()[-1]
    receipt = read_role_receipt(run / RECEIPT_FILE)
    assert (receipt.schema, receipt.role, receipt.arm, receipt.code) == (
        ROLE_PROTOCOL,
        "pack",
        "continuity-pack-cold",
        "R0",
    )
    assert (receipt.soul, receipt.soul_file) == ("S0", "continuity-soul-v1.md")
    assert (receipt.soul_sha256, receipt.soul_core_sha256) == KNOWN_SOULS[receipt.soul_file]
    lookup = plan_from_request(
        PlanRequest.of({"probe_mode": LOOKUP, "arms": "continuity-pack-cold", "probe_limit": 1})
    )
    assert isinstance(lookup, LookupPlan)
    expected = role_plan(lookup, role_named("pack"))
    assert receipt.plan_digest == plan_digest(expected)
    assert receipt.revision == code_revision()[0] and receipt.witness is True
    assert receipt.outcome == "complete" and receipt.registration_digest is None
    assert [u.name for u in receipt.units] == ["r1-brightline-return-continuity-pack-cold.json"]
    unit = run / "units" / receipt.units[0].name
    assert hashlib.sha256(unit.read_bytes()).hexdigest() == receipt.units[0].sha256


def test_a_role_run_binds_the_registration_digest(tmp_path: Path) -> None:
    digest = "ab" * 32
    doit(
        tmp_path, "units", "--probe-mode", LOOKUP, "--lookup-role", "native-soul",
        "--registration-digest", digest, "--run", "native-soul", *SMOKE,
    )  # fmt: skip
    receipt = read_role_receipt(tmp_path / "out" / "runs" / "native-soul" / RECEIPT_FILE)
    assert (receipt.arm, receipt.soul, receipt.registration_digest) == (
        "native-lookup",
        "S1",
        digest,
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--probe-mode", LOOKUP, "--lookup-role", "pack-cold"), "lookup_role_unknown"),
        (
            ("--probe-mode", LOOKUP, "--lookup-role", "pack", "--arms", "native-lookup"),
            "lookup_role_arms_conflict",
        ),
        (("--lookup-role", "pack"), "plan_invalid"),
        (("--registration-digest", "ab" * 32), "plan_invalid"),
        (
            ("--probe-mode", LOOKUP, "--lookup-role", "pack", "--registration-digest", "xyz"),
            "option_invalid",
        ),
    ],
)
def test_role_options_are_refused_with_their_codes(
    tmp_path: Path, args: tuple[str, ...], code: str
) -> None:
    result = doit(tmp_path, "units", *args, *SMOKE, check=False)
    assert result.returncode != 0 and code in result.stdout + result.stderr
    assert not (tmp_path / "out" / "runs").exists()


def test_a_tampered_receipt_is_refused(tmp_path: Path) -> None:
    path = tmp_path / RECEIPT_FILE
    path.write_bytes(b"{")
    with pytest.raises(UsageError) as caught:
        read_role_receipt(path)
    assert caught.value.code == "lookup_role_receipt_invalid"
    fields = {
        "role": "pack", "arm": "continuity-pack-cold", "code": "R0", "soul": "S1",
        "soul_file": "continuity-soul-v2.md", "soul_sha256": "0" * 64,
        "soul_core_sha256": KNOWN_SOULS["continuity-soul-v2.md"][1], "plan_digest": "p",
        "revision": "r", "dirty": False, "witness": False, "units": [], "outcome": "complete",
    }  # fmt: skip
    path.write_bytes(msgspec.json.encode({"schema": ROLE_PROTOCOL, **fields}))
    with pytest.raises(UsageError) as caught:
        read_role_receipt(path)
    assert caught.value.code == "lookup_role_receipt_invalid"
