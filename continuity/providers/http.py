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
  retried, because the request may already be billed;
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

import contextlib
import email.utils
import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import httpx
import msgspec

from continuity.digest import value_digest
from continuity.errors import ProviderError
from continuity.messages import ModelRequest
from continuity.providers.costcap import CallHolds, CostCap
from continuity.providers.endpoint import EndpointSpec
from continuity.providers.protocol import Completed, ProviderEvent

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


class _Credentials(msgspec.Struct, frozen=True):
    api_key: str


def load_api_key(path: str) -> str:
    """The API key from a credentials file ``{"api_key": "..."}`` (may be empty for a
    local server that needs none).

    Raises:
        ProviderError: ``credentials_invalid`` when the file is unreadable or malformed.
    """
    try:
        data = Path(path).read_bytes()
        return msgspec.json.decode(data, type=_Credentials).api_key
    except OSError as exc:
        raise ProviderError(
            f"cannot read the credentials file: {exc.strerror}",
            code="credentials_invalid",
            location=path,
        ) from None
    except msgspec.MsgspecError as exc:
        raise ProviderError(
            f'the credentials file must be JSON {{"api_key": "..."}}: {exc}',
            code="credentials_invalid",
            location=path,
        ) from None


def retry_delay(headers: httpx.Headers, attempt: int) -> float:
    """Seconds to wait before retry `attempt` (0-based): the server's ``retry-after-ms``
    or ``Retry-After`` (seconds or an HTTP date) when given, else exponential backoff."""
    if "retry-after-ms" in headers:
        with contextlib.suppress(ValueError):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
    value = headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if value else None
            if when is not None:
                return max(0.0, when.timestamp() - time.time())
    return float(min(0.5 * 2**attempt, 8.0))


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events as ``(event, data)`` pairs (``message`` when unnamed)."""
    event, data = "", list[str]()
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", list[str]()
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield event or "message", "\n".join(data)


@contextlib.asynccontextmanager
async def model_slot(directory: str | None, model: str, limit: int) -> AsyncIterator[None]:
    """Hold one of `limit` slots for `model`, shared by every process using `directory`
    (``flock`` on slot files, released by the kernel if a process dies)."""
    if directory is None or limit < 1:
        yield
        return
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    tag = value_digest(("model-slot", model))[:16]
    while True:
        for index in range(limit):
            fd = os.open(folder / f"{tag}-{index}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        await anyio.sleep(0.02)


def _refusal(status: int, body: bytes, where: str) -> ProviderError:
    text = body.decode("utf-8", "replace")[:500]
    lowered = text.lower()
    if status in (401, 403):
        return ProviderError(
            f"HTTP {status}: the endpoint refused the credentials: {text}",
            code="provider_auth_failed",
            location=where,
        )
    if status == 402 or "insufficient_quota" in lowered or "credit balance" in lowered:
        return ProviderError(
            f"HTTP {status}: quota or billing refusal: {text}",
            code="provider_quota_exhausted",
            location=where,
        )
    if status == 429:
        return ProviderError(
            f"HTTP 429 after every allowed retry: {text}",
            code="provider_rate_limited",
            location=where,
        )
    if status >= 500:
        return ProviderError(
            f"HTTP {status} after every allowed retry: {text}",
            code="provider_unavailable",
            location=where,
        )
    return ProviderError(
        f"HTTP {status}: the endpoint rejected the request: {text}",
        code="provider_request_rejected",
        location=where,
    )


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
        self._cost: CostCap | None = None
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
            self._cost = CostCap.open(self.spec.cost_account, self.spec.cost_invocation)
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
                self.attempts.append(0)
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
            except httpx.HTTPError as exc:  # the request may have reached the server
                self.attempts.append(0)
                raise ProviderError(
                    f"the request failed after it was sent (not retried): {exc!r}",
                    code="provider_unavailable",
                    location=self.url,
                ) from None
            self.attempts.append(response.status_code)
            if response.status_code == 200:
                return response
            body_bytes = await response.aread()
            await response.aclose()
            if spend is not None:
                spend.not_billed(f"http_{response.status_code}")
            error = _refusal(response.status_code, body_bytes, self.url)
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
        completed stream settles its hold and anything else retains it."""
        async with model_slot(
            self.spec.slots_dir, f"{self.url} {self.model}", self.spec.concurrency
        ):
            try:
                response = await self._open(body, spend)
            except BaseException:
                if spend is not None:
                    spend.close("send_failed")
                raise
            try:
                raw = sse_events(response)
                async for event in self.events(raw if observe is None else _tee(raw, observe)):
                    if spend is not None and isinstance(event, Completed):
                        if event.usage_reported:
                            spend.settle(event.usage)
                        else:  # nothing says what was billed: the hold stays counted
                            spend.close("usage_unreported")
                    yield event
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


async def _tee(
    events: AsyncIterator[tuple[str, str]], observe: Callable[[str, str], None]
) -> AsyncIterator[tuple[str, str]]:
    async for event, data in events:
        observe(event, data)
        yield event, data


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments from their JSON text; malformed JSON is passed on (the tool
    reports the error to the model, as it would in a real harness)."""
    if not raw.strip():
        return {}
    try:
        value = msgspec.json.decode(raw)
    except msgspec.MsgspecError:
        return {"_unparsed_arguments": raw}
    return value if isinstance(value, dict) else {"_unparsed_arguments": raw}
