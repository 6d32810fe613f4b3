"""A pilot's resolved settings, read from the configuration of the harness it runs.

The pilot's safety rules (`continuity.spend.safety.check_settings`,
`continuity.spend.contract.check_auxiliary_callers`) judge a `ResolvedSettings`. Here
that record is built from what would actually run, never from literals: the arm's
record and its resolved probe configuration (`continuity.arms.arm_config`: the harness
defaults, the arm's patches, then any extra patches, validated, so an unknown key is
``config_key_unknown``), the registered reader (applied as the ``models.reader`` patch),
the plan's judge and the guard contract's route (transport, retries, attempts).

**Auxiliary callers.** `AUXILIARY_CALLERS` lists every caller besides the reader that
the seed names, and how this harness configures each one:

- a switch of the resolved configuration or the arm (the judge, compaction, ledger
  upkeep, the continuity ledger as model-written memory, the preparation's capture, the
  mid-trace compaction, the tools), read from it; or
- *absent*: this harness has no such caller and no configuration key that could turn
  one on (subagents, a title generator, a tool-output summarizer, an output schema and
  its structured repair, runtime model switching, fallbacks and retry profiles,
  a prebuilt models override, a host override, native context replacement).

`CONFIG_CLASSES` classifies every leaf of `HarnessConfig` as a caller switch or as not
a caller; `unclassified_keys` lists any leaf it does not know, so a new configuration
key cannot slip past the inventory (`tests/lookup/test_pilot_settings.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from continuity.arms import ARMS, Arm, arm_config
from continuity.errors import ArmError
from continuity.harness.config import HarnessConfig
from continuity.spend.contract import GuardContract, callers_of, check_auxiliary_callers
from continuity.spend.safety import ResolvedSettings, settings_for

__all__ = [
    "AUXILIARY_CALLERS",
    "CONFIG_CLASSES",
    "DECORATOR",
    "AuxiliaryCaller",
    "Route",
    "entry_settings",
    "resolve_pilot_settings",
    "unclassified_keys",
]

DECORATOR = "continuity-guarded-dispatch-v1"  # the guard's branded dispatch


class AuxiliaryCaller(msgspec.Struct, frozen=True, kw_only=True):
    """One caller besides the reader: its name, where this harness configures it (or
    why it is absent), and the resolved-settings field it sets."""

    name: str
    source: str
    field: str | None  # the `ResolvedSettings` field it sets (None: it has none)
    present: bool


AUXILIARY_CALLERS: tuple[AuxiliaryCaller, ...] = (
    AuxiliaryCaller(name="judge", source="the plan's judge binding", field="judge", present=True),
    AuxiliaryCaller(
        name="compaction summarizer",
        source="the arm's boundary (compaction) and its mid-trace compaction",
        field="compaction",
        present=True,
    ),
    AuxiliaryCaller(
        name="mid-checkpoint compaction",
        source="Arm.mid_trace_compaction",
        field="mid_checkpoint",
        present=True,
    ),
    AuxiliaryCaller(
        name="ledger upkeep (memory writer)",
        source="runtime.session.continuity.upkeep_enabled",
        field="upkeep",
        present=True,
    ),
    AuxiliaryCaller(
        name="continuity ledger (model-written memory)",
        source="runtime.session.continuity.ledger_enabled",
        field="memory",
        present=True,
    ),
    AuxiliaryCaller(
        name="preparation and capture",
        source="Arm.ledger (three upkeep extractions prepare its checkpoint)",
        field="capture",
        present=True,
    ),
    AuxiliaryCaller(
        name="tools and MCP servers",
        source="tools.allowed_tools",
        field="tools",
        present=True,
    ),
    *(
        AuxiliaryCaller(
            name=name,
            source="absent: no such caller, no key turns one on",
            field=field,
            present=False,
        )
        for name, field in (
            ("subagents and delegation", "subagents"),
            ("title generator", None),
            ("tool-output summarizer", None),
            ("output schema and structured repair", "output_schema"),
            ("runtime model switching", "model_switch"),
            ("router fallbacks and retry profiles", "retry_profile"),
            ("prebuilt models override", "models_override"),
            ("host override", "host_override"),
            ("native context replacement", "native_context_override"),
        )
    ),
)

# Every leaf of HarnessConfig: a caller switch (read by `resolve_pilot_settings`) or not
# a caller at all (deterministic code: the retained store, the pack, the compaction
# policy's numbers, which only a compaction boundary uses).
CONFIG_CLASSES: Mapping[str, Literal["caller", "not a caller"]] = {
    "runtime.compaction.window": "not a caller",
    "runtime.compaction.ratio": "not a caller",
    "runtime.compaction.keep_recent_tokens": "not a caller",
    "runtime.compaction.cooldown_turns": "not a caller",
    "runtime.compaction.max_input_tokens": "not a caller",
    "runtime.session.continuity.enabled": "not a caller",
    "runtime.session.continuity.pack_enabled": "not a caller",
    "runtime.session.continuity.ledger_enabled": "caller",
    "runtime.session.continuity.upkeep_enabled": "caller",
    "tools.allowed_tools": "caller",
    "models.reader": "caller",
    "models.alternate": "not a caller",
}


class Route(msgspec.Struct, frozen=True, kw_only=True):
    """The guard contract's route, as the child resolves it."""

    transport: str = "sse"
    max_retries: int = 0
    attempts: int = 1
    fallbacks: tuple[str, ...] = ()

    @classmethod
    def of(cls, contract: GuardContract) -> Route:
        """The route a guard for `contract` sends by (one attempt per permit, no
        fallback: the guard has neither)."""
        return cls(transport=contract.transport, max_retries=contract.max_retries)


def _leaves(document: Mapping[str, Any], prefix: str = "") -> list[str]:
    found: list[str] = []
    for key, value in document.items():
        path = f"{prefix}{key}"
        found += _leaves(value, f"{path}.") if isinstance(value, Mapping) else [path]
    return found


def unclassified_keys(config: HarnessConfig | None = None) -> list[str]:
    """The leaves of the harness configuration `CONFIG_CLASSES` does not classify."""
    document = (config or HarnessConfig()).model_dump()
    return [leaf for leaf in _leaves(document) if leaf not in CONFIG_CLASSES]


def _arm(arm_id: str) -> Arm:
    arm = ARMS.get(arm_id)
    if arm is None:
        raise ArmError(f"unknown arm {arm_id!r}", code="arm_unknown", location="arm")
    return arm


def resolve_pilot_settings(
    arm_id: str,
    *,
    reader: str,
    judge: str | None,
    route: Route | None = None,
    patches: Sequence[Mapping[str, Any]] = (),
) -> ResolvedSettings:
    """The settings the pilot's harness would run with for `arm_id`, resolved from its
    configuration (the arm's patches, the registered `reader` as ``models.reader``,
    then `patches`) and the plan's `judge`.

    Raises:
        ArmError: ``arm_unknown``.
        ConfigError: ``config_key_unknown`` or ``config_value_invalid`` (a patch).
    """
    arm = _arm(arm_id)
    config = arm_config(arm, [{"models": {"reader": reader}}, *patches])
    continuity = config.runtime.session.continuity
    tools = tuple(config.tools.allowed_tools or ())
    route = route or Route()
    return ResolvedSettings(
        arm=arm.id,
        judge=judge,
        memory=continuity.ledger_enabled,
        subagents=False,
        upkeep=continuity.upkeep_enabled,
        # Every boundary but none and a model change runs the compaction summarizer.
        compaction=arm.boundary not in ("none", "model_change") or arm.mid_trace_compaction,
        output_schema=None,
        host_override=False,
        model_switch=False,
        model=config.models.reader.partition(":")[2] or config.models.reader,
        fallbacks=route.fallbacks,
        attempts=route.attempts,
        transport=route.transport,
        max_retries=route.max_retries,
        retry_profile=None,
        models_override=False,
        tools=tools,
        mcp_servers=tools,
        native_context_override=False,
        mid_checkpoint=arm.mid_trace_compaction,
        capture=arm.ledger,
        decorator=DECORATOR,
    )


def entry_settings(
    arms: Iterable[str],
    *,
    reader: str,
    judge: str | None,
    route: Route | None = None,
    patches: Sequence[Mapping[str, Any]] = (),
) -> tuple[ResolvedSettings, ...]:
    """The pilot entry's check: each distinct arm's resolved settings, checked with the
    safety rules and the auxiliary-caller check, for the controller to hand its
    children (`continuity.spend.schedule.PilotConfig.settings`).

    Raises:
        SpendError: `check_settings`'s codes, ``lookup_auxiliary_caller_on``.
        ArmError, ConfigError: `resolve_pilot_settings`'s.
    """
    resolved = tuple(
        resolve_pilot_settings(arm, reader=reader, judge=judge, route=route, patches=patches)
        for arm in sorted(set(arms))
    )
    model = reader.partition(":")[2] or reader
    for settings in resolved:
        settings_for(resolved, settings.arm, model, where="entry")
        check_auxiliary_callers(callers_of(settings), where="entry")
    return resolved
