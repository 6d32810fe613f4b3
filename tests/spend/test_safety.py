"""Pilot harness safety: cache-key allocation and assignment, every fixed refusal code of
the resolved settings, and which child codes let the pilot continue."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from continuity.errors import SpendError
from continuity.spend.safety import (
    CONTINUABLE,
    CONTROLLER_CODES,
    FIXED_CODES,
    MAX_CACHE_KEY,
    ResolvedSettings,
    allocate_cache_keys,
    check_assignment,
    check_settings,
    child_terminal,
)

SOL = "openai-codex:gpt-6.1-sol"
SAFE = ResolvedSettings(
    arm="native-lookup",
    judge=None,
    memory=False,
    subagents=False,
    upkeep=False,
    compaction=False,
    output_schema=None,
    host_override=False,
    model_switch=False,
    model=SOL,
    fallbacks=(),
    attempts=1,
    transport="sse",
    max_retries=0,
    retry_profile=None,
    models_override=False,
    tools=("ConversationHistory",),
    mcp_servers=("ConversationHistory",),
    native_context_override=False,
    mid_checkpoint=False,
    capture=False,
    decorator="continuity-guard-decorator-v1",
)


def test_every_slot_gets_a_unique_key_with_the_run_id() -> None:
    keys = allocate_cache_keys("run-7f3a", [f"slot-{n}" for n in range(300)])
    assert len(set(keys.values())) == 300
    assert all("run-7f3a" in k and len(k) <= MAX_CACHE_KEY and k.isascii() for k in keys.values())
    for slot, key in keys.items():
        check_assignment(key, slot, keys)


@pytest.mark.parametrize(
    ("run_id", "slots"),
    [
        ("r" * 60, ["a", "b"]),  # would need more than 64 characters: never truncated
        ("run with spaces", ["a"]),
        ("rün", ["a"]),
        ("run-1", ["a", "a"]),
    ],
)
def test_an_allocation_that_cannot_be_made_is_refused(run_id: str, slots: list[str]) -> None:
    with pytest.raises(SpendError) as caught:
        allocate_cache_keys(run_id, slots)
    assert caught.value.code == "lookup_cache_assignment_invalid"


@pytest.mark.parametrize(
    ("key", "slot", "assigned"),
    [
        ("cl-run-1-0", "slot-b", {"slot-a": "cl-run-1-0", "slot-b": "cl-run-1-1"}),  # foreign
        ("cl-run-1-0", "slot-a", {"slot-a": "cl-run-1-0", "slot-b": "cl-run-1-0"}),  # duplicate
        ("cl-run-1-9", "slot-a", {"slot-a": "cl-run-1-0"}),  # not assigned
        ("cl run", "slot-a", {"slot-a": "cl run"}),  # not plain ASCII
        ("k" * 65, "slot-a", {"slot-a": "k" * 65}),  # too long
    ],
)
def test_a_child_refuses_a_key_that_is_not_its_own(
    key: str, slot: str, assigned: dict[str, str]
) -> None:
    with pytest.raises(SpendError) as caught:
        check_assignment(key, slot, assigned)
    assert caught.value.code == "lookup_cache_assignment_invalid"


def test_safe_settings_pass_everywhere() -> None:
    for where in ("construction", "dispatch", "request"):
        check_settings(SAFE, SOL, where=where)
    check_settings(msgspec.structs.replace(SAFE, arm="continuity-pack-cold"), SOL, where="request")


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"decorator": None}, "lookup_unguarded_dispatch"),
        ({"judge": "openai-codex:gpt-6-luna"}, "lookup_auxiliary_callers_forbidden"),
        ({"memory": True}, "lookup_auxiliary_callers_forbidden"),
        ({"subagents": None}, "lookup_auxiliary_callers_forbidden"),
        ({"upkeep": True}, "lookup_auxiliary_callers_forbidden"),
        ({"compaction": True}, "lookup_auxiliary_callers_forbidden"),
        ({"host_override": True}, "lookup_auxiliary_callers_forbidden"),
        ({"output_schema": {"type": "object"}}, "lookup_auxiliary_callers_forbidden"),
        ({"model_switch": True}, "lookup_model_switch_forbidden"),
        ({"model_switch": None}, "lookup_model_switch_forbidden"),
        ({"arm": "restart"}, "lookup_pilot_boundary_required"),
        ({"arm": "continuity-ledger-cold"}, "lookup_pilot_boundary_required"),
        ({"mid_checkpoint": True}, "lookup_preparation_forbidden"),
        ({"capture": True}, "lookup_preparation_forbidden"),
        ({"model": "openai-codex:gpt-6-luna"}, "lookup_route_mismatch"),
        ({"fallbacks": ("openai-codex:gpt-6-luna",)}, "lookup_route_mismatch"),
        ({"attempts": 2}, "lookup_route_mismatch"),
        ({"transport": "websocket"}, "lookup_route_mismatch"),
        ({"max_retries": 3}, "lookup_route_mismatch"),
        ({"retry_profile": "outage"}, "lookup_retry_profile_forbidden"),
        ({"models_override": True}, "lookup_retry_profile_forbidden"),
        ({"tools": ("ConversationHistory", "shell")}, "lookup_tools_forbidden"),
        ({"tools": ()}, "lookup_tools_forbidden"),
        ({"mcp_servers": ("ConversationHistory", "web")}, "lookup_tools_forbidden"),
        ({"native_context_override": True}, "lookup_native_identity_forbidden"),
    ],
)
def test_each_unsafe_setting_has_its_fixed_code(change: dict[str, Any], code: str) -> None:
    assert code in FIXED_CODES
    with pytest.raises(SpendError) as caught:
        check_settings(msgspec.structs.replace(SAFE, **change), SOL, where="dispatch")
    assert caught.value.code == code
    assert caught.value.location.startswith("dispatch.")


@pytest.mark.parametrize("code", sorted(CONTINUABLE))
def test_continuable_codes_let_the_pilot_go_on(code: str) -> None:
    assert child_terminal(code, admitted=False) == ("unadmitted", True)
    assert child_terminal(code, admitted=True) == ("incomplete", True)


@pytest.mark.parametrize("code", ["lookup_payload_invalid", "lookup_tools_forbidden"])
def test_a_policy_violation_is_a_sticky_stop(code: str) -> None:
    assert child_terminal(code, admitted=True) == ("integrity_stop", False)
    assert child_terminal(code, admitted=False) == ("unadmitted", False)


@pytest.mark.parametrize("code", sorted(CONTROLLER_CODES))
def test_a_child_cannot_set_a_controller_code(code: str) -> None:
    with pytest.raises(SpendError) as caught:
        child_terminal(code, admitted=True)
    assert caught.value.code == "lookup_child_code_forbidden"
