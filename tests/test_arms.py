"""The arms registry: data, patches, availability."""

from __future__ import annotations

import pytest

from continuity.arms import ARMS, arm_config, arm_ids, parse_arms, replay_config_for
from continuity.errors import ArmError, ConfigError


def test_the_nine_runnable_arms() -> None:
    assert arm_ids() == [
        "native",
        "cold-rebuild",
        "compaction-1",
        "compaction-2",
        "ceiling",
        "restart-switch-compact",
        "continuity-store",
        "continuity-store-compaction",
        "continuity-pack-cold",
    ]
    assert [a.letter for a in parse_arms("all")] == list("abcdefghi")
    assert [a.id for a in parse_arms("all", family="original")] == [
        a for a in arm_ids() if a != "ceiling"
    ]  # ceiling needs a long trace
    assert [a.id for a in parse_arms("continuity-pack-boundary")] == ["continuity-pack-cold"]


_ENABLED = {"runtime": {"session": {"continuity": {"enabled": True}}}}


def test_continuity_pins_match_the_seed() -> None:
    for arm_id in arm_ids()[:6]:
        continuity = arm_config(ARMS[arm_id]).runtime.session.continuity
        assert (continuity.enabled, continuity.pack_enabled) == (False, False), arm_id
        assert not replay_config_for(ARMS[arm_id]).retained_records
    for arm_id in ("continuity-store", "continuity-store-compaction"):
        config = arm_config(ARMS[arm_id])
        assert config.runtime.session.continuity.enabled
        assert not config.runtime.session.continuity.pack_enabled
        assert config.tools.allowed_tools == ("ConversationHistory",)
        assert replay_config_for(ARMS[arm_id]).retained_records
    pack = arm_config(ARMS["continuity-pack-cold"])
    assert pack.runtime.session.continuity.pack_enabled
    assert pack.tools.allowed_tools == ("ConversationHistory",)
    # The replay reads the pin from the configuration, and it agrees with the arm record.
    for arm in ARMS.values():
        pinned = arm_config(arm).runtime.session.continuity.enabled
        assert replay_config_for(arm).retained_records == pinned == arm.retained, arm.id


def test_the_continuity_pin_drives_what_the_replay_records() -> None:
    import msgspec

    arm = ARMS["native"]
    flipped = msgspec.structs.replace(arm, probe_patches=(*arm.probe_patches, _ENABLED))
    assert not replay_config_for(arm).retained_records
    assert replay_config_for(flipped).retained_records


def test_policies_and_bindings() -> None:
    assert arm_config(ARMS["native"]).runtime.compaction.max_input_tokens == 0
    assert arm_config(ARMS["ceiling"]).runtime.compaction.max_input_tokens == 200_000
    for arm_id in (
        "compaction-1",
        "compaction-2",
        "restart-switch-compact",
        "continuity-store-compaction",
    ):
        assert arm_config(ARMS[arm_id]).runtime.compaction.trigger_tokens == 6_400
    assert replay_config_for(ARMS["cold-rebuild"]).history_model == "gpt-6.1-sol"
    assert replay_config_for(ARMS["native"]).history_model == "gpt-6-luna"
    assert replay_config_for(ARMS["compaction-2"]).mid_trace_compaction


@pytest.mark.parametrize("arm_id", ["continuity-pack-per-turn", "pack+stubs"])
def test_declared_but_unavailable_arms_fail_with_their_code(arm_id: str) -> None:
    with pytest.raises(ArmError) as err:
        parse_arms(f"native,{arm_id}")
    assert err.value.code == f"arm_not_available_at_revision:{arm_id}"
    assert ARMS[arm_id].evidence  # declared with intended evidence


def test_an_unknown_arm_and_an_unknown_config_key() -> None:
    with pytest.raises(ArmError) as err:
        parse_arms("native,telepathy")
    assert err.value.code == "arm_unknown"
    with pytest.raises(ConfigError) as config_err:
        arm_config(ARMS["native"], [{"runtime": {"compaction": {"trigger": 5}}}])
    assert config_err.value.code == "config_key_unknown"
    assert config_err.value.location == "arm native:runtime.compaction.trigger"
