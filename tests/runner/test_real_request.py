"""A real invocation's settings: ``doit units``'s typed request read once, at the edge."""

from __future__ import annotations

import pytest

from continuity.commands.units_request import UnitsRequest, real_request
from continuity.errors import RealModeError
from continuity.plan.guards import refuse_under_ci
from continuity.runner.real_request import (
    DEFAULT_MAX_OBSERVED_INPUT_TOKENS,
    DEFAULT_REQUEST_TIMEOUT,
    RealRequest,
)


def test_empty_options_mean_the_defaults() -> None:
    assert real_request(UnitsRequest()) == RealRequest(confirm=None)
    assert real_request(UnitsRequest(concurrency=0)) == RealRequest(confirm=None)
    assert RealRequest(confirm=None).max_observed_input_tokens == DEFAULT_MAX_OBSERVED_INPUT_TOKENS
    assert RealRequest(confirm=None).request_timeout == DEFAULT_REQUEST_TIMEOUT


def test_every_option_lands_in_its_field() -> None:
    options = {
        "confirm_plan": "d" * 64,
        "credentials": "/keys/k.json",
        "out": "/runs/a",
        "trace": "t-01",
        "jobs": 3,
        "concurrency": 7,
        "max_input_tokens": 1234,
        "explain_cache": True,
        "capture_upkeep_output": "/cap",
        "pricing": "/p.json",
        "cost_cap": "2.50",
        "request_timeout": 12.5,
        "raise_cap": True,
        "repeat": "2",
    }
    assert real_request(UnitsRequest.of(options)) == RealRequest(
        confirm="d" * 64,
        credentials="/keys/k.json",
        output="/runs/a",
        traces="t-01",
        only_repeats=[2],
        jobs=3,
        concurrency=7,
        max_observed_input_tokens=1234,
        explain_cache=True,
        capture="/cap",
        pricing="/p.json",
        cost_cap="2.50",
        request_timeout=12.5,
        raise_cap=True,
    )


@pytest.mark.parametrize("value", ["", "1", "true"])
def test_the_ci_guard_refuses_any_ci_variable(value: str) -> None:
    with pytest.raises(RealModeError) as caught:
        refuse_under_ci({"CI": value}, what="a real judge")
    assert caught.value.code == "real_refused_ci"
    assert caught.value.location == "$CI"
    assert caught.value.message.startswith("a real judge never runs")
    refuse_under_ci({"PATH": "/bin"})  # no CI variable: nothing to refuse
