"""Efforts are validated against the chosen provider's allowed set before a plan binds
them (issue 36, item 9): ``effort_invalid`` names the provider and its values; every
effort the project's tests and README use stays valid, and a valid plan's digest does
not move."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from continuity.errors import UsageError
from continuity.plan.from_request import plan_from_request
from continuity.plan.plan import Endpoint, build_plan, plan_digest
from continuity.plan.request import PlanRequest
from continuity.providers.efforts import EFFORTS, check_effort
from continuity.runner.judge_calibration import JudgeChoice, judge_for
from tests.graph.test_dodo import doit

KINDS = sorted(EFFORTS)


@pytest.mark.parametrize(
    ("options", "location"),
    [
        ({"effort": "extreme"}, "--effort"),
        ({"effort": "LOW"}, "--effort"),
        ({"effort": "low\n"}, "--effort"),
        ({"judge_effort": "lo\x07w"}, "--judge-effort"),
        ({"judge": "openai:judge", "judge_effort": "high\x00"}, "--judge-effort"),
        ({"provider": "anthropic", "credentials": "/c.json", "effort": "minimal"}, "--effort"),
        ({"provider": "anthropic", "credentials": "/c.json", "effort": "4096"}, "--effort"),
        ({"provider": "openai-chat", "credentials": "/c.json", "effort": "max"}, "--effort"),
        ({"probe_mode": "lookup-allowed-v1", "effort": "extreme"}, "--effort"),
    ],
)
def test_an_effort_the_provider_does_not_take_is_refused(
    options: dict[str, Any], location: str
) -> None:
    with pytest.raises(UsageError) as caught:
        plan_from_request(PlanRequest.of(options))
    error = caught.value
    assert (error.code, error.location) == ("effort_invalid", location)
    kind = options.get("provider", "scripted")
    assert f"the {kind} provider" in error.message
    assert ", ".join(sorted(EFFORTS[kind])) in error.message
    assert "\x07" not in str(error) and "\x00" not in str(error)  # shown escaped


@pytest.mark.parametrize("kind", KINDS)
def test_build_plan_refuses_before_anything_is_bound(kind: str) -> None:
    with pytest.raises(UsageError) as caught:
        build_plan(reader_effort="extreme", endpoint=Endpoint(kind=kind))  # type: ignore[arg-type]
    assert caught.value.code == "effort_invalid"
    with pytest.raises(UsageError) as caught:
        build_plan(judge="openai:j", judge_effort="\t", endpoint=Endpoint(kind=kind))  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.location) == ("effort_invalid", "--judge-effort")


@pytest.mark.parametrize(
    ("kind", "effort"),
    [
        # the efforts the tests and README use, with their providers
        ("scripted", "low"),
        ("scripted", "high"),
        ("scripted", "none"),
        ("openai-chat", "none"),
        ("openai-chat", "low"),
        ("openai-responses", "high"),
        ("openai-responses", "minimal"),
        ("anthropic", "low"),
        ("anthropic", "none"),
    ],
)
def test_every_effort_in_use_stays_valid(kind: str, effort: str) -> None:
    assert check_effort(kind, effort, location="--effort") == effort
    plan = build_plan(reader_effort=effort, endpoint=Endpoint(kind=kind))  # type: ignore[arg-type]
    assert plan.reader_effort == effort


def test_a_valid_plan_keeps_its_digest() -> None:
    """The check binds nothing: the default plan's digest is the one bound before it."""
    assert plan_digest(plan_from_request(PlanRequest())) == plan_digest(build_plan())
    assert plan_from_request(PlanRequest.of({"effort": "high"})).reader_effort == "high"


@given(kind=st.sampled_from(KINDS), effort=st.text(max_size=12))
def test_an_effort_is_valid_exactly_when_the_provider_lists_it(kind: str, effort: str) -> None:
    try:
        check_effort(kind, effort, location="--effort")
    except UsageError as error:
        assert error.code == "effort_invalid" and effort not in EFFORTS[kind]
    else:
        assert effort in EFFORTS[kind]


def test_the_judge_calibration_refuses_an_invalid_judge_effort(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        judge_for(JudgeChoice(judge_effort="extreme"), str(tmp_path / "store"), tmp_path / "out")
    assert (caught.value.code, caught.value.location) == ("effort_invalid", "--judge-effort")


def test_doit_plan_refuses_an_invalid_effort_with_its_code(tmp_path: Path) -> None:
    result = doit(tmp_path, "plan", "--effort", "extreme", check=False)
    assert result.returncode != 0
    assert "effort_invalid: 'extreme' is not an effort the scripted provider takes" in (
        result.stdout + result.stderr
    )
    assert "Traceback" not in result.stdout + result.stderr
