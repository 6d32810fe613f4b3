"""Harness configuration: patches, validation, unknown keys."""

from __future__ import annotations

import pytest

from continuity.errors import ConfigError
from continuity.harness.config import merge_patches, resolve_config


def test_defaults_and_patches() -> None:
    config = resolve_config()
    assert config.runtime.compaction.trigger_tokens == 244_800
    assert config.runtime.compaction.max_input_tokens == 200_000
    assert config.runtime.session.continuity.enabled is True
    patched = resolve_config(
        [
            {"runtime": {"compaction": {"max_input_tokens": 0}}},
            {"tools": {"allowed_tools": ["ConversationHistory"]}},
        ]
    )
    assert patched.runtime.compaction.max_input_tokens == 0
    assert patched.runtime.compaction.window == 272_000
    assert patched.tools.allowed_tools == ("ConversationHistory",)
    assert merge_patches({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}


def test_an_unknown_key_fails_with_its_path() -> None:
    with pytest.raises(ConfigError) as err:
        resolve_config(
            [{"runtime": {"session": {"continuity": {"packEnabled": True}}}}], where="arm x"
        )
    assert err.value.code == "config_key_unknown"
    assert err.value.location == "arm x:runtime.session.continuity.packEnabled"


@pytest.mark.parametrize(
    "patch",
    [
        {"window": 31_999},
        {"ratio": 0.19},
        {"keep_recent_tokens": 3_999},
        {"cooldown_turns": -1},
        {"max_input_tokens": -5},
        {"ratio": "high"},
    ],
)
def test_below_the_smallest_trigger_is_refused(patch: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_config([{"runtime": {"compaction": patch}}])
    assert err.value.code == "config_value_invalid"
    assert err.value.location.startswith("config:runtime.compaction.")
