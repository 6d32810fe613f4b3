"""The plan: what a run will measure, bound into one digest.

The digest binds the suite, its seeds (and the keys of the traces they produce), the
models and efforts, repeats, arms, the probe limit, the probe mode, the probe protocol
version (the fixed bytes every probe turn carries, `continuity.probes.protocol`), whether
the run is real, the provider endpoints (never the credentials, nor their path: a
credential changes who pays, not what is measured), the context window and output cap
when the user states them, and for a real plan the price source (`PriceSource`: the pricing
catalog's bytes and the genai-prices version, so a price-database upgrade asks for a new
dry run), for a plan with the ledger arm its `LedgerPlan` (the extractor, the A -> R
-> A sequence and the reservation of every extraction), and for ``--suite holdout`` its
`HoldoutBinding` (the frozen source, the selection algorithm, seed, per-group count and
the selected family ids; `continuity.plan.holdout_plan`). Trace, repeat, concurrency and
output only select part of a confirmed plan and never change its digest. The digest is
the root of the artifact graph: it covers the trace keys, which cover the generator and
validator code.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

import msgspec

from continuity.agents.identity import AgentIdentity
from continuity.arms import ProbeMode, parse_arms
from continuity.digest import value_digest
from continuity.errors import UsageError
from continuity.holdout.schema import HoldoutBinding
from continuity.plan.agent_plan import agent_arms
from continuity.plan.ledger_plan import LedgerPlan, check_ledger_plan, ledger_plan
from continuity.plan.limits import MAX_PROBE_LIMIT, MAX_REPEATS
from continuity.plan.models import DEFAULT_PROFILE, PROFILES, check_model
from continuity.plan.pricing import PriceSource
from continuity.probes.protocol import PROBE_PROTOCOL
from continuity.providers.efforts import check_efforts
from continuity.traces.keys import suite_specs

__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_MODELS",
    "PLAN_SCHEMA",
    "Endpoint",
    "LookupPlan",
    "Plan",
    "ProviderKind",
    "build_plan",
    "plan_digest",
]

PLAN_SCHEMA = "continuity-plan-v1"
# The default profile's models (`continuity.plan.models`; ``--models seed`` for the seed's).
DEFAULT_MODELS = {
    "reader": PROFILES[DEFAULT_PROFILE].reader_for("scripted"),
    "alternate": PROFILES[DEFAULT_PROFILE].alternate,
    "judge": PROFILES[DEFAULT_PROFILE].judge_for("scripted"),
}
ProviderKind = Literal["scripted", "openai-chat", "openai-responses", "anthropic"]


class Endpoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where calls for a model go in real mode (offline: ``scripted``)."""

    kind: ProviderKind = "scripted"
    base_url: str = ""


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    schema: str = PLAN_SCHEMA
    mode: Literal["offline", "real"] = "offline"
    suite: str
    seeds: list[int] | None
    traces_key: str
    reader: str
    reader_effort: str
    alternate: str
    judge: str | None
    judge_effort: str | None
    endpoint: Endpoint = Endpoint()
    repeats: int
    arms: list[str]
    probe_limit: int | None
    probe_mode: ProbeMode = "recall-only"
    # Bound by plans made before credentials stopped entering the digest; never set now.
    credentials_fingerprint: str | None = None
    # The probe turn's bytes (`continuity.probes.protocol`): a new protocol, a new digest.
    probe_protocol: str = PROBE_PROTOCOL
    # Real plans only: the prices the dry run estimated with (offline nothing is billed).
    pricing: PriceSource | None = None
    # Plans with the ledger arm only: its extractor, sequence and reservations.
    ledger: LedgerPlan | None = None
    # --suite holdout only: the frozen external source and its selection.
    holdout: HoldoutBinding | None = None
    # --agent only: the outside agent (continuity.plan.agent_plan).
    agent: AgentIdentity | None = None
    # --context-window N: the model's context window as the user states it (every
    # planned call must fit it: input plus the output cap); None: from the server or the
    # price data.
    context_window: int | None = None
    # --max-output-tokens N: the output cap every real request sends; None: 4,096.
    max_output_tokens: int | None = None
    # --switch-model provider:model (a real outside-agent plan with the switch arm): the
    # model the agent switches to, which answers after the switch.
    switch_model: str | None = None


class LookupPlan(Plan, frozen=True, kw_only=True):
    """A ``lookup-allowed-v1`` plan: also binds the soul (raw and normalised-core
    sha256), the sizing policy (its file's sha256 and budgets) and the scripted reader
    binding (default Sol, alternate Luna). A subclass, so a recall-only plan encodes (and
    digests) exactly as it did before lookup existed."""

    reader_binding: str
    soul_sha256: str
    soul_core_sha256: str
    policy_sha256: str
    call_budget: int
    byte_budget: int


# Fields added after plans were first confirmed: each enters the digest only when set.
_LATER_FIELDS = (
    "pricing",
    "ledger",
    "holdout",
    "agent",
    "context_window",
    "max_output_tokens",
    "switch_model",
)


@functools.cache
def _shadow_type(cls: type[Plan], absent: frozenset[str]) -> type[msgspec.Struct]:
    """A struct with `cls`'s name and every field but `absent`: its canonical encoding
    is `cls`'s as it was before those fields existed."""
    fields = [(name, object) for name in cls.__struct_fields__ if name not in absent]
    return msgspec.defstruct(cls.__name__, fields, frozen=True)


def plan_digest(plan: Plan) -> str:
    """The plan's confirmation digest. A later field that is not set (the price source
    of every offline plan, the ledger section of a plan without the ledger arm) leaves
    the digest exactly as it was before the field existed."""
    absent = frozenset(name for name in _LATER_FIELDS if getattr(plan, name) is None)
    if not absent:
        return value_digest(("continuity-plan", plan))
    shadow = _shadow_type(type(plan), absent)
    bound = shadow(**{name: getattr(plan, name) for name in shadow.__struct_fields__})
    return value_digest(("continuity-plan", bound))


def build_plan(
    suite: str = "original",
    seeds: Sequence[int] | None = None,
    *,
    arms: str | None = None,
    repeats: int = 1,
    probe_limit: int | None = None,
    reader: str = DEFAULT_MODELS["reader"],
    reader_effort: str = "low",
    alternate: str = DEFAULT_MODELS["alternate"],
    judge: str | None = None,
    judge_effort: str | None = "low",
    mode: Literal["offline", "real"] = "offline",
    endpoint: Endpoint | None = None,
    probe_mode: ProbeMode = "recall-only",
    pricing: PriceSource | None = None,
    extraction_model: str | None = None,
    require_request_cap: bool = False,
    holdout: tuple[HoldoutBinding, Sequence[str]] | None = None,
    agent: AgentIdentity | None = None,
    context_window: int | None = None,
    max_output_tokens: int | None = None,
) -> Plan:
    """A plan from command-line choices (validated; unknown arms fail as in
    `continuity.arms.parse_arms`). With the ledger arm it binds a `LedgerPlan`; on a
    holdout (`holdout`: its binding and the selected traces' keys) the binding.

    Raises:
        UsageError: ``plan_invalid`` for a repeat count outside 1 to `MAX_REPEATS`, a
            probe limit outside 1 to `MAX_PROBE_LIMIT`, a model that is not
            ``provider:model``, or a ledger option (``--extraction-model``,
            ``--require-request-cap``) without the ledger arm; ``effort_invalid``.
    """
    if not 1 <= repeats <= MAX_REPEATS:
        raise UsageError(
            f"repeats must be 1 to {MAX_REPEATS}", code="plan_invalid", location="--repeats"
        )
    if probe_limit is not None and not 1 <= probe_limit <= MAX_PROBE_LIMIT:
        raise UsageError(
            f"probe limit must be 1 to {MAX_PROBE_LIMIT}",
            code="plan_invalid",
            location="--probe-limit",
        )
    for name, model in (
        ("--reader", reader),
        ("--alternate", alternate),
        ("--judge", judge),
        ("--extraction-model", extraction_model),
    ):
        check_model(name, model)
    check_efforts((endpoint or Endpoint()).kind, reader_effort, judge_effort)
    if holdout is not None:
        trace_keys = sorted(holdout[1])
    else:
        trace_keys = sorted(s.spec.key() for s in suite_specs(suite, seeds))
    arm_ids = _arm_ids(arms, probe_mode, agent)
    ledger = _ledger(arm_ids, reader, alternate, extraction_model, require_request_cap)
    return Plan(
        mode=mode,
        suite=suite,
        seeds=list(seeds) if seeds else None,
        traces_key=value_digest(trace_keys),
        reader=reader,
        reader_effort=reader_effort,
        alternate=alternate,
        judge=judge,
        judge_effort=judge_effort if judge else None,
        endpoint=endpoint or Endpoint(),
        repeats=repeats,
        arms=arm_ids,
        probe_limit=probe_limit,
        probe_mode=probe_mode,
        pricing=pricing,
        ledger=ledger,
        holdout=holdout[0] if holdout is not None else None,
        agent=agent,
        context_window=context_window,
        max_output_tokens=max_output_tokens,
    )


def _arm_ids(arms: str | None, probe_mode: str, agent: AgentIdentity | None) -> list[str]:
    """The planned arm ids: an outside agent's (continuity.plan.agent_plan) or the
    reference arms' (`continuity.arms.parse_arms`)."""
    if agent is not None:
        return agent_arms(arms)
    return [a.id for a in parse_arms(arms, probe_mode=probe_mode)]


def _ledger(
    arms: list[str],
    reader: str,
    alternate: str,
    extraction_model: str | None,
    require_request_cap: bool,
) -> LedgerPlan | None:
    """The ledger section of a plan with the ledger arm (checked as execution will
    check it); a ledger option without the arm is refused, never silently dropped."""
    from continuity.arms import LEDGER_ARM

    if LEDGER_ARM not in arms:
        for flag, value in (
            ("--extraction-model", extraction_model),
            ("--require-request-cap", require_request_cap),
        ):
            if value:
                raise UsageError(
                    f"{flag} configures the ledger arm; add continuity-ledger-cold to --arms",
                    code="plan_invalid",
                    location=flag,
                )
        return None
    section = ledger_plan(
        reader=reader,
        alternate=alternate,
        extraction_model=extraction_model,
        require_request_cap=require_request_cap,
    )
    check_ledger_plan(arms, section, reader=reader, alternate=alternate)
    return section


DEFAULT_BASE_URLS = {
    "scripted": "",
    "openai-chat": "https://api.openai.com/v1",
    "openai-responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
