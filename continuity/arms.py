"""The arms: which boundary a probe crosses, as data.

Each arm is a record: its boundary, which model the scripted history is bound to,
whether replay records retained evidence, the configuration patches for the probe turn
(applied over the harness defaults and validated, so an unknown key fails), the tools
the reader is offered, the evidence a sample must show, and the pressure threshold on
long traces. Planned-but-unavailable arms are declared with their intended evidence;
selecting one fails with ``arm_not_available_at_revision:<id>``.

Arms (a) to (f) pin retained conversation evidence off in replay and probe, so they stay
comparable with baselines recorded before the feature existed; (g) and (h) record
evidence but pin packs off; (i) turns packs on; (l) adds the continuity ledger, kept by
three model extractions before the probe (`continuity.preparation`) and injected beside
the pack, with upkeep explicitly off in the probe itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from continuity.errors import ArmError
from continuity.errors.hints import did_you_mean
from continuity.harness.config import SMALLEST_TRIGGER, HarnessConfig, resolve_config
from continuity.harness.keys import ReplayConfig

__all__ = [
    "ARMS",
    "LEDGER_ARM",
    "LOOKUP_ARMS",
    "LOOKUP_ONLY",
    "OPT_IN",
    "PROBE_MODES",
    "Arm",
    "Boundary",
    "Pressure",
    "ProbeMode",
    "arm_config",
    "arm_ids",
    "models_patch",
    "parse_arms",
    "probe_mode_named",
    "replay_config_for",
    "resolve_arms",
]

Boundary = Literal[
    "none",
    "model_change",
    "compaction",
    "compaction_mid_and_probe",
    "ceiling",
    "restart_switch_compact",
]


class Pressure(msgspec.Struct, frozen=True, kw_only=True):
    """The pressure a long-trace sample must show (the seed's threshold table)."""

    probe_input_tokens: int | None = None
    replayed_messages: int | None = None
    dropped_records: int | None = None
    compaction_tokens_before: int | None = None
    mid_tokens_before: int | None = None


class Arm(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    letter: str
    label: str
    boundary: Boundary
    history: Literal["reader", "alternate"]
    retained: bool = False
    pack: bool = False
    # The continuity ledger arm: its probes fork a checkpoint prepared by three upkeep
    # stages (continuity.preparation), and every reader request carries the ledger.
    ledger: bool = False
    mid_trace_compaction: bool = False
    history_tool: bool = False
    probe_patches: tuple[Mapping[str, Any], ...] = ()
    evidence: tuple[str, ...] = ()
    pressure: Pressure | None = None
    hard_only: bool = False
    available: bool = True
    aliases: tuple[str, ...] = ()


_OFF = {"runtime": {"session": {"continuity": {"enabled": False, "pack_enabled": False}}}}
_STORE_ONLY = {
    "runtime": {"session": {"continuity": {"enabled": True, "pack_enabled": False}}},
    "tools": {"allowed_tools": ["ConversationHistory"]},
}
_PACK = {
    "runtime": {"session": {"continuity": {"enabled": True, "pack_enabled": True}}},
    "tools": {"allowed_tools": ["ConversationHistory"]},
}
# Upkeep is off in the probe: the ledger was kept by the preparations, never by a probe.
_LEDGER = {
    "runtime": {
        "session": {
            "continuity": {
                "enabled": True,
                "pack_enabled": True,
                "ledger_enabled": True,
                "upkeep_enabled": False,
            }
        }
    },
    "tools": {"allowed_tools": ["ConversationHistory"]},
}
_SMALLEST = {"runtime": {"compaction": SMALLEST_TRIGGER}}
_NO_CEILING = {"runtime": {"compaction": {"max_input_tokens": 0}}}
_RESEED = Pressure(replayed_messages=64, dropped_records=32)

ARMS: Mapping[str, Arm] = {
    arm.id: arm
    for arm in (
        Arm(
            id="native",
            letter="a",
            label="Native resume",
            boundary="none",
            history="reader",
            probe_patches=(_OFF, _NO_CEILING),
            evidence=("no_boundary",),
            pressure=Pressure(probe_input_tokens=150_000),
        ),
        Arm(
            id="cold-rebuild",
            letter="b",
            label="Model-change reseed",
            boundary="model_change",
            history="alternate",
            probe_patches=(_OFF, _NO_CEILING),
            evidence=("model_change",),
            pressure=_RESEED,
        ),
        Arm(
            id="compaction-1",
            letter="c",
            label="One proactive compaction",
            boundary="compaction",
            history="reader",
            probe_patches=(_OFF, _SMALLEST),
            evidence=("compaction",),
            pressure=Pressure(compaction_tokens_before=150_000),
        ),
        Arm(
            id="compaction-2",
            letter="d",
            label="Manual mid-trace, then proactive",
            boundary="compaction_mid_and_probe",
            history="reader",
            mid_trace_compaction=True,
            probe_patches=(_OFF, _SMALLEST),
            evidence=("mid_compaction", "compaction"),
            pressure=Pressure(mid_tokens_before=80_000, compaction_tokens_before=40_000),
        ),
        Arm(
            id="ceiling",
            letter="e",
            label="Default 200k ceiling",
            boundary="ceiling",
            history="reader",
            probe_patches=(_OFF,),
            evidence=("compaction",),
            pressure=Pressure(compaction_tokens_before=200_000),
            hard_only=True,
        ),
        Arm(
            id="restart-switch-compact",
            letter="f",
            label="Restart, reseed, compact",
            boundary="restart_switch_compact",
            history="alternate",
            probe_patches=(_OFF, _SMALLEST),
            evidence=("restart", "model_change", "compaction"),
            pressure=_RESEED,
        ),
        Arm(
            id="continuity-store",
            letter="g",
            label="Retained store, reseed",
            boundary="model_change",
            history="alternate",
            retained=True,
            history_tool=True,
            probe_patches=(_STORE_ONLY, _NO_CEILING),
            evidence=("model_change", "store", "history_tool"),
            pressure=_RESEED,
        ),
        Arm(
            id="continuity-store-compaction",
            letter="h",
            label="Retained store, compaction",
            boundary="compaction",
            history="reader",
            retained=True,
            history_tool=True,
            probe_patches=(_STORE_ONLY, _SMALLEST),
            evidence=("compaction", "store", "history_tool"),
            pressure=Pressure(compaction_tokens_before=150_000),
        ),
        Arm(
            id="continuity-pack-cold",
            letter="i",
            label="Deterministic pack, reseed",
            boundary="model_change",
            history="alternate",
            retained=True,
            pack=True,
            history_tool=True,
            probe_patches=(_PACK, _NO_CEILING),
            evidence=("model_change", "store", "history_tool", "pack"),
            pressure=_RESEED,
            aliases=("continuity-pack-boundary",),
        ),
        Arm(
            id="continuity-ledger-cold",
            letter="l",
            label="Extracted ledger and pack, reseed",
            boundary="model_change",
            history="reader",
            retained=True,
            pack=True,
            ledger=True,
            history_tool=True,
            probe_patches=(_LEDGER, _NO_CEILING),
            evidence=("model_change", "store", "history_tool", "pack", "ledger", "preparations"),
            pressure=_RESEED,
        ),
        Arm(
            id="native-lookup",
            letter="n",
            label="Native session, metered ConversationHistory (lookup mode only)",
            boundary="none",
            history="reader",
            retained=True,
            history_tool=True,
            probe_patches=(_STORE_ONLY, _NO_CEILING),
            evidence=("no_boundary", "store", "history_tool", "no_pack"),
        ),
        Arm(
            id="continuity-pack-per-turn",
            letter="j",
            label="Per-turn pack maintenance",
            boundary="model_change",
            history="alternate",
            retained=True,
            pack=True,
            history_tool=True,
            probe_patches=(_PACK,),
            evidence=("model_change", "store", "pack", "per_turn_upkeep"),
            available=False,
        ),
        Arm(
            id="pack+stubs",
            letter="k",
            label="Pack with tool-result stubs",
            boundary="model_change",
            history="alternate",
            retained=True,
            pack=True,
            history_tool=True,
            probe_patches=(_PACK,),
            evidence=("model_change", "store", "pack", "tool_result_clearing"),
            available=False,
        ),
    )
}
LEDGER_ARM = "continuity-ledger-cold"
# Arms that run only when named (``--arms continuity-ledger-cold`` or ``--arms
# all,continuity-ledger-cold``): the ledger arm pays for three extractions per trace and
# repeat, so the default selection (and every plan digest confirmed before it existed)
# stays the nine arms that buy no upkeep.
OPT_IN = frozenset({LEDGER_ARM})
_ALIASES = {alias: arm.id for arm in ARMS.values() for alias in arm.aliases}
# The probe mode, one typed value: recall-only (the reader answers from what it kept) or
# lookup-allowed-v1 (it may look records up, under a frozen policy). `probe_mode_named`
# reads the option's text once.
ProbeMode = Literal["recall-only", "lookup-allowed-v1"]
PROBE_MODES: tuple[ProbeMode, ...] = ("recall-only", "lookup-allowed-v1")
# Lookup mode admits exactly these arms; native-lookup exists only in lookup mode (kept
# out of the Arm record so recall-only arm keys stay as they were).
LOOKUP_ARMS = ("native-lookup", "continuity-pack-cold")
LOOKUP_ONLY = frozenset({"native-lookup"})


def arm_ids(
    *, available_only: bool = True, probe_mode: str = "recall-only", opt_in: bool = False
) -> list[str]:
    """The probe mode's default arms (``all``); `opt_in` adds the arms that run only when
    named."""
    if probe_mode == "lookup-allowed-v1":
        return list(LOOKUP_ARMS)
    return [
        a.id
        for a in ARMS.values()
        if (a.available or not available_only)
        and a.id not in LOOKUP_ONLY
        and (opt_in or a.id not in OPT_IN)
    ]


def resolve_arms(
    ids: Iterable[str], *, family: str | None = None, probe_mode: str = "recall-only"
) -> list[Arm]:
    """The arms named by `ids` (aliases accepted), in registry order.

    Raises:
        ArmError: ``arm_unknown`` for a name that is no arm,
            ``arm_not_available_at_revision:<id>`` for a declared arm that is not
            runnable at this revision, ``arm_lookup_only:<id>`` for a lookup arm in a
            recall-only plan and ``arm_not_admitted_in_lookup:<id>`` for any arm but
            native-lookup and continuity-pack-cold in a lookup plan.
    """
    chosen: set[str] = set()
    for raw in ids:
        name = _ALIASES.get(raw.strip(), raw.strip())
        arm = ARMS.get(name)
        if arm is None:
            known = arm_ids(opt_in=True)
            hint = did_you_mean(raw.strip(), [*known, *_ALIASES])
            raise ArmError(f"no arm {raw!r}; {hint}arms: {', '.join(known)}", location="--arms")
        if not arm.available:
            raise ArmError(
                f"arm {arm.id} is declared but not runnable at this revision",
                code=f"arm_not_available_at_revision:{arm.id}",
                location="--arms",
            )
        if probe_mode == "lookup-allowed-v1" and arm.id not in LOOKUP_ARMS:
            raise ArmError(
                f"lookup-allowed-v1 admits only {', '.join(LOOKUP_ARMS)}",
                code=f"arm_not_admitted_in_lookup:{arm.id}",
                location="--arms",
            )
        if probe_mode != "lookup-allowed-v1" and arm.id in LOOKUP_ONLY:
            raise ArmError(
                f"arm {arm.id} runs only with --probe-mode lookup-allowed-v1",
                code=f"arm_lookup_only:{arm.id}",
                location="--arms",
            )
        chosen.add(arm.id)
    arms = [a for a in ARMS.values() if a.id in chosen]
    if family is not None and family in ("original", "smoke"):
        arms = [a for a in arms if not a.hard_only]
    return arms


def probe_mode_named(text: str | None) -> ProbeMode:
    """The probe mode `text` names (empty or None: recall-only).

    Raises:
        ArmError: ``probe_mode_unknown``.
    """
    name = text or "recall-only"
    for mode in PROBE_MODES:
        if name == mode:
            return mode
    raise ArmError(
        f"unknown probe mode {name!r}; use {' or '.join(PROBE_MODES)}",
        code="probe_mode_unknown",
        location="--probe-mode",
    )


def parse_arms(
    text: str | None, *, family: str | None = None, probe_mode: str = "recall-only"
) -> list[Arm]:
    """``"native,cold-rebuild"``, ``"all"`` (None means all available arms of the probe
    mode, opt-in arms aside), or ``all`` among names (``"all,continuity-ledger-cold"``:
    the default arms and the opt-in one)."""
    probe_mode = probe_mode_named(probe_mode)
    if not text or text.strip() == "all":
        return resolve_arms(arm_ids(probe_mode=probe_mode), family=family, probe_mode=probe_mode)
    names: list[str] = []
    for name in text.split(","):
        names += arm_ids(probe_mode=probe_mode) if name.strip() == "all" else [name]
    return resolve_arms(names, family=family, probe_mode=probe_mode)


def arm_config(arm: Arm, extra: Sequence[Mapping[str, Any]] = ()) -> HarnessConfig:
    """The probe-turn configuration of `arm` (defaults, then its patches, then `extra`)."""
    return resolve_config([*arm.probe_patches, *extra], where=f"arm {arm.id}")


def models_patch(models: tuple[str, str] | None) -> list[Mapping[str, Any]]:
    """The config patch that sets (reader, alternate) models (none for ``None``)."""
    if models is None:
        return []
    return [{"models": {"reader": models[0], "alternate": models[1]}}]


def replay_config_for(
    arm: Arm, probe_mode: str = "recall-only", models: tuple[str, str] | None = None
) -> ReplayConfig:
    """The replay (checkpoint) configuration an arm's probes fork from. Lookup mode's
    checkpoints are namespaced, so they never reuse recall-only ones; `models` (a lookup
    reader binding's reader and alternate) replaces the configured pair."""
    config = arm_config(arm, models_patch(models))
    model = config.models.alternate if arm.history == "alternate" else config.models.reader
    provider, _, name = model.partition(":")
    # The replay records retained evidence exactly when the arm's configuration pins
    # continuity on (the seed pins it off for arms a-f in replay and probe configs).
    return ReplayConfig(
        history_provider=provider,
        history_model=name,
        retained_records=config.runtime.session.continuity.enabled,
        mid_trace_compaction=arm.mid_trace_compaction,
        namespace="" if probe_mode == "recall-only" else probe_mode,
    )
