"""Configured pilot harness safety: transport cache keys, the resolved settings a pilot
may run with, and which refusal codes let it continue.

**Cache keys.** `allocate_cache_keys` gives every slot of a run a unique ASCII transport
cache key that contains the run id and is at most 64 characters; a key that would be
longer is refused, never truncated. `check_assignment` is the child's check before it
builds its guard contract: the key must be the one assigned to its slot, and unique.

**Resolved settings** (`ResolvedSettings`) are checked before construction, at dispatch
and on every guarded request (`check_settings`): the judge is none; memory, subagents,
upkeep, compaction and output schemas are off; no model switch, fallback, extra attempt,
retry budget or profile, or prebuilt models override; SSE with zero retries; the tools are
exactly the registered ConversationHistory forwarding; no native context override; the
arm is one a prepared boundary serves; and a guard decorator dispatches.

**Terminal codes.** A guard's pre-send refusal reaches the controller as a fixed code in
the child's terminal message. Only `CONTINUABLE` codes let the pilot go on; every other
policy violation is a sticky stop. Controller codes (`CONTROLLER_CODES`) are never
settable by a child (`child_terminal`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from continuity.errors import SpendError

__all__ = [
    "BOUNDARY_ARMS",
    "CONTINUABLE",
    "CONTROLLER_CODES",
    "FIXED_CODES",
    "HISTORY_TOOL",
    "MAX_CACHE_KEY",
    "ResolvedSettings",
    "allocate_cache_keys",
    "check_assignment",
    "check_settings",
    "child_terminal",
    "settings_for",
]

MAX_CACHE_KEY = 64
HISTORY_TOOL = "ConversationHistory"
# The arms a one-use prepared-boundary proof serves; restart and the rest refuse.
BOUNDARY_ARMS = frozenset({"native-lookup", "continuity-pack-cold"})
_KEY = re.compile(r"[A-Za-z0-9._:-]+")

FIXED_CODES = {
    "lookup_cache_assignment_invalid": "invalid, duplicate or foreign assigned key",
    "lookup_prompt_cache_key_forbidden": "payload or either cache header missing or not the key",
    "lookup_auxiliary_callers_forbidden": "judge, memory, subagents, upkeep, compaction, "
    "output schema or host override is unsafe",
    "lookup_model_switch_forbidden": "resolved model switching is enabled",
    "lookup_preparation_forbidden": "arm, preparation, compaction or capture would enter an "
    "auxiliary caller",
    "lookup_route_mismatch": "model, fallback, attempt, transport or retry settings differ "
    "from the contract",
    "lookup_retry_profile_forbidden": "an outage budget or profile, or a prebuilt models "
    "override, is present",
    "lookup_tools_forbidden": "tools or MCP configuration differ from the registered history "
    "boundary",
    "lookup_method_forbidden": "a method that is not allowlisted",
    "lookup_native_identity_forbidden": "the route would overwrite native context or other "
    "protected options",
    "lookup_unguarded_dispatch": "the route lacks a guard decorator",
    "lookup_arrival_persist_failed": "the child could not persist its arrival witness",
    "lookup_arrival_receipt_invalid": "the child's arrival receipt is invalid",
    "lookup_pilot_boundary_required": "the arm needs a boundary no prepared proof serves",
}
CONTINUABLE = frozenset(
    {
        "not_admitted_input_envelope",
        "lookup_request_limit",
        "not_admitted_cap",
        "lookup_stopped",
        "lookup_slot_terminal",
    }
)
CONTROLLER_CODES = frozenset(
    {
        "lookup_worker_lost",
        "lookup_containment_unreconciled",
        "lookup_journal_failed",
        "lookup_receipt_persist_failed",
        "lookup_ipc_timeout",
        "lookup_ipc_disconnected",
        "lookup_repeated_loss",
        "lookup_invalid_slots",
    }
)


def allocate_cache_keys(run_id: str, slots: Sequence[str]) -> dict[str, str]:
    """A unique transport cache key for each slot, in `slots` order.

    Raises:
        SpendError: ``lookup_cache_assignment_invalid`` (a duplicate slot, a run id that
            is not plain ASCII, or a key that would exceed 64 characters).
    """
    if not _KEY.fullmatch(run_id):
        raise SpendError(
            "the run id is not plain ASCII",
            code="lookup_cache_assignment_invalid",
            location="run_id",
            outcome="refused_pre_send",
        )
    if len(set(slots)) != len(slots):
        raise SpendError(
            "a slot is listed twice",
            code="lookup_cache_assignment_invalid",
            location="slots",
            outcome="refused_pre_send",
        )
    keys = {slot: f"cl-{run_id}-{index}" for index, slot in enumerate(slots)}
    longest = max(keys.values(), key=len, default="")
    if len(longest) > MAX_CACHE_KEY:
        raise SpendError(
            f"a key would be {len(longest)} characters (at most {MAX_CACHE_KEY}, never truncated)",
            code="lookup_cache_assignment_invalid",
            location="run_id",
            outcome="refused_pre_send",
        )
    return keys


def check_assignment(key: str, slot: str, assigned: Mapping[str, str]) -> None:
    """The child's check of its key: assigned to its slot, ASCII, at most 64 characters,
    and unique in the run.

    Raises:
        SpendError: ``lookup_cache_assignment_invalid``.
    """
    values = list(assigned.values())
    if (
        assigned.get(slot) != key
        or not _KEY.fullmatch(key)
        or len(key) > MAX_CACHE_KEY
        or values.count(key) != 1
    ):
        raise SpendError(
            "the cache key is not this slot's unique assigned key",
            code="lookup_cache_assignment_invalid",
            location=slot,
            outcome="refused_pre_send",
        )


class ResolvedSettings(msgspec.Struct, frozen=True, kw_only=True):
    """A pilot child's resolved configuration (None: unset, which is not off)."""

    arm: str
    judge: str | None
    memory: bool | None
    subagents: bool | None
    upkeep: bool | None
    compaction: bool | None
    output_schema: object | None
    host_override: bool | None
    model_switch: bool | None
    model: str
    fallbacks: tuple[str, ...]
    attempts: int
    transport: str
    max_retries: int
    retry_profile: str | None
    models_override: bool
    tools: tuple[str, ...]
    mcp_servers: tuple[str, ...]
    native_context_override: bool
    mid_checkpoint: bool
    capture: bool
    decorator: str | None  # the guard decorator's brand; None: unguarded


def check_settings(settings: ResolvedSettings, model: str, *, where: str) -> None:
    """Refuse unsafe resolved settings (module docstring); `model` is the contract's
    model id; `where` names the check (construction, dispatch, request).

    Raises:
        SpendError: the fixed codes of `FIXED_CODES`.
    """
    s = settings
    aux_off = (s.memory, s.subagents, s.upkeep, s.compaction, s.host_override) == (False,) * 5
    checks: tuple[tuple[bool, str, str], ...] = (
        (s.decorator is not None, "lookup_unguarded_dispatch", "decorator"),
        (
            s.judge is None and aux_off and s.output_schema is None,
            "lookup_auxiliary_callers_forbidden",
            "auxiliary",
        ),
        (s.model_switch is False, "lookup_model_switch_forbidden", "model_switch"),
        (s.arm in BOUNDARY_ARMS, "lookup_pilot_boundary_required", "arm"),
        (not (s.mid_checkpoint or s.capture), "lookup_preparation_forbidden", "preparation"),
        (
            s.model == model
            and not s.fallbacks
            and s.attempts == 1
            and s.transport == "sse"
            and s.max_retries == 0,
            "lookup_route_mismatch",
            "route",
        ),
        (
            s.retry_profile is None and not s.models_override,
            "lookup_retry_profile_forbidden",
            "retry_profile",
        ),
        (
            s.tools == (HISTORY_TOOL,) and s.mcp_servers == (HISTORY_TOOL,),
            "lookup_tools_forbidden",
            "tools",
        ),
        (not s.native_context_override, "lookup_native_identity_forbidden", "native"),
    )
    for ok, code, field in checks:
        if not ok:
            raise SpendError(
                FIXED_CODES[code],
                code=code,
                location=f"{where}.{field}",
                outcome="refused_pre_send",
            )


def settings_for(
    resolved: Sequence[ResolvedSettings], arm: str, model: str, *, where: str
) -> ResolvedSettings:
    """The resolved settings of `arm`'s harness among `resolved`, checked.

    Raises:
        SpendError: ``lookup_auxiliary_callers_forbidden`` when `arm` has none (unset
            counts as on), or none but one; else `check_settings`'s codes.
    """
    found = [settings for settings in resolved if settings.arm == arm]
    if len(found) != 1:
        raise SpendError(
            f"{len(found)} resolved settings for arm {arm}: unset counts as on",
            code="lookup_auxiliary_callers_forbidden",
            location=f"{where}.settings",
            outcome="refused_pre_send",
        )
    check_settings(found[0], model, where=where)
    return found[0]


def child_terminal(code: str, *, admitted: bool) -> tuple[str, bool]:
    """What the controller makes of a child's terminal refusal `code`: (the outcome,
    whether the pilot continues). A continuable code is ``unadmitted`` without a hold
    and ``incomplete`` after one; any other code is a sticky stop (``integrity_stop``
    with holds, ``unadmitted`` without).

    Raises:
        SpendError: ``lookup_child_code_forbidden`` for a controller code, which a
            child can never set.
    """
    if code in CONTROLLER_CODES:
        raise SpendError(
            f"{code} is the controller's; a child cannot report it",
            code="lookup_child_code_forbidden",
            location="child",
            outcome="integrity_stop",
        )
    if code in CONTINUABLE:
        return ("incomplete" if admitted else "unadmitted", True)
    return ("integrity_stop" if admitted else "unadmitted", False)
