"""A pilot's resolved settings come from the harness configuration that would run: each
auxiliary caller turned on in a real configuration (an arm, a patch, the plan's judge,
the route) fails the pilot's safety rules with its code."""

from __future__ import annotations

from typing import Any

import pytest

from continuity.errors import ArmError, ConfigError, SpendError
from continuity.harness.config import HarnessConfig
from continuity.lookup.pilot_settings import (
    AUXILIARY_CALLERS,
    CONFIG_CLASSES,
    Route,
    resolve_pilot_settings,
    unclassified_keys,
)
from continuity.spend.assumptions import ASSUMED_V1
from continuity.spend.contract import callers_of, check_auxiliary_callers
from continuity.spend.safety import BOUNDARY_ARMS, ResolvedSettings, check_settings

READER = ASSUMED_V1.model  # "openai-codex:gpt-6.1-sol", the registered reader
MODEL = READER.partition(":")[2]


def _check(settings: ResolvedSettings) -> None:
    check_settings(settings, MODEL, where="entry")
    check_auxiliary_callers(callers_of(settings), where="entry")


@pytest.mark.parametrize("arm", sorted(BOUNDARY_ARMS))
def test_a_pilot_arm_resolves_to_settings_the_rules_accept(arm: str) -> None:
    settings = resolve_pilot_settings(arm, reader=READER, judge=None)
    _check(settings)
    assert settings.model == MODEL and settings.tools == ("ConversationHistory",)
    assert (settings.memory, settings.upkeep, settings.compaction) == (False, False, False)


def _patched(path: str, value: Any) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    node = patch
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return patch


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"judge": "openai:gpt-5-judge"}, "lookup_auxiliary_callers_forbidden"),
        (
            {"patches": [_patched("runtime.session.continuity.upkeep_enabled", True)]},
            "lookup_auxiliary_callers_forbidden",
        ),
        (
            {"patches": [_patched("runtime.session.continuity.ledger_enabled", True)]},
            "lookup_auxiliary_callers_forbidden",
        ),
        ({"arm": "continuity-ledger-cold"}, "lookup_auxiliary_callers_forbidden"),
        ({"arm": "compaction-1"}, "lookup_auxiliary_callers_forbidden"),
        ({"arm": "compaction-2"}, "lookup_auxiliary_callers_forbidden"),
        ({"arm": "ceiling"}, "lookup_auxiliary_callers_forbidden"),
        ({"arm": "native"}, "lookup_pilot_boundary_required"),
        (
            {"patches": [_patched("tools.allowed_tools", ["ConversationHistory", "web_search"])]},
            "lookup_tools_forbidden",
        ),
        (
            {"patches": [_patched("models.reader", "openai-codex:gpt-6-luna")]},
            "lookup_route_mismatch",
        ),
        ({"route": Route(max_retries=2)}, "lookup_route_mismatch"),
        ({"route": Route(attempts=2)}, "lookup_route_mismatch"),
        ({"route": Route(transport="websocket")}, "lookup_route_mismatch"),
        ({"route": Route(fallbacks=("openai:gpt-5",))}, "lookup_route_mismatch"),
        ({"arm": "cold-rebuild"}, "lookup_pilot_boundary_required"),
    ],
)
def test_each_caller_turned_on_in_a_real_configuration_is_refused(
    change: dict[str, Any], code: str
) -> None:
    options: dict[str, Any] = {"judge": None, **change}
    arm = options.pop("arm", "native-lookup")
    settings = resolve_pilot_settings(arm, reader=READER, **options)
    with pytest.raises(SpendError) as err:
        _check(settings)
    assert err.value.code == code


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"judge": "openai:gpt-5-judge"}, "judge"),
        ({"patches": [_patched("runtime.session.continuity.upkeep_enabled", True)]}, "upkeep"),
        ({"patches": [_patched("runtime.session.continuity.ledger_enabled", True)]}, "memory"),
        ({"arm": "compaction-1"}, "compaction"),
    ],
)
def test_the_guard_entry_check_sees_the_same_callers(change: dict[str, Any], field: str) -> None:
    options: dict[str, Any] = {"judge": None, **change}
    arm = options.pop("arm", "native-lookup")
    callers = callers_of(resolve_pilot_settings(arm, reader=READER, **options))
    with pytest.raises(SpendError) as err:
        check_auxiliary_callers(callers, where="child")
    assert (err.value.code, err.value.location) == ("lookup_auxiliary_caller_on", f"child.{field}")


def test_a_mid_checkpoint_arm_is_a_preparation_and_a_ledger_arm_a_capture() -> None:
    assert resolve_pilot_settings("compaction-2", reader=READER, judge=None).mid_checkpoint
    assert resolve_pilot_settings("continuity-ledger-cold", reader=READER, judge=None).capture


@pytest.mark.parametrize(
    "path", ["runtime.subagents", "runtime.title_generator", "tools.output_summarizer"]
)
def test_an_absent_caller_has_no_key_that_turns_it_on(path: str) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_pilot_settings(
            "native-lookup", reader=READER, judge=None, patches=[_patched(path, True)]
        )
    assert err.value.code == "config_key_unknown"


def test_every_configuration_key_is_classified() -> None:
    assert unclassified_keys() == []

    def leaves(document: dict[str, Any], prefix: str = "") -> list[str]:
        found: list[str] = []
        for key, value in document.items():
            path = f"{prefix}{key}"
            found += leaves(value, f"{path}.") if isinstance(value, dict) else [path]
        return found

    assert sorted(CONFIG_CLASSES) == sorted(leaves(HarnessConfig().model_dump()))  # none stale

    class WithSubagents(HarnessConfig):
        subagents: bool = False

    # A new key (a subagent runtime, say) fails until the inventory classifies it.
    assert unclassified_keys(WithSubagents()) == ["subagents"]


def test_the_inventory_names_the_seed_callers() -> None:
    names = {caller.name for caller in AUXILIARY_CALLERS}
    for needed in (
        "judge",
        "compaction summarizer",
        "ledger upkeep (memory writer)",
        "subagents and delegation",
        "title generator",
        "tool-output summarizer",
        "output schema and structured repair",
        "preparation and capture",
    ):
        assert needed in names


def test_an_unknown_arm_is_refused() -> None:
    with pytest.raises(ArmError) as err:
        resolve_pilot_settings("nativ-lookup", reader=READER, judge=None)
    assert err.value.code == "arm_unknown"
