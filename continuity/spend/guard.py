"""The guarded lookup provider: one per sequential probe run, at most one send per permit.

`GuardedProvider` wraps the Responses client of the frozen reader binding
(`continuity.spend.contract.GuardContract`) for one probe run, with a unique run id and
slot id, an injected permit source (`continuity.spend.permits`), the resolved
auxiliary callers (all off: `continuity.spend.contract.check_auxiliary_callers` runs at
construction, the pilot's entry) and the registered assumptions
(`continuity.spend.assumptions.ASSUMED_V1`). It is plumbing, not authority: nothing
here enables a real route, and every real-mode refusal of the harness still stands.

A call to `GuardedProvider.stream` goes through, in order:

1. **entry**: a second, overlapping entry is an integrity stop; after a stop every
   request is refused (the stop's code), after a terminal outcome ``lookup_slot_terminal``
   (or ``pilot_empty_final_output``); the options (`check_options`); the request limit
   (requests 1-10 may be admitted; the 11th is ``lookup_request_limit``);
2. **the final payload**: the client's payload, the cache key (when declared), then the
   caller's ``on_payload`` hook; serialized once, and the serialized bytes (detached
   from every hook) are what is checked (`continuity.spend.payload.check_payload`),
   bound to the contract's model and effort, measured (U_k) and sent; U_k > I is
   ``not_admitted_input_envelope``;
3. **admission**: ``admit`` on the permit source; a refusal is ``refused_pre_send`` with
   its code (a policy refusal also stops the pilot);
4. **the send**: the guard's transport (`continuity.spend.transport`) checks URL, headers
   and body digest, consumes the permit and sends once;
5. **settlement** from the raw terminal event (`continuity.spend.usage`): settled, lost
   (no usage, a failed response, a broken stream, an admitted request that never sent),
   own abort after send (cancelled or closed by its own deadline), or an integrity stop
   (an unknown tier, invalid usage, a broken registered implication, a transport
   refusal). A stop is awaited before the error is raised; if stopping fails, the
   error keeps its code and adds ``stop_code = "lookup_stop_failed"`` and the cause.

Every request leaves a content-free `RequestRecord`. Only `stream` dispatches:
``complete``, ``complete_simple`` and ``handoff`` refuse with ``lookup_method_forbidden``
(classified ``failed/pilot_method_forbidden``), and the wrapped client is not exposed.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any, NoReturn

import anyio
import msgspec

from continuity.errors import ProviderError, SpendError
from continuity.messages import ModelRequest
from continuity.providers.protocol import ProviderEvent
from continuity.spend.admission import final_payload
from continuity.spend.assumptions import (
    ASSUMED_V1,
    CATALOG_BOUNDED_VERSION,
    Assumptions,
    check_assumptions,
    reservation,
)
from continuity.spend.contract import (
    AuxiliaryCallers,
    GuardContract,
    check_auxiliary_callers,
    check_contract,
    check_options,
)
from continuity.spend.payload import Admission
from continuity.spend.permits import OutcomeKind, Permit, PermitSource, Refusal, Settlement
from continuity.spend.settle import Capture, guarded_client, settlement_of
from continuity.spend.transport import Armed, GuardTransport, Send
from continuity.spend.usage import UsageRecord

__all__ = ["ACCOUNT_STOPS", "CALL_OPTIONS", "GuardedProvider", "RequestRecord", "classification"]

CALL_OPTIONS: Mapping[str, Any] = {"transport": "sse", "max_retries": 0}
# The endpoint's refusals of the account, each a sticky stop of the pilot.
ACCOUNT_STOPS: Mapping[str, str] = {
    "provider_auth_failed": "lookup_account_refused",  # HTTP 401 / 403
    "provider_rate_limited": "lookup_rate_limited",  # HTTP 429
    "provider_quota_exhausted": "lookup_usage_limit",  # 402, insufficient quota
}
_USAGE_LIMIT_MARKS = ("usage_limit", "insufficient_quota", "rate_limit")
_FAILED = {
    "lookup_method_forbidden": "failed/pilot_method_forbidden",
    "pilot_empty_final_output": "failed/pilot_empty_final_output",
}


def classification(error: SpendError) -> str | None:
    """The slot classification a refusal carries (``failed/<reason>``), if any."""
    return _FAILED.get(error.code)


class RequestRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One guarded request, content-free: ids, digests, sizes, money, counts."""

    request_id: str
    outcome: OutcomeKind
    code: str | None = None
    round: int | None = None
    payload_digest: str | None = None
    u: int | None = None
    cost: str | None = None
    usage: UsageRecord | None = None
    tier: str | None = None
    sent: bool = False


class GuardedProvider:
    """The streaming call of one probe run's reader, under the spend contract."""

    def __init__(
        self,
        *,
        contract: GuardContract,
        permits: PermitSource,
        run_id: str,
        slot_id: str,
        credentials_path: str,
        callers: AuxiliaryCallers,
        send: Send | None = None,
        assumptions: Assumptions = ASSUMED_V1,
        max_output_tokens: int = 4096,
        timeout: float = 600.0,
    ) -> None:
        check_auxiliary_callers(callers, where="entry")  # nothing but the reader calls out
        check_contract(contract, run_id, assumptions)
        if contract.api != "openai-responses" or not slot_id:
            raise SpendError(
                "a guard dispatches to the Responses API, for a named slot",
                code="lookup_contract_mismatch",
                location="contract.api" if slot_id else "slot_id",
            )
        check_assumptions(assumptions)
        if assumptions.version == CATALOG_BOUNDED_VERSION and not (
            0 < max_output_tokens <= assumptions.max_output
        ):
            raise SpendError(
                f"max_output_tokens {max_output_tokens:,} is not within the registered output "
                f"cap {assumptions.max_output:,} the vendor enforces",
                code="lookup_option_forbidden",
                location="max_output_tokens",
                outcome="refused_pre_send",
            )
        self.contract = contract
        self.run_id, self.slot_id = run_id, slot_id
        self.name, self.model = contract.api, contract.model
        self.records: list[RequestRecord] = []
        self._permits = permits
        self._assumptions = assumptions
        self._rmax = reservation(assumptions)
        self._transport = GuardTransport(send, permits)
        self._client = guarded_client(
            contract,
            credentials_path=credentials_path,
            max_output_tokens=max_output_tokens,
            timeout=timeout,
            transport=self._transport,
        )
        self._admitted = 0
        self._prior_output = 0
        self._terminal: str | None = None
        self._stopped: str | None = None
        self._busy = False

    # -- methods that are not a guarded dispatch
    def _forbidden(self, method: str) -> NoReturn:
        raise SpendError(
            f"{method} is not a guarded dispatch: only the streaming call dispatches",
            code="lookup_method_forbidden",
            location=method,
            outcome="refused_pre_send",
        )

    async def complete(self, *args: object, **kwargs: object) -> NoReturn:
        self._forbidden("complete")

    async def complete_simple(self, *args: object, **kwargs: object) -> NoReturn:
        self._forbidden("complete_simple")

    async def handoff(self, *args: object, **kwargs: object) -> NoReturn:
        self._forbidden("handoff")

    @property
    def sends(self) -> int:
        return self._transport.sends

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- the one dispatch
    async def stream(
        self, request: ModelRequest, options: Mapping[str, Any] = CALL_OPTIONS
    ) -> AsyncGenerator[ProviderEvent, None]:
        if self._busy:  # the latch: checked and taken before any await
            error = SpendError(
                "a second request entered while one is in flight",
                code="lookup_concurrent_entry",
                location=self.slot_id,
                outcome="integrity_stop",
            )
            self.records.append(
                RequestRecord(
                    request_id=f"{self._next_id()}:concurrent",
                    outcome="integrity_stop",
                    code=error.code,
                )
            )
            await self._stop(error)
            raise error
        self._busy = True
        try:
            # aclosing: a consumer that stops early closes the guarded stream here, in
            # this task, so its settlement is awaited before the latch is released
            # (never left to the garbage collector).
            async with aclosing(self._guarded(request, options)) as events:
                async for event in events:
                    yield event
        finally:
            self._busy = False

    def _record_refusal(self, code: str, message: str, location: str) -> SpendError:
        error = SpendError(message, code=code, location=location, outcome="refused_pre_send")
        self.records.append(
            RequestRecord(request_id=self._next_id(), outcome="refused_pre_send", code=code)
        )
        return error

    def _next_id(self) -> str:
        return f"{self.run_id}:{self.slot_id}:{self._admitted + 1}"

    def _entry(self, request: ModelRequest, options: Mapping[str, Any]) -> tuple[bytes, Admission]:
        if self._stopped is not None:
            raise self._record_refusal(self._stopped, "the pilot is stopped", self.slot_id)
        if self._terminal is not None:
            raise self._record_refusal(self._terminal, "this probe run is terminal", self.slot_id)
        try:
            check_options(options, self.contract)
            if self._admitted >= self._assumptions.max_requests:
                raise SpendError(
                    f"request {self._admitted + 1} exceeds the "
                    f"{self._assumptions.max_requests} a probe run may admit",
                    code="lookup_request_limit",
                    location=self._next_id(),
                    outcome="refused_pre_send",
                )
            return final_payload(
                self._client.payload(request),
                options.get("on_payload"),
                self.contract,
                first=self._admitted == 0,
                prior_output=self._prior_output,
                assumptions=self._assumptions,
                location=self._next_id(),
            )
        except SpendError as error:
            self.records.append(
                RequestRecord(
                    request_id=self._next_id(), outcome="refused_pre_send", code=error.code
                )
            )
            raise

    async def _admit(self, admission: Admission) -> Permit:
        request_id, round_ = self._next_id(), self._admitted + 1
        try:
            granted = await self._permits.admit(
                request_id, self.slot_id, round_, admission.digest, self._rmax
            )
        except Exception as exc:  # whether a hold exists is unknown: stop
            error = SpendError(
                f"admission failed: {exc!r}",
                code="lookup_admit_failed",
                location=request_id,
                outcome="integrity_stop",
            )
            self.records.append(
                RequestRecord(request_id=request_id, outcome="integrity_stop", code=error.code)
            )
            await self._stop(error)
            raise error from exc
        if isinstance(granted, Refusal):
            error = self._record_refusal(
                granted.code, f"admission refused: {granted.code}", request_id
            )
            if granted.policy:
                await self._stop(error)
            raise error
        self._admitted += 1
        return granted

    async def _guarded(
        self, request: ModelRequest, options: Mapping[str, Any]
    ) -> AsyncGenerator[ProviderEvent, None]:
        body, admission = self._entry(request, options)
        permit = await self._admit(admission)
        armed = Armed(permit, admission.digest, self._client.url, self.contract.prompt_cache_key)
        capture = Capture()
        self._transport.arm(armed)
        try:
            async for event in self._client.stream_body(body, capture):
                yield event
        except SpendError as error:  # the transport refused: an integrity stop
            await self._end(
                permit,
                admission,
                armed,
                Settlement(kind="integrity_stop", code=error.code),
                error=error,
            )
            raise
        except (anyio.get_cancelled_exc_class(), GeneratorExit):
            if capture.completed is not None or capture.failed is not None:
                # the response had ended: settle it from its raw events (a stop is
                # still awaited; the abort, not the stop's error, propagates)
                await self._end_with(permit, admission, armed, capture, failure=None, quiet=True)
                raise
            kind: OutcomeKind = "own_abort_after_send" if armed.sent else "lost"
            await self._end(
                permit, admission, armed, Settlement(kind=kind, code="lookup_own_abort")
            )
            raise
        except ProviderError as error:
            await self._end_with(permit, admission, armed, capture, failure=error.code)
            await self._account_stop(error.code, capture)
            raise
        except Exception:
            await self._end(
                permit, admission, armed, Settlement(kind="lost", code="lookup_request_failed")
            )
            raise
        finally:
            self._transport.disarm()
        await self._end_with(permit, admission, armed, capture, failure=None)
        await self._account_stop(None, capture)

    async def _account_stop(self, failure: str | None, capture: Capture) -> None:
        """The account's own refusals are sticky stops: the endpoint refused the
        credentials (HTTP 401/403), rate-limited it (429) or reported a usage or quota
        limit (HTTP, or a failed response's error code in the stream)."""
        code = ACCOUNT_STOPS.get(failure or "")
        failed = capture.failed or {}
        error = failed.get("error") if isinstance(failed.get("error"), dict) else failed
        streamed = str(error.get("code") or error.get("type") or "") if error else ""
        if code is None and any(mark in streamed for mark in _USAGE_LIMIT_MARKS):
            code = "lookup_usage_limit"
        if code is not None and self._stopped is None:
            await self._stop(
                SpendError(
                    "the endpoint refused this account; the pilot stops",
                    code=code,
                    location=self.slot_id,
                    outcome="integrity_stop",
                )
            )

    async def _end_with(
        self,
        permit: Permit,
        admission: Admission,
        armed: Armed,
        capture: Capture,
        failure: str | None,
        quiet: bool = False,
    ) -> None:
        """Settle from what the raw events said (`failure`: the stream's own error);
        `quiet`: record and stop as usual but raise nothing (the caller is aborting)."""
        outcome = settlement_of(capture, admission.u, self._rmax, self._assumptions, failure)
        error = None
        if outcome.settlement.kind == "integrity_stop":
            error = SpendError(
                outcome.message,
                code=outcome.settlement.code,
                location=permit.request_id,
                outcome="integrity_stop",
            )
        await self._end(
            permit,
            admission,
            armed,
            outcome.settlement,
            usage=outcome.usage,
            tier=outcome.tier,
            error=error,
        )
        if error is not None:
            if quiet:
                return
            raise error
        if outcome.settlement.kind == "settled" and outcome.usage is not None:
            self._prior_output += outcome.usage.output
            if outcome.unusable_reply:
                self._terminal = "pilot_empty_final_output"
                if quiet:
                    return
                raise SpendError(
                    "an empty or length-terminal reply cannot issue a finalization request",
                    code="pilot_empty_final_output",
                    location=permit.request_id,
                    outcome="settled",
                )

    async def _end(
        self,
        permit: Permit,
        admission: Admission,
        armed: Armed,
        settlement: Settlement,
        *,
        usage: UsageRecord | None = None,
        tier: str | None = None,
        error: SpendError | None = None,
    ) -> None:
        """Settle once (shielded from cancellation), record, and stop on an integrity
        stop; a failed settlement is itself an integrity stop."""
        self.records.append(
            RequestRecord(
                request_id=permit.request_id,
                outcome=settlement.kind,
                code=settlement.code,
                round=permit.round,
                payload_digest=admission.digest,
                u=admission.u,
                cost=settlement.cost,
                usage=usage,
                tier=tier,
                sent=armed.sent,
            )
        )
        if settlement.kind != "settled":
            self._terminal = "lookup_slot_terminal"
        with anyio.CancelScope(shield=True):
            try:
                await self._permits.settle(permit, settlement, usage, tier)
            except Exception as exc:  # kept as the settle cause
                error = error or SpendError(
                    f"settling {permit.request_id} failed: {exc!r}",
                    code="lookup_settle_failed",
                    location=permit.request_id,
                    outcome="integrity_stop",
                )
                error.settle_cause = exc
            if error is not None and error.outcome == "integrity_stop":
                await self._stop(error)
        if error is not None and settlement.kind != "integrity_stop":
            raise error

    async def _stop(self, error: SpendError) -> None:
        """Stop the pilot (sticky) before `error` is raised; a failed stop is recorded on
        the error (``lookup_stop_failed`` and its cause), never dropped."""
        self._stopped = self._stopped or error.code
        self._terminal = self._terminal or "lookup_slot_terminal"
        with anyio.CancelScope(shield=True):
            try:
                await self._permits.stop(error.code)
            except Exception as exc:  # kept as the stop cause
                error.stop_code, error.stop_cause = "lookup_stop_failed", exc
