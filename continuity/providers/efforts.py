"""The reasoning efforts each provider takes, checked when a plan binds one.

A plan binds the reader's effort (``--effort``) and the judge's (``--judge-effort``);
what each endpoint kind does with it decides what it may be:

- ``openai-chat`` sends it as ``reasoning_effort`` and ``openai-responses`` as
  ``reasoning.effort`` (`continuity.providers.openai`): OpenAI's levels, ``minimal``,
  ``low``, ``medium``, ``high`` and ``xhigh``;
- ``anthropic`` sends none (`continuity.providers.anthropic`: extended thinking and its
  budget would need signed thinking blocks replayed across tool rounds); the plan still
  binds one of the Messages API's effort levels, ``low``, ``medium`` or ``high``;
- ``scripted`` (offline) sends nothing and binds an effort some real provider takes.

``none`` is valid for every provider: it sends no effort
(`continuity.runner.real.endpoint_for`). Anything else (another word, another case, a
control character) is refused with ``effort_invalid`` before a plan binds it.
"""

from __future__ import annotations

from continuity.errors import UsageError

__all__ = ["EFFORTS", "NO_EFFORT", "check_effort", "check_efforts"]

NO_EFFORT = "none"
_OPENAI = frozenset({NO_EFFORT, "minimal", "low", "medium", "high", "xhigh"})
_ANTHROPIC = frozenset({NO_EFFORT, "low", "medium", "high"})
EFFORTS: dict[str, frozenset[str]] = {
    "openai-chat": _OPENAI,
    "openai-responses": _OPENAI,
    "anthropic": _ANTHROPIC,
    "scripted": _OPENAI | _ANTHROPIC,
}


def check_effort(kind: str, effort: str, *, location: str) -> str:
    """`effort` when the `kind` provider takes it (module doc).

    Raises:
        UsageError: ``effort_invalid``, naming the provider and its allowed values (an
            unknown kind is held to the union of every provider's).
    """
    allowed = EFFORTS.get(kind) or frozenset().union(*EFFORTS.values())
    if effort not in allowed:
        raise UsageError(
            f"{effort!r} is not an effort the {kind} provider takes: one of "
            f"{', '.join(sorted(allowed))}",
            code="effort_invalid",
            location=location,
        )
    return effort


def check_efforts(kind: str, reader_effort: str, judge_effort: str | None) -> None:
    """The reader's and (when given) the judge's effort, both for the `kind` provider.

    Raises:
        UsageError: ``effort_invalid`` (``--effort`` first, then ``--judge-effort``).
    """
    check_effort(kind, reader_effort, location="--effort")
    if judge_effort is not None:
        check_effort(kind, judge_effort, location="--judge-effort")
