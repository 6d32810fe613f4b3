"""The plan: what a run will measure, bound into one digest.

The digest binds the suite, its seeds (and the keys of the traces they produce), the
models and efforts, repeats, arms, the probe limit, the probe mode, whether the run is
real, the provider endpoints and a fingerprint of the credentials path (never the
credentials). Trace, repeat, concurrency and output only select part of a confirmed
plan and never change its digest. The digest is the root of the artifact graph: it
covers the trace keys, which cover the generator and validator code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from continuity.arms import parse_arms
from continuity.digest import value_digest
from continuity.errors import UsageError
from continuity.traces.keys import suite_specs

__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_MODELS",
    "Endpoint",
    "Plan",
    "build_plan",
    "plan_digest",
    "plan_from_options",
]

PLAN_SCHEMA = "continuity-plan-v1"
DEFAULT_MODELS = {
    "reader": "openai-codex:gpt-6-luna",
    "alternate": "openai-codex:gpt-6.1-sol",
    "judge": "openai-codex:gpt-6.1-sol",
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
    probe_mode: str = "recall-only"
    credentials_fingerprint: str | None = None


def plan_digest(plan: Plan) -> str:
    return value_digest(("continuity-plan", plan))


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
    judge: str | None = DEFAULT_MODELS["judge"],
    judge_effort: str | None = "low",
    mode: Literal["offline", "real"] = "offline",
    endpoint: Endpoint | None = None,
    credentials_path: str | None = None,
) -> Plan:
    """A plan from command-line choices (validated; unknown arms fail as in
    `continuity.arms.parse_arms`).

    Raises:
        UsageError: ``plan_invalid`` for a non-positive repeat count or probe limit, or a
            model that is not ``provider:model``.
    """
    if repeats < 1:
        raise UsageError("repeats must be at least 1", code="plan_invalid", location="--repeats")
    if probe_limit is not None and probe_limit < 1:
        raise UsageError(
            "probe limit must be at least 1", code="plan_invalid", location="--probe-limit"
        )
    for name, model in (("--reader", reader), ("--alternate", alternate), ("--judge", judge)):
        if model is not None and (":" not in model or model.startswith(":")):
            raise UsageError(f"{model!r} is not provider:model", code="plan_invalid", location=name)
    specs = suite_specs(suite, seeds)
    chosen = parse_arms(arms)
    return Plan(
        mode=mode,
        suite=suite,
        seeds=list(seeds) if seeds else None,
        traces_key=value_digest(sorted(s.spec.key() for s in specs)),
        reader=reader,
        reader_effort=reader_effort,
        alternate=alternate,
        judge=judge,
        judge_effort=judge_effort if judge else None,
        endpoint=endpoint or Endpoint(),
        repeats=repeats,
        arms=[a.id for a in chosen],
        probe_limit=probe_limit,
        credentials_fingerprint=(
            value_digest(("credentials-path", credentials_path))[:16] if credentials_path else None
        ),
    )


DEFAULT_BASE_URLS = {
    "scripted": "",
    "openai-chat": "https://api.openai.com/v1",
    "openai-responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}


def plan_from_options(options: Mapping[str, Any]) -> Plan:
    """The plan a task's command-line options bind (the shared plan parameters).

    Raises:
        UsageError: ``plan_invalid`` for an unknown provider kind, a base URL for the
            scripted provider, or a real endpoint without a credentials file path.
    """
    from continuity.traces.keys import parse_seeds

    kind = options.get("provider") or "scripted"
    if kind not in DEFAULT_BASE_URLS:
        raise UsageError(
            f"unknown provider {kind!r}; use one of {', '.join(DEFAULT_BASE_URLS)}",
            code="plan_invalid",
            location="--provider",
        )
    base_url = (options.get("base_url") or DEFAULT_BASE_URLS[kind]).rstrip("/")
    if kind == "scripted" and base_url:
        raise UsageError(
            "--base-url needs a real --provider", code="plan_invalid", location="--base-url"
        )
    judge = options.get("judge")
    seeds = options.get("seeds")
    credentials = options.get("credentials") or None
    return build_plan(
        options.get("suite") or "original",
        parse_seeds(seeds) if seeds else None,
        arms=options.get("arms") or None,
        repeats=int(1 if options.get("repeats") is None else options["repeats"]),
        probe_limit=int(options.get("probe_limit") or 0) or None,
        reader=options.get("reader") or DEFAULT_MODELS["reader"],
        reader_effort=options.get("effort") or "low",
        alternate=options.get("alternate") or DEFAULT_MODELS["alternate"],
        judge=None if judge == "none" else (judge or DEFAULT_MODELS["judge"]),
        judge_effort=options.get("judge_effort") or "low",
        mode="offline" if kind == "scripted" else "real",
        endpoint=msgspec.convert({"kind": kind, "base_url": base_url}, Endpoint),
        credentials_path=os.path.abspath(credentials) if credentials else None,
    )
