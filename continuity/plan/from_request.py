"""From a task's request to its plan: the one conversion every command that plans uses.

`plan_from_request` reads the shared plan options (`continuity.plan.request.PlanRequest`)
once, checks what only makes sense together (an endpoint and its base URL, the lookup
reader and its probe mode, a holdout and generated seeds), and builds the `Plan`
(`continuity.plan.plan.build_plan`). A ``lookup-allowed-v1`` request becomes a
`LookupPlan` (`lookup_plan`): the frozen soul, the sizing and the reader binding. A
``--suite holdout`` request binds the holdout verified against the store's freeze
(`holdout_for_request`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from continuity.arms import probe_mode_named
from continuity.errors import UsageError
from continuity.errors.hints import did_you_mean
from continuity.plan.agent_plan import agent_identity, switch_model
from continuity.plan.models import model_profile
from continuity.plan.plan import DEFAULT_BASE_URLS, Endpoint, LookupPlan, Plan, build_plan
from continuity.plan.pricing import PriceSource, price_source
from continuity.providers.efforts import check_efforts

if TYPE_CHECKING:
    from continuity.lookup.fixed_budget import FixedBudget
    from continuity.plan.holdout_plan import HoldoutChoice
    from continuity.plan.request import PlanRequest

__all__ = ["holdout_for_request", "lookup_plan", "plan_from_request"]


def plan_from_request(
    request: PlanRequest, holdout: HoldoutChoice | None = None, *, trace: str = ""
) -> Plan:
    """The plan a task's request binds (the shared plan options, `PlanRequest`).

    A real plan binds the price source of ``pricing`` (a catalog path; default the
    checked-in catalog) and the installed genai-prices. ``--suite holdout`` binds the
    verified holdout choice (`continuity.plan.holdout_plan.holdout_choice`; read from
    the request's store when `holdout` is not given, refusing a run's ``--trace``,
    `trace`, as a holdout refuses any).

    Raises:
        UsageError: ``plan_invalid`` for an unknown provider kind, a base URL for the
            scripted provider, or an unknown ``--models`` profile.
        PricingError: ``pricing_invalid`` when a real plan's catalog cannot be read.
    """
    from continuity.traces.keys import parse_seeds

    kind, base_url = _endpoint(request)
    check_efforts(kind, request.effort or "low", request.judge_effort or "low")
    judge = request.judge
    seeds = request.seeds
    profile = model_profile(request.models or None)
    probe_mode = probe_mode_named(request.probe_mode)
    binding = request.lookup_reader
    if binding and probe_mode != "lookup-allowed-v1":
        raise UsageError(
            "--lookup-reader chooses the lookup-allowed-v1 reader; add "
            "--probe-mode lookup-allowed-v1",
            code="plan_invalid",
            location="--lookup-reader",
        )
    if probe_mode == "lookup-allowed-v1" and kind != "scripted":
        raise UsageError(
            "lookup-allowed-v1 is offline preparation only; it never calls a real model",
            code="lookup_real_refused",
            location="--probe-mode",
        )
    if holdout is None:
        holdout = holdout_for_request(request, trace=trace)
    if holdout is not None and seeds:
        raise UsageError(
            "--seeds chooses generated traces; a holdout's come from --selection-seed",
            code="plan_invalid",
            location="--seeds",
        )
    plan = build_plan(
        request.suite or "original",
        parse_seeds(seeds) if seeds else None,
        arms=request.arms or None,
        repeats=request.repeats,
        probe_limit=request.probe_limit or None,
        reader=request.reader or profile.reader_for(kind),
        reader_effort=request.effort or "low",
        alternate=request.alternate or profile.alternate,
        # The judge is opt-in: no --judge (or --judge none) plans no verdict and no call;
        # --judge default is the profile's judge.
        judge=None
        if judge in ("", "none")
        else profile.judge_for(kind)
        if judge == "default"
        else judge,
        judge_effort=request.judge_effort or "low",
        mode="offline" if kind == "scripted" else "real",
        endpoint=msgspec.convert({"kind": kind, "base_url": base_url}, Endpoint),
        probe_mode=probe_mode,
        pricing=_real_pricing(kind, request.pricing or None),
        extraction_model=request.extraction_model or None,
        require_request_cap=request.require_request_cap,
        holdout=(holdout.binding, holdout.trace_keys) if holdout is not None else None,
        agent=agent_identity(request),
        context_window=request.context_window or None,
        max_output_tokens=request.max_output_tokens or None,
    )
    plan = msgspec.structs.replace(plan, switch_model=switch_model(request))
    if probe_mode != "lookup-allowed-v1":
        return plan
    return lookup_plan(
        plan, request.policy or None, request.policy_sha256 or None, binding or "default"
    )


def _endpoint(request: PlanRequest) -> tuple[str, str]:
    """The request's endpoint kind and base URL (the provider's public API by default).

    Raises:
        UsageError: ``plan_invalid`` for an unknown kind or a scripted base URL.
    """
    kind = request.provider or "scripted"
    if kind not in DEFAULT_BASE_URLS:
        raise UsageError(
            f"unknown provider {kind!r}; {did_you_mean(kind, DEFAULT_BASE_URLS)}use one of "
            f"{', '.join(DEFAULT_BASE_URLS)}",
            code="plan_invalid",
            location="--provider",
        )
    base_url = (request.base_url or DEFAULT_BASE_URLS[kind]).rstrip("/")
    if kind == "scripted" and base_url:
        raise UsageError(
            "--base-url needs a real --provider", code="plan_invalid", location="--base-url"
        )
    return kind, base_url


def holdout_for_request(request: PlanRequest, *, trace: str = "") -> HoldoutChoice | None:
    """The holdout the request names, verified against the store's freeze (None for a
    built-in suite). The store is read only when a holdout option is present; `trace`
    is the run's ``--trace`` (a holdout refuses one).

    Raises:
        HoldoutError: see `continuity.plan.holdout_plan.holdout_choice`.
    """
    from continuity.plan.holdout_plan import HOLDOUT_SUITE, external_options, holdout_choice
    from continuity.store import Store

    named = request.suite == HOLDOUT_SUITE or external_options(request)
    if not named and not (request.manifest or request.manifest_sha256 or request.statistical_spec):
        return None
    lookup = probe_mode_named(request.probe_mode) == "lookup-allowed-v1"
    return holdout_choice(
        Store(request.store or None), request, lookup=lookup, trace=trace, repeats=request.repeats
    )


def _fixed_soul(plan: Plan, fixed: FixedBudget, binding: str, where: str) -> tuple[str, str]:
    """A fixed-budget sizing checked against a plan: it sizes the plan's holdout and
    selection with the plan's reader binding; the digests of the soul it measured with.

    Raises:
        LookupError_: ``lookup_policy_holdout_mismatch``, ``lookup_policy_reader_mismatch``.
    """
    from continuity.errors import LookupError_
    from continuity.lookup.fixed_budget import check_source_binding, source_binding
    from continuity.lookup.soul import SOUL_NAME

    if plan.holdout is None:
        raise LookupError_(
            "a fixed-budget sizing sizes a holdout selection: add --suite holdout and its "
            "source and selection",
            code="lookup_policy_holdout_mismatch",
            location="--policy",
        )
    check_source_binding(fixed.holdout, source_binding(plan.holdout), where)
    if fixed.reader.binding != binding:
        raise LookupError_(
            f"the sizing was measured with the {fixed.reader.binding} reader binding, the "
            f"plan asks for {binding}",
            code="lookup_policy_reader_mismatch",
            location="--lookup-reader",
        )
    role = next((r for r in fixed.roles if r.soul_file == SOUL_NAME), None)
    if role is None:
        raise LookupError_(
            f"the sizing binds no role with the soul {SOUL_NAME}", location=f"{where}:$.roles"
        )
    return role.soul_sha256, role.soul_core_sha256


def _real_pricing(kind: str, pricing: str | None) -> PriceSource | None:
    """The price source a real plan binds (offline plans bind none)."""
    if kind == "scripted":
        return None
    return price_source(Path(pricing) if pricing else None)


def lookup_plan(
    plan: Plan, policy_path: str | None, policy_sha256: str | None, binding: str = "default"
) -> LookupPlan:
    """Bind the frozen soul, the sizing and the reader binding into a lookup plan. The
    sizing is the frozen policy, another policy, or (a holdout plan only) a holdout's
    fixed-budget sizing, which must bind the plan's source, selection and reader.

    Raises:
        UsageError: the sizing's codes (`continuity.lookup.sizing.load_sizing`),
            ``lookup_soul_mismatch`` / ``lookup_soul_missing`` when the soul file is
            not the one the sizing was measured with, ``lookup_reader_unknown``, and for
            a fixed-budget sizing ``lookup_policy_holdout_mismatch`` (another source or
            selection, or a plan that is not on a holdout) and
            ``lookup_policy_reader_mismatch``.
    """
    from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
    from continuity.lookup.policy import LookupPolicy
    from continuity.lookup.policy import policy_sha256 as sha
    from continuity.lookup.reader import binding_models
    from continuity.lookup.sizing import load_sizing, sizing_file
    from continuity.lookup.soul import check_soul, read_soul

    binding_models(binding)  # an unknown name fails before anything is read

    path = Path(policy_path) if policy_path else None
    sizing = load_sizing(path, policy_sha256 if path else None)
    soul = read_soul()
    bound = _fixed_soul(plan, sizing.fixed, binding, str(path)) if sizing.fixed else None
    if bound is None:
        assert isinstance(sizing.policy, LookupPolicy)
        bound = (sizing.policy.soul_sha256, sizing.policy.soul_core_sha256)
    check_soul(soul, *bound, where="fixtures/lookup")
    data = read_user_bytes(sizing_file(path), limit=DOCUMENT_MAX_BYTES, what="the sizing")
    policy = sizing
    return LookupPlan(
        **msgspec.structs.asdict(plan),
        reader_binding=binding,
        soul_sha256=soul.sha256,
        soul_core_sha256=soul.core_sha256,
        policy_sha256=sha(data),
        call_budget=policy.calls,
        byte_budget=policy.bytes,
    )
