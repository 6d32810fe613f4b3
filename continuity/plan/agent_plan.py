"""The outside-agent part of a plan (``--agent agent.toml``, CAP/0).

A plan that names an agent binds its identity (`continuity.agents.identity.AgentIdentity`:
the manifest's digest, the digest of the agent's files and of its allowlisted
variables' values), so the plan digest a real run confirms, and every unit key, change
when the agent does. Its arms are the outside arms (``native``, ``restart``,
``new_session`` by default or with ``all``; ``compact``, ``switch``,
``continuity-store`` and ``continuity-pack-cold`` when named),
planned as their unit ids (``agent-native``, ...).

What v1 does not do with an outside agent is refused at plan time, never dropped
silently: the lookup probe mode and the ledger options (``plan_invalid``), a judge
(``plan_invalid``: the agent's answers are graded by the deterministic scorer only), a
real plan with the ``switch`` arm that names no ``--switch-model`` (``plan_invalid``), and
an arm needing a capability the manifest's declared ``capabilities`` lack
(``adapter_capability_missing:<cap>``; ``compact`` and ``switch`` need the manifest to
declare ``compaction`` or ``model_switch``: an agent declaring none is refused here).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.agents.client import require_capabilities
from continuity.agents.identity import (
    DEFAULT_ARMS,
    AgentIdentity,
    identity,
    outside_arm,
    unit_arm,
)
from continuity.agents.manifest import Manifest, load_manifest
from continuity.agents.protocol import Capabilities
from continuity.agents.sandbox import require_sandbox
from continuity.arms import probe_mode_named
from continuity.errors import UsageError
from continuity.plan.models import check_model

if TYPE_CHECKING:
    from continuity.plan.request import PlanRequest

__all__ = ["agent_arms", "agent_for_request", "agent_identity", "switch_model"]

# Plan options an outside agent's plan refuses, and why.
_REFUSED = {
    "judge": "the judge does not grade outside agents' answers in v0 (the scorer does)",
    "extraction_model": "the ledger arm is a reference arm; outside agents have none",
    "require_request_cap": "the ledger arm is a reference arm; outside agents have none",
    "lookup_reader": "lookup-allowed-v1 is the reference reader's probe mode",
}


def agent_for_request(request: PlanRequest) -> tuple[Manifest, AgentIdentity] | None:
    """The manifest ``--agent`` names and the identity the plan binds (None without one).

    Raises:
        AdapterError: ``agent_manifest_invalid``; ``sandbox_unavailable`` (no sandbox
            here, and no ``--no-sandbox``).
        UsageError: ``plan_invalid`` for an option an outside agent's plan refuses.
    """
    path = request.agent
    if not path:
        return None
    for name, why in _REFUSED.items():
        if getattr(request, name) not in ("", False, "none"):
            raise UsageError(
                f"--{name.replace('_', '-')} with --agent: {why}",
                code="plan_invalid",
                location=f"--{name.replace('_', '-')}",
            )
    if probe_mode_named(request.probe_mode) != "recall-only":
        raise UsageError(
            "--agent asks the probe as the agent's next owner turn: recall-only only",
            code="plan_invalid",
            location="--probe-mode",
        )
    arms = [outside_arm(a) for a in agent_arms(request.arms or None)]
    manifest = load_manifest(Path(path))
    if manifest.capabilities is not None:  # refused before anything runs
        declared = msgspec.convert(manifest.capabilities.model_dump(), Capabilities)
        require_capabilities(declared, arms)
    else:  # the v1 boundaries need a declaration; v0's are checked at initialize
        require_capabilities(Capabilities(), [a for a in arms if a not in DEFAULT_ARMS])
    sandboxed = not request.no_sandbox
    if sandboxed:  # probed at plan time: never a silent fallback
        require_sandbox("--agent")
    return manifest, identity(manifest, sandboxed=sandboxed)


def switch_model(request: PlanRequest) -> str | None:
    """The model a real plan's ``switch`` arm switches to (``--switch-model``; None for
    every other plan). Offline the scripted reader answers after a switch, as it answers
    every probe; a real plan names the second model, so it is bound, priced and keyed.

    Raises:
        UsageError: ``plan_invalid`` at ``--switch-model``: given without ``--agent``,
            offline, without the switch arm, or not ``provider:model``; missing from a
            real plan with the switch arm.
    """
    named = request.switch_model
    real = request.provider not in ("", "scripted")
    switching = bool(request.agent) and "switch" in [
        outside_arm(a) for a in agent_arms(request.arms or None)
    ]
    refusals = [
        (named and not request.agent, "names the model an outside agent switches to: add --agent"),
        (named and not real, "is a real plan's: offline the scripted reader answers after it"),
        (named and not switching, "needs the switch arm in --arms"),
        (
            real and switching and not named,
            "is needed by a real plan with the switch arm: name the model the agent switches "
            "to (the plan's reader, to measure the agent's context rebuild alone)",
        ),
    ]
    why = next((why for refused, why in refusals if refused), None)
    if why is not None:
        raise UsageError(f"--switch-model {why}", code="plan_invalid", location="--switch-model")
    check_model("--switch-model", named or None)
    return named or None


def agent_identity(request: PlanRequest) -> AgentIdentity | None:
    """The identity a plan binds for ``--agent`` (None without one)."""
    loaded = agent_for_request(request)
    return loaded[1] if loaded is not None else None


def agent_arms(arms: str | None) -> list[str]:
    """The unit arm ids of ``--arms`` for an outside agent (default and ``all``: v0's
    three, ``native``, ``restart`` and ``new_session``; ``compact`` and ``switch`` run
    only when named).

    Raises:
        ArmError: ``arm_unknown``.
    """
    chosen = [a.strip() for a in (arms or "all").split(",") if a.strip()]
    names = list(DEFAULT_ARMS) if chosen in (["all"], []) else [outside_arm(a) for a in chosen]
    return [unit_arm(a) for a in dict.fromkeys(names)]
