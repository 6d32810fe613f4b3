"""Default models: the ``current`` profile (real models genai-prices prices) and the
seed's ``seed`` profile.

A plan names its models explicitly (``--reader``, ``--judge``, ``--alternate``); a model
the user leaves out comes from the plan's profile (``--models``, default ``current``):

- **current**: models a user can call today, each priced by genai-prices' bundled data.
  The reader and judge is GPT-6.1 Sol (``openai:gpt-6.1-sol``, "for complex coding and
  professional work"), the kind of model agents are built on, so a default real run
  measures what such an agent keeps; on Anthropic's endpoint it is Claude Sonnet 5.5.
  ``doit estimate`` prices the plan's reader beside GPT-6 Luna (``openai:gpt-6-luna``,
  twenty times cheaper: the screening profile) and Claude Opus 5.5
  (``anthropic:claude-opus-5-5``, the high-end sensitivity), the seed's Sol / Luna /
  Opus triple on the vendors' public APIs;
- **seed**: the specification's own bindings, kept for fidelity: the ``openai-codex``
  subscription models (``gpt-6-luna`` reader, ``gpt-6.1-sol`` judge), which no public
  API serves and which only the checked-in pricing catalog prices.

The scripted history's alternate binding (``--alternate``, never called) is the seed's in
both profiles, so the replayed history, and every checkpoint built from it, is the same
whichever profile a plan uses.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.errors import UsageError
from continuity.errors.hints import did_you_mean, did_you_mean_model

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "ModelProfile",
    "ProfileName",
    "check_model",
    "model_profile",
]

ProfileName = Literal["current", "seed"]
DEFAULT_PROFILE: ProfileName = "current"


class ModelProfile(msgspec.Struct, frozen=True, kw_only=True):
    """The default models of one profile, by endpoint kind where they differ."""

    reader: dict[str, str]  # endpoint kind -> provider:model
    judge: dict[str, str]
    alternate: str
    screening: str
    high_end: str

    def reader_for(self, kind: str) -> str:
        return self.reader.get(kind, self.reader["scripted"])

    def judge_for(self, kind: str) -> str:
        return self.judge.get(kind, self.judge["scripted"])


_SOL = "openai:gpt-6.1-sol"
_SONNET = "anthropic:claude-sonnet-5-5"
_SEED_ALTERNATE = "openai-codex:gpt-6.1-sol"

PROFILES: dict[str, ModelProfile] = {
    "current": ModelProfile(
        reader={"scripted": _SOL, "anthropic": _SONNET},
        judge={"scripted": _SOL, "anthropic": _SONNET},
        alternate=_SEED_ALTERNATE,
        screening="openai:gpt-6-luna",
        high_end="anthropic:claude-opus-5-5",
    ),
    "seed": ModelProfile(
        reader={"scripted": "openai-codex:gpt-6-luna"},
        judge={"scripted": "openai-codex:gpt-6.1-sol"},
        alternate=_SEED_ALTERNATE,
        screening="openai-codex:gpt-6-mini",
        high_end="anthropic:claude-opus-5-5",
    ),
}


def model_profile(name: str | None) -> ModelProfile:
    """The profile `name` (None or empty: the default).

    Raises:
        UsageError: ``plan_invalid`` at ``--models`` for an unknown profile.
    """
    chosen = name or DEFAULT_PROFILE
    if chosen not in PROFILES:
        raise UsageError(
            f"unknown model profile {chosen!r}; {did_you_mean(chosen, PROFILES)}use one of "
            f"{', '.join(PROFILES)}",
            code="plan_invalid",
            location="--models",
        )
    return PROFILES[chosen]


def check_model(option: str, model: str | None) -> None:
    """`model` (None: not given) is a provider:model reference.

    Raises:
        UsageError: ``plan_invalid``, with a "did you mean" among the profiles' models.
    """
    if model is not None and (":" not in model or model.startswith(":")):
        known = _profile_models()
        raise UsageError(
            f"{model!r} is not provider:model; "
            f"{did_you_mean_model(model.lstrip(':'), known)}e.g. {known[0]}",
            code="plan_invalid",
            location=option,
        )


def _profile_models() -> list[str]:
    """Every provider:model the model profiles name, the default profile's reader
    first: what a "did you mean" offers."""
    models = (
        model
        for profile in PROFILES.values()
        for model in (
            *profile.reader.values(),
            *profile.judge.values(),
            profile.alternate,
            profile.screening,
            profile.high_end,
        )
    )
    return list(dict.fromkeys(models))
