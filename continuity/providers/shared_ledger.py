"""The invocation ledger in a shared store: `continuity.providers.cache.Ledger`'s one
row (planned and admitted live turns, observed input, calls, the stop reason) as one
document, ``accounts/<run>/ledger-<invocation>.json``, changed only by compare and swap
(`continuity.providers.shared_accounts.SharedDocument`), so every worker of a cluster
run admits and stops against the same one. `open_ledger` and `create_ledger` take a
ledger's ref: a shared ref, or the path of the local SQLite file.

A failure of the store, or a document that does not decode, is ``object_corrupt`` at
the ledger's ref.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from continuity.errors import AdmissionStopped, ContinuityError, ObjectCorrupt
from continuity.messages import Usage
from continuity.providers.cache import Ledger
from continuity.providers.shared_accounts import SharedDocument, is_shared

__all__ = ["SharedLedger", "SharedLedgerState", "create_ledger", "open_ledger"]


def open_ledger(ref: str) -> Ledger:
    """The invocation ledger `ref` names: a shared one, or the local SQLite file."""
    return SharedLedger(ref) if is_shared(ref) else Ledger(ref)


def create_ledger(
    ref: str, *, planned_live_turns: int, max_observed_input_tokens: int | None
) -> Ledger:
    """Create the invocation's ledger at `ref` (a shared ref, or a file's path)."""
    if is_shared(ref):
        return SharedLedger.create(ref, planned_live_turns=planned_live_turns,
                                   max_observed_input_tokens=max_observed_input_tokens)  # fmt: skip
    return Ledger.create(Path(ref), planned_live_turns=planned_live_turns,
                         max_observed_input_tokens=max_observed_input_tokens)  # fmt: skip


class SharedLedgerState(msgspec.Struct, kw_only=True):
    """The ledger document: the invocation ledger's one row."""

    planned: int
    max_input: int | None = None
    admitted: int = 0
    observed_input: int = 0
    calls: int = 0
    stopped: str | None = None


class SharedLedger(Ledger):
    """The invocation ledger in a shared store (module doc), in place of the SQLite
    `continuity.providers.cache.Ledger` it stands for."""

    def __init__(self, ref: str) -> None:  # no SQLite file: every method is overridden
        self.path = Path(ref)
        self.ref = ref
        self._doc: SharedDocument[SharedLedgerState] = SharedDocument(
            ref, SharedLedgerState, self._error
        )

    def _error(self, problem: str) -> ContinuityError:
        return ObjectCorrupt(f"the shared ledger failed: {problem}", location=self.ref)

    @classmethod
    def create(  # type: ignore[override]  # a shared ref, not a Path
        cls, path: str, *, planned_live_turns: int, max_observed_input_tokens: int | None
    ) -> SharedLedger:
        ledger = cls(path)
        state = SharedLedgerState(planned=planned_live_turns, max_input=max_observed_input_tokens)
        ledger._doc.change(lambda _: state)
        return ledger

    def close(self) -> None:
        return None

    def _state(self) -> SharedLedgerState:
        state = self._doc.read()
        if state is None:
            raise ObjectCorrupt("the run's shared ledger is missing", location=self.ref)
        return state

    def state(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self._state())

    def admit(self) -> None:
        """Admit one live turn, or raise `AdmissionStopped`."""

        def admit(state: SharedLedgerState | None) -> SharedLedgerState:
            state = state or self._state()
            if state.stopped is None and state.admitted >= state.planned:
                state.stopped = f"the planned {state.planned} live turns were admitted"
            if state.stopped is None:
                state.admitted += 1
            return state

        state = self._doc.change(admit)
        assert state is not None
        if state.stopped is not None:
            raise AdmissionStopped(f"no new live turn: {state.stopped}", location=self.ref)

    def observe(self, usage: Usage) -> None:
        """Count a real call's input; stop admission once the cap is crossed."""

        def observe(state: SharedLedgerState | None) -> SharedLedgerState:
            state = state or self._state()
            state.observed_input += usage.total_input
            state.calls += 1
            if (state.stopped is None and state.max_input is not None
                    and state.observed_input > state.max_input):  # fmt: skip
                state.stopped = (
                    f"observed input {state.observed_input} tokens crossed "
                    f"limits.max_observed_input_tokens_per_invocation {state.max_input}"
                )
            return state

        self._doc.change(observe)

    def check_open(self) -> None:
        """Raise `AdmissionStopped` when a stop rule has fired."""
        stopped = self._state().stopped
        if stopped is not None:
            raise AdmissionStopped(f"no new call: {stopped}", location=self.ref)

    def stop(self, reason: str) -> None:
        def stop(state: SharedLedgerState | None) -> SharedLedgerState | None:
            state = state or self._state()
            if state.stopped is not None:
                return None
            state.stopped = reason
            return state

        self._doc.change(stop)
