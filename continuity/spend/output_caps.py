"""Which output cap each back end's requests carry, read from the exact bytes its client
sends (seed 000: the Codex serializer's test "captures exactly one attempted send ... no
max-output field is serialized").

For every back end the project speaks (`BACKENDS`), `cap_evidence` builds that back
end's real client (the one a run or a guard sends through), has it send one probe
request whose output cap is the sentinel `SENTINEL` (12,345 tokens) through an
in-process transport that never forwards (`httpx.MockTransport`: no socket is opened,
no credentials file is read, and the capture answers HTTP 400 so nothing streams), and
records the body bytes it was sent. The evidence is the top-level fields of that body
whose value is the sentinel: none means the back end's requests carry no output cap.

- ``anthropic`` (``https://api.anthropic.com``), ``openai-chat`` and
  ``openai-responses`` (``https://api.openai.com/v1``): the client a real run sends
  through (`continuity.providers.real.make_provider`);
- ``openai-codex`` (Sol's contract URL, the subscription backend): the client a guard
  for Sol's contract sends through (`continuity.spend.settle.guarded_client`).

`continuity.plan.readiness` takes its output-cap verdict from this evidence, never from
a list of its own: a back end whose bytes carry no cap has an unsupported output cap.
Whether a back end *enforces* a cap it is sent is another question (the vendor hosts,
`continuity.preparation.extractor.enforcement_class`); this module only says what is
sent. `tests/spend/test_output_caps.py` checks each back end's bytes.

Codes (`SpendError`): ``output_cap_probe_failed`` (a client did not send exactly one
probe request to the capture).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import msgspec

from continuity.errors import ProviderError, SpendError
from continuity.messages import ModelRequest, UserMessage
from continuity.providers.endpoint import EndpointKind, EndpointSpec
from continuity.providers.http import HttpProvider
from continuity.providers.real import make_provider
from continuity.spend.contract import SOL_CONTRACT
from continuity.spend.settle import guarded_client

__all__ = ["BACKENDS", "SENTINEL", "CapEvidence", "cap_evidence", "sent_body"]

SENTINEL = 12_345  # the probe's output cap: a value no other field of its body holds
_PROBE = ModelRequest(
    session_id="output-cap-probe",
    provider="probe",
    model="probe",
    system="Answer in one word.",
    messages=(UserMessage("Which field carries the output cap?"),),
)
_TIMEOUT = 30.0
_REFUSAL = {"error": {"message": "an output-cap probe: captured, never forwarded"}}


class CapEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What one back end's probe request carried: `fields` are the top-level body
    fields holding `SENTINEL` (empty: the requests carry no output cap)."""

    backend: str
    url: str
    subscription: bool  # billed against a subscription's quota, not per token
    fields: tuple[str, ...]
    body_sha256: str


_Client = Callable[[httpx.AsyncBaseTransport], HttpProvider]


@dataclass(frozen=True)
class _Backend:
    url: str
    subscription: bool
    client: _Client


def _vendor(kind: EndpointKind, url: str, model: str) -> _Client:
    spec = EndpointSpec(
        kind=kind,
        base_url=url,
        model=model,
        credentials_path="",  # no key is sent, no file read
        max_output_tokens=SENTINEL,
        max_retries=0,
        timeout=_TIMEOUT,
    )
    return lambda transport: make_provider(spec, transport=transport)


def _codex(transport: httpx.AsyncBaseTransport) -> HttpProvider:
    return guarded_client(
        SOL_CONTRACT,
        credentials_path="",
        max_output_tokens=SENTINEL,
        timeout=_TIMEOUT,
        transport=transport,
    )


_BACKENDS = {
    "anthropic": _Backend(
        "https://api.anthropic.com",
        False,
        _vendor("anthropic", "https://api.anthropic.com", "claude-probe"),
    ),
    "openai-chat": _Backend(
        "https://api.openai.com/v1",
        False,
        _vendor("openai-chat", "https://api.openai.com/v1", "gpt-probe"),
    ),
    "openai-responses": _Backend(
        "https://api.openai.com/v1",
        False,
        _vendor("openai-responses", "https://api.openai.com/v1", "gpt-probe"),
    ),
    "openai-codex": _Backend(SOL_CONTRACT.base_url, True, _codex),
}
BACKENDS: tuple[str, ...] = tuple(_BACKENDS)


def sent_body(backend: str) -> bytes:
    """The exact body bytes `backend`'s client sends for the probe request (module doc).

    Raises:
        KeyError: `backend` is not one of `BACKENDS`.
        SpendError: ``output_cap_probe_failed``.
    """
    make = _BACKENDS[backend].client
    sent: list[bytes] = []

    def capture(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(400, json=_REFUSAL)

    async def probe() -> None:
        client = make(httpx.MockTransport(capture))
        try:
            async for _ in client.stream(_PROBE):
                pass
        except ProviderError:
            pass  # the capture's refusal
        finally:
            await client.aclose()

    # its own thread and event loop, whatever the caller is running
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, probe()).result()
    if len(sent) != 1:
        raise SpendError(
            f"the {backend} client sent {len(sent)} probe requests, not one",
            code="output_cap_probe_failed",
            location=backend,
        )
    return sent[0]


@functools.cache
def cap_evidence(backend: str) -> CapEvidence:
    """The output-cap evidence of `backend` (one of `BACKENDS`), from its probe's bytes.

    Raises:
        KeyError: `backend` is not one of `BACKENDS`.
        SpendError: ``output_cap_probe_failed``.
    """
    body = sent_body(backend)
    document = msgspec.json.decode(body)
    fields = tuple(
        sorted(
            name
            for name, value in document.items()
            if type(value) is int and value == SENTINEL  # a bool is no cap
        )
    )
    return CapEvidence(
        backend=backend,
        url=_BACKENDS[backend].url,
        subscription=_BACKENDS[backend].subscription,
        fields=fields,
        body_sha256=hashlib.sha256(body).hexdigest(),
    )
