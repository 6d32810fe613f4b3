"""A close misspelling of an arm, suite, provider, model profile or reader model gets a
"did you mean"; a name close to nothing gets none."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from continuity.arms import parse_arms
from continuity.errors import ContinuityError
from continuity.errors.hints import did_you_mean, did_you_mean_model
from continuity.plan.from_request import plan_from_request
from continuity.plan.models import model_profile
from continuity.plan.request import PlanRequest
from continuity.traces.keys import suite_specs

CASES: list[tuple[Callable[[str], object], str, str, str]] = [
    (parse_arms, "nativ", "arm_unknown", "native"),
    (parse_arms, "continuity-store-compacton", "arm_unknown", "continuity-store-compaction"),
    (suite_specs, "hrd", "suite_unknown", "hard"),
    (lambda p: plan_from_request(PlanRequest(provider=p)), "openai-caht", "plan_invalid",
     "openai-chat"),
    (model_profile, "curent", "plan_invalid", "current"),
    # a reader, judge or alternate model without its provider: the profiles' reference
    (lambda r: plan_from_request(PlanRequest(reader=r)), "gpt-6-mni", "plan_invalid",
     "openai-codex:gpt-6-mini"),
    (lambda j: plan_from_request(PlanRequest(judge=j)), "claude-opus-5", "plan_invalid",
     "anthropic:claude-opus-5-5"),
]  # fmt: skip


@pytest.mark.parametrize(("refuse", "typed", "code", "meant"), CASES)
def test_a_close_misspelling_is_refused_with_a_hint(
    refuse: Callable[[str], object], typed: str, code: str, meant: str
) -> None:
    with pytest.raises(ContinuityError) as refused:
        refuse(typed)
    assert refused.value.code == code
    assert f"did you mean {meant}? " in refused.value.message


@pytest.mark.parametrize(("refuse", "code"), [(c[0], c[2]) for c in CASES])
def test_a_name_close_to_nothing_gets_no_hint(refuse: Callable[[str], object], code: str) -> None:
    with pytest.raises(ContinuityError) as refused:
        refuse("zzzzqqqq")
    assert refused.value.code == code and "did you mean" not in refused.value.message


def test_the_hint_is_the_closest_accepted_name() -> None:
    assert (
        did_you_mean("compaction-3", ["compaction-1", "ceiling"]) == "did you mean compaction-1? "
    )
    assert did_you_mean("x", []) == ""


def test_a_model_without_its_provider_is_matched_by_its_model_part() -> None:
    known = ["openai:gpt-6.1-sol", "openai-codex:gpt-6.1-sol", "openai-codex:gpt-6-mini"]
    assert did_you_mean_model("gpt-6.1-sl", known) == "did you mean openai:gpt-6.1-sol? "
    assert did_you_mean_model("gpt-6-mini", known) == "did you mean openai-codex:gpt-6-mini? "
    assert did_you_mean_model("openai:gpt-6.1-sl", known) == "did you mean openai:gpt-6.1-sol? "
    assert did_you_mean_model("llama", known) == did_you_mean_model("x", []) == ""
