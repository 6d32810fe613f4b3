"""Who extracts: the scripted extractor offline, the plan's endpoint in real mode, and
the output-cap enforcement class of each.

The **scripted extractor** is a test double for the model only. It reads its own
request (`continuity.memory.ledger_prompt.excerpt_delta`: one entry per offered
record, its first line as the text) and, by design, answers the second stage with an
empty delta, so every offline preparation exercises the analysis-only path. A `Fault`
makes it fail one way, through the real validation and accounting path:
``invalid_json`` (``--fail-upkeep``), ``empty_output``, ``output_overrun`` (a reply
over the 4,096-token cap), ``input_overrun`` (it reports more input than was
reserved), ``stream_overrun`` (it streams past the cap: the stream is aborted),
``unavailable`` (the endpoint fails after dispatch) and ``hang`` (it never answers:
the stage's parent kills the child, and the acknowledgement is lost).

**Enforcement classes** (`enforcement_class`): ``request_cap`` for a vendor API whose
request carries an output cap it enforces (Anthropic's ``max_tokens``, OpenAI's
``max_completion_tokens`` / ``max_output_tokens`` at api.openai.com); ``advisory_cap``
for any other OpenAI- or Anthropic-compatible server (the cap is sent, but a local
server may ignore it); ``scripted_cap`` offline. ``--require-request-cap`` admits only
``request_cap`` and ``scripted_cap``; any other adapter is skipped before dispatch.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import anyio

from continuity.errors import ProviderError
from continuity.memory.ledger import DELTA_SCHEMA
from continuity.memory.ledger_prompt import EMPTY_DELTA, excerpt_delta, offered_parts
from continuity.memory.upkeep import ENFORCING
from continuity.messages import ModelRequest, Usage, UserMessage, wire_payload
from continuity.preparation.receipts import Fault, Script
from continuity.providers.protocol import Completed, ProviderEvent
from continuity.providers.scripted import ScriptedProvider, ScriptedStep

__all__ = [
    "EMPTY_SECOND_STAGE",
    "ENFORCING",
    "ScriptedExtractor",
    "enforcement_class",
    "salient_delta",
]

# The scripted extractor answers this stage with an empty delta, on purpose.
EMPTY_SECOND_STAGE = 2
_VENDOR_HOSTS = {
    "anthropic": "api.anthropic.com",
    "openai-chat": "api.openai.com",
    "openai-responses": "api.openai.com",
}


def enforcement_class(kind: str, base_url: str) -> str:
    """How an extractor adapter bounds its output (see the module doc)."""
    if kind == "scripted":
        return "scripted_cap"
    host = urlsplit(base_url).hostname or ""
    return "request_cap" if _VENDOR_HOSTS.get(kind) == host else "advisory_cap"


_REFERENCE = re.compile(r"\b(?=[A-Z0-9-]*[A-Z]{2})(?=[A-Z0-9-]*[0-9]{3})[A-Z0-9]+(?:-[A-Z0-9]+)+\b")
_AMOUNT = re.compile(r"\b[0-9]+[.,][0-9]{2}\b")
_SALIENT_BYTES = 200


def salient_delta(request_text: str, *, limit: int = 24) -> str:
    """A faux extractor's answer that keeps every offered line holding a reference
    (letters and digits joined by hyphens, such as ``AB-1234-CD``) or a decimal amount:
    owner lines as owner constraints, tool lines as key identifiers, in source order. It
    reads only its own request; like `excerpt_delta`, its labels mean nothing."""
    entries: list[dict[str, object]] = []
    seen: set[str] = set()
    for ordinal, _, kind, body in offered_parts(request_text):
        for line in body.splitlines():
            line = line.strip()
            if not (_REFERENCE.search(line) or _AMOUNT.search(line)):
                continue
            text = line.encode("utf-8")[:_SALIENT_BYTES].decode("utf-8", errors="ignore")
            if text in seen or len(entries) == limit:
                continue
            seen.add(text)
            kind_name = "owner_constraint" if kind == "owner" else "key_identifier"
            entries.append({"kind": kind_name, "text": text, "status": None, "cites": [ordinal]})
    return json.dumps({"schema": DELTA_SCHEMA, "entries": entries}, ensure_ascii=False)


class ScriptedExtractor(ScriptedProvider):
    """The offline extractor for stage `stage` (see the module doc). `script` picks its
    answer (`excerpt_delta` or `salient_delta`); `dump`, when given, receives every
    request's wire payload."""

    def __init__(
        self,
        stage: int,
        *,
        fault: Fault | None,
        name: str,
        model: str,
        reservation: int,
        script: Script = "excerpt",
        dump: str | None = None,
    ) -> None:
        super().__init__((), name=name, model=model)
        self.stage = stage
        self.fault = fault
        self.reservation = reservation
        self.script = script
        self.dump = dump

    def _answer(self, request: ModelRequest) -> str:
        text = "".join(m.text for m in request.messages if isinstance(m, UserMessage))
        if self.fault == "invalid_json":
            return '{"schema": "continuity-ledger-delta-v1", "entries": [ {"kind": '
        if self.fault == "empty_output":
            return ""
        if self.fault == "output_overrun":
            return EMPTY_DELTA + " " * (4_096 * 4 + 64)
        if self.stage == EMPTY_SECOND_STAGE:
            return EMPTY_DELTA
        return salient_delta(text) if self.script == "salient" else excerpt_delta(text)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self.dump is not None:
            with open(self.dump, "ab") as handle:
                handle.write(wire_payload(request) + b"\n")
        if self.fault == "hang":
            await anyio.sleep_forever()
        if self.fault == "unavailable":
            raise ProviderError(
                "the scripted extractor's endpoint failed after dispatch",
                code="provider_unavailable",
                location=f"{self.name}:{self.model}",
            )
        if self.fault == "stream_overrun":
            self.push(ScriptedStep(text="x" * (4_096 * 4 + 4_096)))
        else:
            self.push(ScriptedStep(text=self._answer(request)))
        async for event in super().stream(request):
            if self.fault == "input_overrun" and isinstance(event, Completed):
                usage = Usage(input=self.reservation + 1, output=event.usage.output)
                event = Completed(
                    message=event.message,
                    usage=usage,
                    stop_reason=event.stop_reason,
                    provider=event.provider,
                    model=event.model,
                )
            yield event
