"""Every task converts its options once into a typed request whose fields are exactly
the task's options, with the same defaults (`continuity.requests`)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import dodo
from continuity.commands.agent_check import AgentCheckRequest
from continuity.commands.aggregation import AggregateRequest, ScoreRequest
from continuity.commands.calibrate_judge import CalibrateRequest
from continuity.commands.catalog import RunsRequest
from continuity.commands.checkpoint_build import CheckpointsRequest
from continuity.commands.comparison import CompareRequest
from continuity.commands.estimation import EstimateRequest
from continuity.commands.export_run import ExportRequest
from continuity.commands.holdouts import (
    HoldoutFreezeRequest,
    HoldoutOverlapRequest,
    HoldoutSourceRequest,
)
from continuity.commands.import_locomo import ImportLocomoRequest
from continuity.commands.ledger_check import LedgerSmokeRequest
from continuity.commands.lookup_sizing import LookupBudgetRequest
from continuity.commands.offline_contract import OfflineContractRequest
from continuity.commands.pilot_runs import (
    ComparePilotRequest,
    PilotRegisterRequest,
    PilotSmokeRequest,
)
from continuity.commands.preflight_runs import ComparePreflightRequest
from continuity.commands.qualification import QualifyRequest
from continuity.commands.role_runs import (
    CompareAggregateRequest,
    CompareRegisterRequest,
    CompareRunRequest,
)
from continuity.commands.store_upkeep import GcRequest, VerifyRequest
from continuity.commands.trace_build import TracesRequest
from continuity.commands.units_request import UnitsRequest
from continuity.plan.request import HoldoutRequest, PlanRequest, PricedRequest
from continuity.requests import Request, SuiteRequest

# task name -> the request type its action converts its options into.
REQUESTS: dict[str, type[Request]] = {
    "agent_check": AgentCheckRequest,
    "aggregate": AggregateRequest,
    "calibrate": CalibrateRequest,
    "checkpoints": CheckpointsRequest,
    "compare": CompareRequest,
    "compare_aggregate": CompareAggregateRequest,
    "compare_pilot": ComparePilotRequest,
    "compare_preflight": ComparePreflightRequest,
    "compare_register": CompareRegisterRequest,
    "compare_run": CompareRunRequest,
    "dry_run": PricedRequest,
    "export": ExportRequest,
    "estimate": EstimateRequest,
    "gc": GcRequest,
    "holdout_freeze": HoldoutFreezeRequest,
    "holdout_overlap": HoldoutOverlapRequest,
    "holdout_select": HoldoutRequest,
    "holdout_validate": HoldoutSourceRequest,
    "import_locomo": ImportLocomoRequest,
    "ledger_smoke": LedgerSmokeRequest,
    "lookup_budget": LookupBudgetRequest,
    "offline_contract": OfflineContractRequest,
    "pilot_register": PilotRegisterRequest,
    "pilot_smoke": PilotSmokeRequest,
    "plan": PlanRequest,
    "qualify": QualifyRequest,
    "runs": RunsRequest,
    "score": ScoreRequest,
    "traces": TracesRequest,
    "units": UnitsRequest,
    "verify": VerifyRequest,
}
# Fields every request of a kind has though its task may not declare them as options
# (they take their defaults): the store and output directory, and a suite's selection.
_BASE = {"store", "out", "suite", "seeds"}


def _params(task: str) -> list[dict[str, Any]]:
    spec = getattr(dodo, f"task_{task}")()
    return list(spec.get("params", []))


def _defaults(kind: type[Request]) -> dict[str, Any]:
    return msgspec.structs.asdict(kind())


@pytest.mark.parametrize("task", sorted(REQUESTS))
def test_the_request_has_exactly_the_tasks_options(task: str) -> None:
    kind = REQUESTS[task]
    params = {p["name"]: p["default"] for p in _params(task)}
    assert set(params) <= set(kind.__struct_fields__), task
    assert set(kind.__struct_fields__) - set(params) <= _BASE, task
    defaults = _defaults(kind)
    differ = {n: (params[n], defaults[n]) for n in params if params[n] != defaults[n]}
    assert differ == {}, f"{task}: (param default, request default) differ"


def test_every_task_with_options_has_a_request() -> None:
    tasks = [n.removeprefix("task_") for n in dodo.__all__ if n.startswith("task_")]
    missing = [t for t in tasks if _params(t) and t not in REQUESTS]
    assert missing == []


def test_a_request_takes_the_options_it_knows_and_defaults_the_rest() -> None:
    request = UnitsRequest.of({"suite": "hard", "repeats": 2, "jobs": 3, "unrelated": 1})
    assert (request.suite, request.repeats, request.jobs) == ("hard", 2, 3)
    assert (request.arms, request.run, request.store) == ("all", "offline", "")
    assert isinstance(request, PlanRequest) and isinstance(request, SuiteRequest)


def test_a_value_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError):
        PlanRequest.of({"repeats": "many"})


def test_a_request_is_frozen() -> None:
    with pytest.raises(AttributeError):
        PlanRequest().suite = "hard"  # type: ignore[misc]
