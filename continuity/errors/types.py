"""The error classes: `ContinuityError` and its tree, each with a default code.

`continuity.errors` (the package) re-exports everything here. The catalogue of every
code, and which class carries it, is `continuity.errors.catalogue` (docs/errors.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import msgspec

__all__ = [
    "EXIT_GATE",
    "AdapterError",
    "AdmissionStopped",
    "AggregateError",
    "ArmError",
    "CalibrationInvalid",
    "CheckpointError",
    "CompareError",
    "ConfigError",
    "ContinuityError",
    "DigestInvalid",
    "EmptyStream",
    "GateFailed",
    "HarnessError",
    "HistoryError",
    "HoldoutError",
    "InputError",
    "Interrupted",
    "Issue",
    "LedgerError",
    "LookupCoverageIncomplete",
    "LookupError_",
    "ObjectCorrupt",
    "ObjectMissing",
    "PricingError",
    "ProviderError",
    "RealModeError",
    "RecordCorrupt",
    "ReplayFidelityError",
    "RoleError",
    "RunIncomplete",
    "ScriptExhausted",
    "SessionCorrupt",
    "SoulError",
    "SpendError",
    "StoreError",
    "ToolError",
    "TraceCollision",
    "TraceError",
    "TraceInvalid",
    "UsageError",
    "first_coded",
    "typed_error",
]


class Issue(msgspec.Struct, frozen=True):
    """One finding: a stable code, where it is, and what is wrong."""

    code: str
    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message} (at {self.location})"


class ContinuityError(Exception):
    """Base of every deliberate error. `code` is stable; `location` says where."""

    default_code = "continuity_error"

    def __init__(self, message: str, *, code: str | None = None, location: str = "-") -> None:
        self.code = code or self.default_code
        self.location = location
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.code}: {self.message} (at {self.location})"


class UsageError(ContinuityError):
    default_code = "usage_error"


class TraceError(ContinuityError):
    default_code = "trace_error"


class TraceInvalid(TraceError):
    """A trace failed validation. `issues` lists every finding, first one first.

    `code` and `location` are those of the first issue, so a caller that only wants
    one answer gets the most basic problem (decoding before shape, shape before
    evidence).
    """

    default_code = "trace_malformed"

    def __init__(self, issues: Sequence[Issue], *, source: str = "-") -> None:
        if not issues:
            raise ValueError("TraceInvalid needs at least one issue")
        self.issues = tuple(issues)
        self.source = source
        first = self.issues[0]
        more = f" (+{len(self.issues) - 1} more)" if len(self.issues) > 1 else ""
        location = first.location if source == "-" else f"{source}:{first.location}"
        super().__init__(first.message + more, code=first.code, location=location)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(issue.code for issue in self.issues)


class TraceCollision(TraceError):
    default_code = "trace_value_collision"


class StoreError(ContinuityError):
    default_code = "store_error"


class ObjectMissing(StoreError):
    default_code = "object_missing"


class ObjectCorrupt(ObjectMissing):
    """An object's bytes do not hash to its name. It is never returned as data."""

    default_code = "object_corrupt"


class RecordCorrupt(StoreError):
    default_code = "record_corrupt"


class DigestInvalid(StoreError):
    default_code = "digest_invalid"


class HarnessError(ContinuityError):
    default_code = "harness_error"


class ScriptExhausted(HarnessError):
    default_code = "script_exhausted"


class AdapterError(HarnessError):
    """An outside agent's CAP/0 adapter failed (`continuity.agents`)."""

    default_code = "adapter_protocol_error"


class ToolError(HarnessError):
    default_code = "tool_call_failed"


class SessionCorrupt(HarnessError):
    default_code = "session_corrupt"


class ReplayFidelityError(HarnessError):
    default_code = "replay_fidelity_failed"


class CheckpointError(HarnessError):
    default_code = "checkpoint_missing"


class ProviderError(HarnessError):
    """A real model endpoint failed. `stops_admission` marks failures after which an
    invocation admits no new live turn (auth and quota); `retryable` marks failures a
    later run may retry (nothing was recorded)."""

    default_code = "provider_error"
    STOPPING = frozenset(
        {
            "provider_auth_failed",
            "provider_quota_exhausted",
            "cost_cap_reached",
            "cost_cap_assumption_broken",
            "cost_cap_account_failed",
            "provider_output_cap_ignored",
        }
    )

    @property
    def stops_admission(self) -> bool:
        return self.code in self.STOPPING


class EmptyStream(Exception):
    """A 200 stream that ended before its first event: the HTTP provider's signal to
    ask once more without streaming (never raised past `continuity.providers.http`)."""


class AdmissionStopped(HarnessError):
    """The invocation admits no more live turns (a stop rule fired)."""

    default_code = "admission_stopped"


class ArmError(ContinuityError):
    default_code = "arm_unknown"


class ConfigError(ContinuityError):
    default_code = "config_value_invalid"


class HistoryError(ContinuityError):
    """A ConversationHistory request the store cannot answer (its code says why)."""

    default_code = "history_invalid_request"


class CalibrationInvalid(ContinuityError):
    """A malformed calibration line, or a grader verdict outside the vocabulary."""

    default_code = "calibration_case_invalid"


class LookupError_(UsageError):
    default_code = "lookup_policy_invalid"


class HoldoutError(UsageError):
    """An external holdout source cannot be used as given (the code says which rule it
    breaks). `issues` carries a trace validator's findings (``holdout_trace_invalid``),
    the first one first."""

    default_code = "holdout_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        location: str = "-",
        issues: Sequence[Issue] = (),
    ) -> None:
        self.issues = tuple(issues)
        super().__init__(message, code=code, location=location)


class SoulError(ContinuityError):
    default_code = "lookup_soul_mismatch"


class LedgerError(ContinuityError):
    """The continuity ledger, its upkeep journal or its sources cannot be used as they
    are (the code says which rule they break); corrupt durable rows fail closed."""

    default_code = "ledger_error"


class RoleError(ContinuityError):
    """Two checkouts cannot be registered as a cross-checkout comparison (the code says
    which rule of the registration they break)."""

    default_code = "role_error"


class SpendError(ContinuityError):
    """The spend controller's request contract refused or stopped (the code says which
    rule; `continuity.spend`). `outcome` is the request's outcome kind when a guarded
    request ended this way (``refused_pre_send``, ``lost``, ``integrity_stop`` ...);
    `stop_code` and `stop_cause` are set when stopping the pilot itself failed, and
    `settle_cause` when settling the permit failed."""

    default_code = "spend_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        location: str = "-",
        outcome: str | None = None,
    ) -> None:
        self.outcome = outcome
        self.stop_code: str | None = None
        self.stop_cause: BaseException | None = None
        self.settle_cause: BaseException | None = None
        super().__init__(message, code=code, location=location)


class InputError(UsageError):
    """A file or directory a user named is not what the command reads: not a regular
    file, not a directory, or over its kind's size limit (`continuity.inputs`)."""

    default_code = "input_not_a_file"


class RealModeError(UsageError):
    default_code = "real_refused"


class PricingError(UsageError):
    default_code = "pricing_invalid"


class RunIncomplete(ContinuityError):
    """Some units of a real run did not finish; the finished ones are kept."""

    default_code = "run_incomplete"


class LookupCoverageIncomplete(ContinuityError):
    """A lookup run finished every unit it could, but some planned slots were
    inventory-infeasible: the units are kept and materialised; the run is partial."""

    default_code = "lookup_partial_coverage"


class AggregateError(ContinuityError):
    default_code = "unit_malformed"


class CompareError(UsageError):
    """Two runs `doit compare` will not set side by side: their samples are not the same
    questions asked the same way and graded the same way, or nothing pairs."""

    default_code = "compare_no_pairs"


class GateFailed(ContinuityError):
    """A gate a user asked for (``doit compare --fail-on-regression`` or ``--max-drop``,
    ``doit aggregate --fail-under``) found what it was told to fail on. The command's
    outputs are written first; the command then exits with `EXIT_GATE` (3), distinct
    from a failed task (1) and a usage error (2), so CI can tell them apart."""

    default_code = "regression_found"


EXIT_GATE = 3


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by SIGINT or SIGTERM once `continuity.interrupts` is
    installed. A `KeyboardInterrupt`, not a `ContinuityError`: it unwinds everything and
    ends in the one-line "interrupted; run the same command again to resume"."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def typed_error(exc: BaseException) -> ContinuityError | None:
    """The first `ContinuityError` in `exc`, looking inside exception groups (anyio task
    groups wrap what their tasks raise); None when there is none."""
    if isinstance(exc, ContinuityError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = typed_error(inner)
            if found is not None:
                return found
    return None


@contextlib.contextmanager
def first_coded() -> Iterator[None]:
    """Re-raise a task group's failure as its first `ContinuityError` itself (the typed
    error a caller can report), never as an exception group; other groups pass."""
    try:
        yield
    except BaseExceptionGroup as group:
        found = typed_error(group)
        if found is None:
            raise
        raise found from None
