"""What a plan binds of the ledger arm, the seed's 2,016-completion plan, and the
refusal of old or under-reserved ledger plans before anything runs."""

from __future__ import annotations

import msgspec
import pytest

from continuity.arms import LEDGER_ARM
from continuity.errors import ContinuityError, LedgerError, UsageError
from continuity.plan.from_request import plan_from_request
from continuity.plan.ledger_plan import RESERVATIONS, Reservation, check_ledger_plan
from continuity.plan.plan import Plan, build_plan, plan_digest
from continuity.plan.request import PlanRequest
from continuity.plan.workload import load_plan_traces, workload
from continuity.traces.schema import Trace

FOUR_ARMS = f"native,cold-rebuild,continuity-pack-cold,{LEDGER_ARM}"


def test_a_plan_with_the_ledger_arm_binds_its_extractor_sequence_and_reservations() -> None:
    plan = build_plan(arms=FOUR_ARMS)
    assert plan.ledger is not None
    assert plan.ledger.extraction_model == plan.reader  # never an automatic cheaper model
    assert plan.ledger.sequence == (plan.alternate, plan.reader, plan.alternate)
    assert [(r.kind, r.input_tokens, r.output_tokens) for r in plan.ledger.reservations] == [
        ("bootstrap", 128_000, 4_096),
        ("incremental", 64_000, 4_096),
        ("incremental", 64_000, 4_096),
    ]
    base = plan_digest(plan)
    for change in (
        {"extraction_model": "openai-codex:gpt-6-mini"},
        {"require_request_cap": True},
        {"reader": "openai-codex:gpt-6-nova"},
    ):
        other = plan_from_request(PlanRequest.of({"arms": FOUR_ARMS, **change}))
        assert plan_digest(other) != base, change


def test_a_plan_without_the_ledger_arm_binds_nothing_of_it() -> None:
    plan = build_plan(arms="native,cold-rebuild")
    assert plan.ledger is None
    # Every default plan keeps its digest (tests/plan/test_plan.py pins the default).
    assert plan_digest(plan) == plan_digest(
        plan_from_request(PlanRequest.of({"arms": "native,cold-rebuild"}))
    )


@pytest.mark.parametrize("flag", ["extraction_model", "require_request_cap"])
def test_a_ledger_option_without_the_ledger_arm_is_refused(flag: str) -> None:
    value: object = "openai-codex:gpt-6-mini" if flag == "extraction_model" else True
    with pytest.raises(UsageError) as refused:
        plan_from_request(PlanRequest.of({"arms": "native", flag: value}))
    assert refused.value.code == "plan_invalid"
    assert refused.value.location == "--" + flag.replace("_", "-")


def test_an_extraction_model_must_be_provider_model() -> None:
    with pytest.raises(UsageError) as refused:
        plan_from_request(PlanRequest.of({"arms": LEDGER_ARM, "extraction_model": "gpt-6-mini"}))
    assert (refused.value.code, refused.value.location) == ("plan_invalid", "--extraction-model")


def _with_probes(trace: Trace, count: int) -> Trace:
    """The trace with `count` probes (the seed's hard traces carry 15, ours 14)."""
    probes = list(trace.probes)
    while len(probes) < count:
        extra = probes[len(probes) % len(trace.probes)]
        probes.append(msgspec.structs.replace(extra, probe_id=f"{extra.probe_id}-x{len(probes)}"))
    return msgspec.structs.replace(trace, probes=tuple(probes[:count]))


def test_the_seeds_plan_is_1920_answers_and_96_extractions() -> None:
    """Both hard corpora x 2 repeats x native, cold-rebuild, pack-cold and ledger-cold,
    no judge: 1,920 answer turns + 96 extractions = 2,016 completions (the seed's hard
    traces have 15 probes; ours have 14, which the second half pins)."""
    seed = ours = None
    for probes in (15, None):
        answers = extractions = completions = 0
        for suite in ("hard", "hard-distractors"):
            plan = build_plan(suite, arms=FOUR_ARMS, repeats=2)
            traces = load_plan_traces(plan)
            if probes is not None:
                traces = [_with_probes(t, probes) for t in traces]
            load = workload(plan, traces)
            answers += load.live_turns
            extractions += load.extraction_calls
            completions += load.completions
            assert load.units == 8 * 4 * 2
        if probes is not None:
            seed = (answers, extractions, completions)
        else:
            ours = (answers, extractions, completions)
    assert seed == (1_920, 96, 2_016)
    assert ours == (1_792, 96, 1_888)


def test_every_extraction_is_planned_at_its_reservation_on_the_extraction_model() -> None:
    plan = build_plan("original", arms=LEDGER_ARM, extraction_model="openai-codex:gpt-6-mini")
    load = workload(plan)
    upkeep = [c for c in load.calls if c.role == "upkeep"]
    assert len(upkeep) == 3 * 4  # three per trace and repeat, four originals, never per probe
    assert {(c.model, c.input_tokens, c.output_tokens) for c in upkeep} == {
        ("openai-codex:gpt-6-mini", 128_000, 4_096),
        ("openai-codex:gpt-6-mini", 64_000, 4_096),
    }
    controls = workload(build_plan("original", arms="continuity-pack-cold"))
    assert controls.extraction_calls == 0  # the controls buy no upkeep


def _check(plan: Plan) -> None:
    check_ledger_plan(plan.arms, plan.ledger, reader=plan.reader, alternate=plan.alternate)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"ledger": None}, "ledger_plan_invalid"),  # an old plan: the arm, no section
        ({"reservations": RESERVATIONS[:1]}, "ledger_plan_invalid"),  # single preparation
        ({"sequence": ("r", "a", "r")}, "ledger_plan_invalid"),
        ({"schema": "continuity-ledger-plan-v0"}, "ledger_plan_invalid"),
        (
            {"reservations": (Reservation("bootstrap", 64_000, 4_096), *RESERVATIONS[1:])},
            "ledger_plan_under_reserved",
        ),
        (
            {"reservations": (*RESERVATIONS[:2], Reservation("incremental", 64_000, 1_024))},
            "ledger_plan_under_reserved",
        ),
        (
            {"reservations": (RESERVATIONS[1], RESERVATIONS[0], RESERVATIONS[2])},
            "ledger_plan_under_reserved",
        ),
    ],
)
def test_an_old_or_under_reserved_ledger_plan_is_refused(
    change: dict[str, object], code: str
) -> None:
    plan = build_plan(arms=LEDGER_ARM)
    section = plan.ledger
    assert section is not None
    if "ledger" in change:
        plan = msgspec.structs.replace(plan, ledger=None)
    else:
        plan = msgspec.structs.replace(plan, ledger=msgspec.structs.replace(section, **change))
    with pytest.raises(LedgerError) as refused:
        _check(plan)
    assert (refused.value.code, refused.value.location) == (code, "plan.ledger")


def test_a_ledger_section_without_the_arm_is_refused() -> None:
    plan = build_plan(arms=LEDGER_ARM)
    with pytest.raises(ContinuityError) as refused:
        _check(msgspec.structs.replace(plan, arms=["native"]))
    assert refused.value.code == "ledger_plan_invalid"


def test_the_next_command_keeps_the_ledger_options() -> None:
    from continuity.commands.planning import next_command

    options = {
        "arms": LEDGER_ARM,
        "extraction_model": "openai-codex:gpt-6-mini",
        "require_request_cap": True,
    }
    plan = plan_from_request(PlanRequest.of(options))
    words = next_command(PlanRequest.of(options), plan, plan_digest(plan)).split()
    flag = words.index("--require-request-cap")
    following = words[flag + 1 : flag + 2]
    assert following in ([], ["--extraction-model"]) or following[0].startswith("--")
    assert words[words.index("--extraction-model") + 1] == "openai-codex:gpt-6-mini"


def test_a_capture_without_the_ledger_arm_is_refused(tmp_path: object) -> None:
    from continuity.runner.ledger_run import ledger_run_for
    from tests.conftest import REPO

    with pytest.raises(LedgerError) as refused:
        ledger_run_for(build_plan(arms="native"), capture="/tmp/captures", checkout=REPO)
    assert (refused.value.code, refused.value.location) == (
        "capture_output_invalid",
        "--capture-upkeep-output",
    )
    assert ledger_run_for(build_plan(arms="native"), capture=None, checkout=REPO) is None
