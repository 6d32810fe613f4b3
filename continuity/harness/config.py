"""The harness configuration an arm patches: validated, with unknown keys refused.

Arms are data: each is a list of patches over these defaults (see `continuity.arms`).
A patch that names a key the configuration does not have fails with
``config_key_unknown`` and its dotted path, as production config resolution does; a
value outside its allowed range fails with ``config_value_invalid``.

The smallest compaction trigger the product allows is window 32,000, ratio 0.2,
keep-recent 4,000, cooldown 0. The default policy compacts at 90 % of the reader's
272,000-token window (244.8k) and enforces a 200,000-token ``max_input_tokens``
ceiling; ``max_input_tokens: 0`` disables the ceiling.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from continuity.errors import ConfigError

__all__ = [
    "SMALLEST_TRIGGER",
    "CompactionPolicy",
    "ContinuityConfig",
    "HarnessConfig",
    "ModelsConfig",
    "RuntimeConfig",
    "SessionConfig",
    "ToolsConfig",
    "merge_patches",
    "resolve_config",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompactionPolicy(_Model):
    window: Annotated[int, Field(ge=32_000)] = 272_000
    ratio: Annotated[float, Field(ge=0.2, le=1.0)] = 0.9
    keep_recent_tokens: Annotated[int, Field(ge=4_000)] = 20_000
    cooldown_turns: Annotated[int, Field(ge=0)] = 0
    max_input_tokens: Annotated[int, Field(ge=0)] = 200_000

    @property
    def trigger_tokens(self) -> int:
        return int(self.window * self.ratio)


SMALLEST_TRIGGER: dict[str, Any] = {
    "window": 32_000,
    "ratio": 0.2,
    "keep_recent_tokens": 4_000,
    "cooldown_turns": 0,
}


class ContinuityConfig(_Model):
    enabled: bool = True
    pack_enabled: bool = False
    # The continuity ledger: injected into the reader's request when enabled; kept by
    # upkeep (model extraction at a boundary) only where upkeep is enabled too.
    ledger_enabled: bool = False
    upkeep_enabled: bool = False


class SessionConfig(_Model):
    continuity: ContinuityConfig = ContinuityConfig()


class RuntimeConfig(_Model):
    compaction: CompactionPolicy = CompactionPolicy()
    session: SessionConfig = SessionConfig()


class ToolsConfig(_Model):
    allowed_tools: tuple[str, ...] | None = None


class ModelsConfig(_Model):
    reader: str = "openai-codex:gpt-6-luna"
    alternate: str = "openai-codex:gpt-6.1-sol"


class HarnessConfig(_Model):
    runtime: RuntimeConfig = RuntimeConfig()
    tools: ToolsConfig = ToolsConfig()
    models: ModelsConfig = ModelsConfig()


def merge_patches(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge `patch` over `base` (mappings merge, everything else replaces)."""
    merged = dict(base)
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_patches(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_config(
    patches: Iterable[Mapping[str, Any]] = (), *, where: str = "config"
) -> HarnessConfig:
    """Apply `patches` over the defaults and validate.

    Raises:
        ConfigError: ``config_key_unknown`` or ``config_value_invalid`` with the dotted
            path of the first offending key.
    """
    document: dict[str, Any] = HarnessConfig().model_dump()
    for patch in patches:
        document = merge_patches(document, patch)
    try:
        return HarnessConfig.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        path = ".".join(str(p) for p in error["loc"])
        code = (
            "config_key_unknown" if error["type"] == "extra_forbidden" else ("config_value_invalid")
        )
        raise ConfigError(error["msg"], code=code, location=f"{where}:{path}") from None
