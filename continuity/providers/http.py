"""Real model endpoints over httpx: streaming SSE, bounded retries, per-model slots.

A `HttpProvider` sends one streaming POST per request and turns the server-sent events
into the harness's provider events. The wire formats live in subclasses
(`continuity.providers.openai`, `continuity.providers.anthropic`); this module holds
what they share:

- **credentials** are read lazily, on the first request, from an explicit JSON file
  ``{"api_key": "..."}`` (never from the environment), so guards that refuse a run fire
  before the file is ever opened;
- **retries** are bounded and happen only before a request is admitted: on a connection
  that never reached the server, and on 429/5xx answers (honouring ``Retry-After`` and
  ``retry-after-ms``). Once a 200 response starts streaming, a failure is reported, never
  retried, because the request may already be billed. One exception: a 200 stream that
  ends before its first event is asked once more without streaming, because
  llama-cpp-python says why (a request over the context window, a chat template that
  failed) only in a non-streamed answer. Every attempt, that one included, is in the
  run's attempt log (`continuity.providers.attempts`);
- **timeouts**: ``spec.timeout`` (``--request-timeout``, default 30 minutes) is the
  longest wait for the server's next bytes, the first ones included, so a slow local
  prefill can finish. A request that times out is ``provider_timeout`` and is never
  re-sent by the client (the server may still be working on it);
- **output caps**: the cap goes in the field each server honours (the wire formats), and
  is checked twice: a stream with more output pieces than the cap allows tokens (every
  piece carries at least one) is stopped, and a reply whose reported output is over the
  cap fails; both are ``provider_output_cap_ignored``, which stops admission;
- **refusals** keep the server's own message (`continuity.providers.refusals`); a
  request over the context window is ``provider_context_exceeded``, with its size;
- **stop classes**: 401/403 is ``provider_auth_failed`` and a quota or billing refusal
  ``provider_quota_exhausted``; both make the invocation admit no new live turn;
- **concurrency** is limited per model across processes with lock-file slots;
- **usage** is normalised to `continuity.messages.Usage` (cached input counted
  once) and the model identity the server returned is kept on the `Completed` event;
- **the cost cap**: with ``spec.cost_account`` every attempt is held in the run's
  account before it is sent, released when nothing can have been billed, settled from
  the completed stream's usage, and retained otherwise (`continuity.providers.costcap`).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any

import anyio
import httpx
import msgspec

from continuity.errors import EmptyStream, ProviderError
from continuity.messages import ModelRequest
from continuity.providers.attempts import log_attempt
from continuity.providers.costcap import CallHolds, HoldingAccount
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.protocol import Completed, ProviderEvent, TextDelta, ToolCallEvent
from continuity.providers.refusals import (
    context_refusal,
    is_context_error,
    refusal,
    server_message,
)
from continuity.providers.transport import (
    CountedEvents,
    load_api_key,
    model_slot,
    observed,
    parse_arguments,
    retry_delay,
    sse_events,
)

__all__ = [
    "RETRY_STATUSES",
    "HttpProvider",
    "load_api_key",
    "model_slot",
    "parse_arguments",
    "retry_delay",
    "sse_events",
]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})


class HttpProvider:
    """The shared streaming client. Subclasses define `path`, `headers`, `payload` and
    `events` (the wire format)."""

    path = ""

    def __init__(self, spec: EndpointSpec, *, transport: httpx.AsyncBaseTransport | None = None):
        self.spec = spec
        self.name = spec.provider_name
        self.model = spec.model
        self.url = spec.base_url.rstrip("/") + self.path
        self.attempts: list[int] = []  # HTTP status of every attempt, for receipts
        self._api_key: str | None = None
        self._cost: HoldingAccount | None = None
        self._transport = transport
        self._client = httpx.AsyncClient(
            transport=transport, timeout=httpx.Timeout(spec.timeout, connect=10.0)
        )

    async def __aenter__(self) -> HttpProvider:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()
        if self._cost is not None:
            self._cost.close()
            self._cost = None

    def api_key(self) -> str:
        if self._api_key is None:
            self._api_key = load_api_key(self.spec.credentials_path)
        return self._api_key

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def events(self, stream: AsyncIterator[tuple[str, str]]) -> AsyncIterator[ProviderEvent]:
        raise NotImplementedError

    def holds(self, request: ModelRequest) -> CallHolds | None:
        """The cost-cap holds of one request, when the run has a cost cap."""
        if self.spec.cost_account is None:
            return None
        if self._cost is None:
            from continuity.providers.shared_accounts import open_account

            self._cost = open_account(self.spec.cost_account, self.spec.cost_invocation)
        ref = self.spec.catalog_ref or self.model
        return self._cost.call(ref, request, self.spec.max_output_tokens)

    async def _open(self, body: bytes, spend: CallHolds | None = None) -> httpx.Response:
        """POST until a 200 arrives, retrying only where nothing can have been billed
        (each attempt held first under a cost cap, and released when it was not)."""
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self.headers(),
        }
        for attempt in range(self.spec.max_retries + 1):
            request = self._client.build_request("POST", self.url, content=body, headers=headers)
            if spend is not None:
                spend.before_send(body)  # persisted, or cost_cap_reached: nothing is sent
            try:
                response = await self._client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                self._attempt(body, "connect_failed", attempt)
                if spend is not None:
                    spend.not_billed("unsent")
                if attempt == self.spec.max_retries:
                    raise ProviderError(
                        f"cannot connect after {attempt + 1} attempts: {exc}",
                        code="provider_unavailable",
                        location=self.url,
                    ) from None
                await anyio.sleep(retry_delay(httpx.Headers(), attempt))
                continue
            except httpx.TimeoutException:  # sent, and the server said nothing in time
                self._attempt(body, "timeout", attempt)
                raise self._timed_out(len(body)) from None
            except httpx.HTTPError as exc:  # the request may have reached the server
                self._attempt(body, "send_failed", attempt)
                raise ProviderError(
                    f"the request failed after it was sent (not retried): {exc!r}",
                    code="provider_unavailable",
                    location=self.url,
                ) from None
            self._attempt(body, f"http_{response.status_code}", attempt)
            if response.status_code == 200:
                return response
            body_bytes = await response.aread()
            await response.aclose()
            if spend is not None:
                spend.not_billed(f"http_{response.status_code}")
            error = refusal(response.status_code, body_bytes, self.url, len(body))
            retry = (
                response.status_code in RETRY_STATUSES
                and error.code in ("provider_rate_limited", "provider_unavailable")
                and attempt < self.spec.max_retries
            )
            if not retry:
                raise error
            delay = retry_delay(response.headers, attempt)
            if delay > self.spec.max_retry_after:
                raise ProviderError(
                    f"HTTP {response.status_code}: the server asks to wait {delay:.0f} s, "
                    f"more than the {self.spec.max_retry_after:.0f} s allowed",
                    code=error.code,
                    location=self.url,
                )
            await anyio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, body: bytes, outcome: str, retry: int) -> None:
        """Count one HTTP attempt (its status, 0 for none) and log it to the run's
        attempt log, when there is one (`continuity.providers.attempts`)."""
        if outcome != "empty_stream":  # a note on the attempt before it, not a send
            self.attempts.append(int(outcome[5:]) if outcome.startswith("http_") else 0)
        if self.spec.attempt_log is not None:
            log_attempt(self.spec.attempt_log, self.url, self.model, body, outcome, retry)

    def _timed_out(self, size: int) -> ProviderError:
        return ProviderError(
            f"the server sent nothing for {self.spec.timeout:.0f} s (--request-timeout) on a "
            f"request of {size:,} bytes; it may still be working on it. The request was not "
            "re-sent; a rerun sends it again (raise --request-timeout for a slow local model)",
            code="provider_timeout",
            location=self.url,
        )

    def count_output(self, piece: str) -> None:
        """Count one streamed piece of output text. Servers stream text one generation
        step a piece or coarser, so each non-empty piece carries at least one token, and
        more pieces than the output cap (with `_PIECE_SLACK` to spare) prove the server
        ignores the cap: the stream is stopped there (``provider_output_cap_ignored``).
        Tool-call arguments are not counted: a server's tool parser may split them
        finer than tokens (the reply's reported usage still checks them)."""
        state = _STREAM.get(None)
        if not piece or state is None:
            return
        state.pieces += 1
        if state.pieces > self.spec.max_output_tokens + _PIECE_SLACK:
            raise self._cap_ignored(f"more than {state.pieces - 1:,} text pieces streamed")

    def reported_error(self, error: Any) -> ProviderError:
        """An error the stream itself reported (after the 200): a size refusal is
        ``provider_context_exceeded``, a quota refusal ``provider_quota_exhausted``,
        anything else ``provider_stream_interrupted``; the server's words are kept."""
        encoded = msgspec.json.encode({"error": error})
        message = server_message(encoded)
        if is_context_error(encoded):
            state = _STREAM.get(None)
            return context_refusal(message, self.url, state.request_bytes if state else 0)
        code = str(error.get("code") or "") if isinstance(error, dict) else ""
        kind = "provider_quota_exhausted" if "quota" in code else "provider_stream_interrupted"
        return ProviderError(
            f"the stream reported an error: {message}", code=kind, location=self.url
        )

    def _cap_ignored(self, seen: str) -> ProviderError:
        if self._cost is not None:  # holds assume output stops at the cap: not here
            self._cost.stop(f"provider_output_cap_ignored: {seen}")
        return ProviderError(
            f"the server ignores the output cap: asked for at most "
            f"{self.spec.max_output_tokens:,} tokens, {seen}. The run stops, and this "
            "endpoint's output cap counts as unenforced",
            code="provider_output_cap_ignored",
            location=self.url,
        )

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        body = msgspec.json.encode(self.payload(request))
        return self.stream_body(body, spend=self.holds(request))

    async def stream_body(
        self,
        body: bytes,
        observe: Callable[[str, str], None] | None = None,
        *,
        spend: CallHolds | None = None,
    ) -> AsyncIterator[ProviderEvent]:
        """Send `body` (a serialized `payload`) and stream its events; `observe` sees
        every raw server-sent event ``(event, data)`` before it is parsed (the spend
        guard reads raw usage there, never the normalised one). With `spend`, the
        completed stream settles its hold and anything else retains it.

        A stream that ends before its first event is asked once more without streaming
        (when nothing observes the raw events): llama-cpp-python reports why (a request
        over the context window) only there. The second send is logged as a retry."""
        async with model_slot(
            self.spec.slots_dir, f"{self.url} {self.model}", self.spec.concurrency
        ):
            try:
                async for event in self._streamed(body, observe, spend):
                    yield event
            except EmptyStream:
                async for event in self._reasked(body, spend):
                    yield event

    async def _streamed(
        self, body: bytes, observe: Callable[[str, str], None] | None, spend: CallHolds | None
    ) -> AsyncIterator[ProviderEvent]:
        """One streamed attempt (after `_open`'s retries); `EmptyStream` when the
        server closed it before any event and nothing observes the raw events."""
        try:
            response = await self._open(body, spend)
        except BaseException:
            if spend is not None:
                spend.close("send_failed")
            raise
        # This stream's own counts: one provider may stream several requests at once.
        _STREAM.set(_StreamState(request_bytes=len(body)))
        raw = CountedEvents(sse_events(response))
        try:
            async for event in self.events(raw if observe is None else observed(raw, observe)):
                if isinstance(event, Completed):
                    self._settle(event, spend)
                yield event
        except ProviderError as error:
            if error.code == "provider_stream_interrupted" and not raw.seen and observe is None:
                self._attempt(body, "empty_stream", 0)
                raise EmptyStream from None
            raise
        except httpx.TimeoutException:
            raise self._timed_out(len(body)) from None
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"the stream broke after the request was admitted (not retried): {exc!r}",
                code="provider_stream_interrupted",
                location=self.url,
            ) from None
        except (msgspec.MsgspecError, ValueError, KeyError, TypeError) as exc:
            raise ProviderError(
                f"unreadable stream event: {exc!r}",
                code="provider_stream_invalid",
                location=self.url,
            ) from None
        finally:
            if spend is not None:
                spend.close("stream_lost")  # retained unless settled above
            await response.aclose()

    def _settle(self, event: Completed, spend: CallHolds | None) -> None:
        """Settle a completed call's hold from its usage, then check the usage against
        the output cap (a reply over it is ``provider_output_cap_ignored``)."""
        if spend is not None:
            if event.usage_reported:
                spend.settle(event.usage)
            else:  # nothing says what was billed: the hold stays counted
                spend.close("usage_unreported")
        if event.usage_reported and event.usage.output > self.spec.max_output_tokens:
            raise self._cap_ignored(f"the reply used {event.usage.output:,}")

    async def _reasked(self, body: bytes, spend: CallHolds | None) -> AsyncIterator[ProviderEvent]:
        """Send `body` again without streaming and turn the one document into events;
        the server's refusal, if it refuses, is the error."""
        document = msgspec.json.decode(body)
        document["stream"] = False
        document.pop("stream_options", None)
        single = msgspec.json.encode(document)
        if spend is not None:
            spend.before_send(single)
        # A fresh connection: the server may have dropped the one the stream used
        # while the pool still holds it.
        fresh = httpx.AsyncClient(
            transport=self._transport, timeout=httpx.Timeout(self.spec.timeout, connect=10.0)
        )
        try:
            async with fresh:
                response = await fresh.post(
                    self.url,
                    content=single,
                    headers={"content-type": "application/json", **self.headers()},
                )
        except httpx.TimeoutException:
            self._attempt(single, "timeout", 1)
            if spend is not None:
                spend.close("timeout")
            raise self._timed_out(len(single)) from None
        except httpx.HTTPError as exc:
            self._attempt(single, "send_failed", 1)
            if spend is not None:
                spend.close("send_failed")
            raise ProviderError(
                f"the stream ended before any event, and asking again failed: {exc!r}",
                code="provider_stream_interrupted",
                location=self.url,
            ) from None
        self._attempt(single, f"http_{response.status_code}", 1)
        if response.status_code != 200:
            if spend is not None:
                spend.not_billed(f"http_{response.status_code}")
            raise refusal(response.status_code, response.content, self.url, len(body))
        try:
            completed = self.completed_document(msgspec.json.decode(response.content))
        except (msgspec.MsgspecError, ValueError, KeyError, TypeError) as exc:
            if spend is not None:
                spend.close("document_invalid")
            raise ProviderError(
                f"unreadable response document: {exc!r}",
                code="provider_stream_invalid",
                location=self.url,
            ) from None
        self._settle(completed, spend)
        if completed.message.text:
            yield TextDelta(completed.message.text)
        for call in completed.message.tool_calls:
            yield ToolCallEvent(call)
        yield completed

    def completed_document(self, document: dict[str, Any]) -> Completed:
        """A non-streamed response document as the completed message (the wire format's)."""
        raise NotImplementedError


# Pieces a server may stream beyond one a token (a role or an empty closing delta counts
# nowhere; this is headroom for servers that split a step's text in two).
_PIECE_SLACK = 8


class _StreamState:
    """The stream in progress in this task: its body size and output pieces so far."""

    def __init__(self, *, request_bytes: int) -> None:
        self.request_bytes = request_bytes
        self.pieces = 0


_STREAM: contextvars.ContextVar[_StreamState] = contextvars.ContextVar("continuity_stream")
