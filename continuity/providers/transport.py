"""The transport pieces real endpoints share: credentials, retry delays, server-sent
events, per-model slots and tool-call arguments (`continuity.providers.http` streams
with them)."""

from __future__ import annotations

import contextlib
import email.utils
import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from continuity.digest import value_digest
from continuity.errors import ProviderError
from continuity.inputs import read_user_bytes

# A credentials file holds one key; anything this large is not one.
CREDENTIALS_MAX_BYTES = 64 * 1024

__all__ = [
    "CREDENTIALS_MAX_BYTES",
    "CountedEvents",
    "load_api_key",
    "model_slot",
    "observed",
    "parse_arguments",
    "retry_delay",
    "sse_events",
]


class _Credentials(msgspec.Struct, frozen=True):
    api_key: str


def load_api_key(path: str) -> str:
    """The API key from a credentials file ``{"api_key": "..."}`` (may be empty for a
    local server that needs none).

    Raises:
        ProviderError: ``credentials_invalid`` when the file is unreadable or malformed.
        InputError: ``input_not_a_file`` (a device, a FIFO, a directory),
            ``input_too_large`` (over `CREDENTIALS_MAX_BYTES`).
    """
    if not path:
        return ""  # a loopback endpoint run without a credentials file
    try:
        data = read_user_bytes(Path(path), limit=CREDENTIALS_MAX_BYTES, what="the credentials file")
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


async def observed(
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


class CountedEvents:
    """Server-sent events, counted as they pass (`seen`)."""

    def __init__(self, events: AsyncIterator[tuple[str, str]]) -> None:
        self._events = events
        self.seen = 0

    def __aiter__(self) -> CountedEvents:
        return self

    async def __anext__(self) -> tuple[str, str]:
        item = await self._events.__anext__()
        self.seen += 1
        return item
