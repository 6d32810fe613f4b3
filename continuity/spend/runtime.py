"""The pilot child's runtime proxy: the only way a probe dispatches.

- **Dispatch.** Only a `GuardedDispatch` made here by `guarded_dispatch(guard)` may
  dispatch: it carries a module-private brand, wraps the child's `GuardedProvider` and
  is one-shot (installed in one proxy, once). An identity decorator, another object, a
  forged brand or a second installation is ``lookup_unguarded_dispatch``.
- **Settings.** The resolved settings are checked (`continuity.spend.safety.
  check_settings`) when the proxy is built and again at every dispatch; the guard checks
  its options on every request.
- **Surface.** The proxy exposes `run` for inference and the local lifecycle operations
  (`LIFECYCLE`: tool-context configuration, session synchronization, reconciliation,
  recovery, refresh, invalidation, retirement, disposal), forwarded to the runtime.
  Preparation, compaction and handoff are ``lookup_preparation_forbidden``; a provider
  check or any other name is ``lookup_method_forbidden``. Nothing else is forwarded.
- **Run.** `run` asks one owner turn of the runtime (the harness's agent loop:
  `continuity.sampling.pilot_probe.ProbeRuntime`), with the proxy itself as the loop's
  model: every request of the turn comes back through `stream`, so through the guard.
- **Transcript.** The proxy keeps a length-and-digest snapshot of the last request's
  messages; the next request's first `length` messages must hash the same. Appending is
  how a run goes on; rewriting an earlier message in place (in the session, between two
  requests) is ``lookup_native_identity_forbidden``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec

from continuity.digest import value_digest
from continuity.errors import SpendError
from continuity.messages import Message, ModelRequest
from continuity.providers.protocol import ProviderEvent
from continuity.spend.guard import CALL_OPTIONS, GuardedProvider
from continuity.spend.safety import ResolvedSettings, check_settings

__all__ = [
    "LIFECYCLE",
    "GuardedDispatch",
    "RuntimeProxy",
    "TranscriptSnapshot",
    "check_dispatch",
    "guarded_dispatch",
]

LIFECYCLE = frozenset(
    {
        "configure_tools",
        "sync_session",
        "reconcile",
        "recover",
        "refresh",
        "invalidate",
        "retire",
        "dispose",
    }
)
_PREPARATION = frozenset({"prepare", "prepare_dispatch", "compact", "handoff", "capture"})
_BRAND = object()  # module-private: nothing outside this module can make a dispatch


class GuardedDispatch:
    """The guard's branded, one-shot dispatch (made only by `guarded_dispatch`)."""

    __slots__ = ("_brand", "_guard", "_installed")

    def __init__(self, guard: GuardedProvider, brand: object) -> None:
        if brand is not _BRAND:
            raise SpendError(
                "a dispatch without the guard's brand",
                code="lookup_unguarded_dispatch",
                location="brand",
                outcome="refused_pre_send",
            )
        self._brand = brand
        self._guard = guard
        self._installed = False

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        return self._guard.stream(request, dict(CALL_OPTIONS))


def guarded_dispatch(guard: GuardedProvider) -> GuardedDispatch:
    """The only dispatch a pilot proxy accepts, wrapping `guard`."""
    return GuardedDispatch(guard, _BRAND)


def check_dispatch(dispatch: object) -> GuardedDispatch:
    """`dispatch` if it is a branded guard dispatch never installed before.

    Raises:
        SpendError: ``lookup_unguarded_dispatch``.
    """
    if type(dispatch) is not GuardedDispatch or getattr(dispatch, "_brand", None) is not _BRAND:
        raise SpendError(
            "the route lacks the guard's dispatch",
            code="lookup_unguarded_dispatch",
            location="route",
            outcome="refused_pre_send",
        )
    if dispatch._installed:
        raise SpendError(
            "the guard's dispatch is one-shot",
            code="lookup_unguarded_dispatch",
            location="route",
            outcome="refused_pre_send",
        )
    dispatch._installed = True
    return dispatch


class TranscriptSnapshot(msgspec.Struct, frozen=True):
    """How many messages a transcript had and their digest."""

    length: int
    digest: str

    @classmethod
    def take(cls, messages: Sequence[Message]) -> TranscriptSnapshot:
        return cls(len(messages), value_digest(msgspec.to_builtins(list(messages))))

    def check(self, messages: Sequence[Message]) -> None:
        """Refuse a transcript whose first `length` messages changed (or were removed).

        Raises:
            SpendError: ``lookup_native_identity_forbidden``.
        """
        if len(messages) < self.length or TranscriptSnapshot.take(messages[: self.length]) != self:
            raise SpendError(
                "the transcript was changed in place",
                code="lookup_native_identity_forbidden",
                location="transcript",
                outcome="refused_pre_send",
            )


class RuntimeProxy:
    """`run` and the lifecycle operations of `runtime`; nothing else (module doc). It is
    also the model of the runtime's loop (`name`, `stream`), and the loop's only one."""

    name = "pilot-guard"

    def __init__(
        self, runtime: object, dispatch: object, settings: ResolvedSettings, model: str
    ) -> None:
        check_settings(settings, model, where="construction")
        self._dispatch = check_dispatch(dispatch)
        self._runtime = runtime
        self._settings = settings
        self._model = model
        self._last: TranscriptSnapshot | None = None

    async def run(self, text: str, *, system: str, max_rounds: int) -> Any:
        """One owner turn of `text` in the runtime, every request through `stream`."""
        run_turn = getattr(self._runtime, "run_turn")  # noqa: B009 - a duck-typed runtime
        return await run_turn(
            self, model=self._model, system=system, text=text, max_rounds=max_rounds
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Dispatch `request` through the guard: its messages must extend the previous
        request's, never change them in place."""
        check_settings(self._settings, self._model, where="dispatch")
        if self._last is not None:
            self._last.check(request.messages)
        snapshot = TranscriptSnapshot.take(request.messages)
        async for event in self._dispatch.stream(request):
            yield event
        self._last = snapshot

    def __getattr__(self, name: str) -> Any:
        if name in LIFECYCLE:
            return getattr(self._runtime, name)
        if name in _PREPARATION:
            raise SpendError(
                f"{name} is not a pilot operation",
                code="lookup_preparation_forbidden",
                location=name,
                outcome="refused_pre_send",
            )
        raise SpendError(
            f"{name} is not allowlisted",
            code="lookup_method_forbidden",
            location=name,
            outcome="refused_pre_send",
        )
