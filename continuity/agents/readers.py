"""Who answers an outside agent's probe: the scripted reader offline, the plan's reader
in real mode (CAP/0).

At the probe the model proxy forwards the agent's requests (`continuity.servers.
model_proxy`, forward mode) to a `SampleReader`, one per sample:

- `OfflineReader` declines (``ANSWER: UNKNOWN`` where the owner turn asks for the
  line): offline the accuracy means nothing; the boundary verdicts and the availability
  do.
- `RealReader` sends each request to the plan's reader endpoint through the guarded
  real mode's machinery: the call cache (`continuity.providers.cache`) (a rerun
  replays a call it already made), the invocation's ledger (the sample's probe turn is
  admitted as one live turn, on its first call; a stop rule fired refuses it) and the
  run's cost cap. The agent's request is translated to the benchmark's `ModelRequest`
  (`model_request`): its system text, its user and assistant turns, and its tool calls
  and results paired in order with fresh call ids. The probe is recall-only: the reader
  is offered no tool, except in the store arm, where the agent offers
  ConversationHistory and the reader gets its real definition (under that name; the
  proxy names each call as the agent offers the tool). As the reference lookup loop is,
  it is bounded: the reader's calls are passed on in at most the frozen policy's call
  budget plus one requests of a sample; after that the tool stays offered (an API such
  as Anthropic's refuses a history of tool calls without it) but further calls are
  dropped, and the reply's text is the answer. A call of a tool the reader was not
  offered is dropped too (it could only fail at the agent). A request naming the model
  the agent switched to (``cont-switch``) goes to the plan's ``--switch-model``
  (`switch`), with its own call-cache keys. A failed call is kept (`error`), and the
  sample is never sealed: the runner stops the run as ``run_incomplete`` or
  ``run_stopped``.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, Protocol

import msgspec

from continuity.errors import ContinuityError
from continuity.lookup.policy import load_policy
from continuity.lookup.reader import LookupReader
from continuity.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCallRequest,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from continuity.probes.protocol import ANSWER_LINE_INSTRUCTION, PROBE_INSTRUCTION, unknown_reply
from continuity.providers.cache import CachedProvider
from continuity.providers.endpoint import CallReceipt, EndpointSpec, RealBinding
from continuity.providers.protocol import complete
from continuity.providers.real import make_provider
from continuity.providers.scripted import scripted_summary
from continuity.providers.shared_ledger import open_ledger
from continuity.servers.history import DESCRIPTION, HISTORY_TOOL, INPUT_SCHEMA
from continuity.servers.model_proxy import SWITCH, ReaderReply
from continuity.servers.proxy_script import WireMessage, WireRequest, map_tool
from continuity.store import Store

__all__ = [
    "HISTORY_DEFINITION",
    "NO_RESULT",
    "OfflineReader",
    "RealReader",
    "SampleReader",
    "model_request",
]

# The result of a call the agent's context holds no result for (a provider refuses a
# call without one).
NO_RESULT = "(no result in the agent's context)"
# ConversationHistory as the store arm's real reader is offered it: the MCP server's own.
HISTORY_DEFINITION = ToolDefinition(
    name=HISTORY_TOOL, description=DESCRIPTION, input_schema=INPUT_SCHEMA
)


@functools.cache
def _store_budget() -> int:
    """The frozen lookup policy's call budget: read and checked once a process, not on
    every forwarded request."""
    return load_policy().calls


class SampleReader(Protocol):
    """The reader of one sample: called per forwarded request; what it called after."""

    error: ContinuityError | None

    async def __call__(self, request: WireRequest) -> str | ReaderReply: ...

    async def summarize(self, request: WireRequest) -> str: ...

    def calls(self) -> list[CallReceipt]: ...

    def replayed(self) -> list[str]: ...


class OfflineReader:
    """The scripted reader of an offline run: it knows nothing, and declines in the
    form the owner's last turn asks for (`continuity.probes.protocol.unknown_reply`).

    Offered ConversationHistory (the store arm), it first runs the reference harness's
    scripted lookup mechanics (`continuity.lookup.reader.LookupReader`: search with the
    question's last words, get every hit, within the frozen policy's call budget) as
    tool calls through the agent, then declines: it never reads what it fetched, so
    the lookup shows the store reached the reader, not what it knew."""

    error: ContinuityError | None = None

    def __init__(self) -> None:
        self._lookup: LookupReader | None = None

    async def __call__(self, request: WireRequest) -> str | ReaderReply:
        users = [m.text for m in request.messages if m.role == "user"]
        turn = users[-1] if users else ""
        if self._lookup is None and map_tool(HISTORY_TOOL, request.tools) is None:
            return unknown_reply(turn)
        if self._lookup is None:  # the probe turn's first request offering the store
            question = turn
            for instruction in (ANSWER_LINE_INSTRUCTION, PROBE_INSTRUCTION):
                question = question.replace(f"\n\n{instruction}", "")
            budget = _store_budget()
            self._lookup = LookupReader(question, call_budget=budget, decline=unknown_reply(turn))
        step = self._lookup(_lookup_request(request))
        return ReaderReply(
            text=step.text, calls=[(c.name, dict(c.arguments)) for c in step.tool_calls]
        )

    async def summarize(self, request: WireRequest) -> str:
        """The agent's compaction request, answered as the reference harness's scripted
        summarizer answers its own (`continuity.providers.scripted.ScriptedSummarizer`):
        the fixed sections and a content-free note of how much it was asked to
        summarize. Offline nothing is extracted, so what the agent dropped is gone."""
        return scripted_summary(sum(len(m.text) for m in request.messages))

    def calls(self) -> list[CallReceipt]:
        return []

    def replayed(self) -> list[str]:
        return []


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(text or "{}")
    except msgspec.DecodeError:
        return {"arguments": text}
    return value if isinstance(value, dict) else {"arguments": value}


def _turns(messages: tuple[WireMessage, ...]) -> list[Message]:
    """The agent's turns as benchmark messages: each tool result answers the earliest
    unanswered call of the assistant turn before it (a result with no call left is
    shown to the reader as a user turn); a call left unanswered gets `NO_RESULT`. A call
    of the agent's ConversationHistory (under any MCP prefix) carries the tool's own
    name, as the reader was offered it."""
    out: list[Message] = []
    pending: list[ToolCallRequest] = []

    def settle() -> None:
        out.extend(
            ToolResultMessage(call_id=c.call_id, tool=c.name, text=NO_RESULT) for c in pending
        )
        pending.clear()

    for number, message in enumerate(messages):
        if message.role == "tool":
            if pending:
                call = pending.pop(0)
                out.append(
                    ToolResultMessage(call_id=call.call_id, tool=call.name, text=message.text)
                )
            else:
                out.append(UserMessage(text=f"[tool result]\n{message.text}"))
            continue
        settle()
        if message.role == "assistant":
            pending = [
                ToolCallRequest(
                    call_id=f"call_{number}_{i}",
                    name=HISTORY_TOOL if map_tool(HISTORY_TOOL, (name,)) else name,
                    arguments=_arguments(arguments),
                )
                for i, (name, arguments) in enumerate(message.tool_calls)
            ]
            out.append(AssistantMessage(text=message.text, tool_calls=tuple(pending)))
        else:
            out.append(UserMessage(text=message.text))
    settle()
    return out


def _lookup_request(request: WireRequest) -> ModelRequest:
    """The agent's request as the scripted lookup mechanics read it."""
    return ModelRequest(
        session_id="outside-agent",
        provider="scripted",
        model="scripted-reader",
        system=request.system,
        messages=tuple(_turns(request.messages)),
    )


def model_request(
    request: WireRequest, spec: EndpointSpec, tools: tuple[ToolDefinition, ...] = ()
) -> ModelRequest:
    """The agent's request as the reader endpoint gets it, offered `tools` (module doc)."""
    return ModelRequest(
        session_id="outside-agent",
        provider=spec.kind,
        model=spec.model,
        system=request.system,
        messages=tuple(_turns(request.messages)),
        tools=tools,
    )


class RealReader:
    """The plan's reader behind the call cache, the ledger and the cost cap (module doc);
    `switch` is the model an agent's switch arm switches to, when the plan names one.

    It is called on the proxy's own event loop thread, so each call opens (and closes)
    its own ledger connection, store and HTTP client there."""

    def __init__(self, binding: RealBinding, switch: RealBinding | None = None) -> None:
        self.binding = binding
        self.switch = switch
        self.admitted = False
        self.error: ContinuityError | None = None
        self._calls: list[CallReceipt] = []
        self._replayed: list[str] = []
        self._store_rounds = 0  # requests of this sample the store was offered in

    async def __call__(self, request: WireRequest) -> ReaderReply:
        offered = map_tool(HISTORY_TOOL, request.tools) is not None
        looking = offered and self._store_rounds <= _store_budget()
        self._store_rounds += offered
        switched = request.model == SWITCH and self.switch is not None
        done = await self._send(
            request,
            role="answer",
            tools=(HISTORY_DEFINITION,) if offered else (),
            binding=self.switch if switched else None,
        )
        # Only calls of the one tool offered, and only within the bound (module doc).
        calls = [(c.name, dict(c.arguments)) for c in done.tool_calls if c.name == HISTORY_TOOL]
        return ReaderReply(text=done.text, calls=calls if looking else [])

    async def summarize(self, request: WireRequest) -> str:
        """The agent's own compaction request: a ``summary`` call, as the reference
        harness's mid-trace compaction makes one (gated: no live turn admits it)."""
        return (await self._send(request, role="summary")).text

    async def _send(
        self,
        request: WireRequest,
        *,
        role: Literal["answer", "summary"],
        tools: tuple[ToolDefinition, ...] = (),
        binding: RealBinding | None = None,
    ) -> AssistantMessage:
        b = binding or self.binding
        ledger = open_ledger(b.ledger) if b.ledger else None
        inner = make_provider(b.endpoint)
        try:
            if ledger is not None and not self.admitted and role == "answer":
                ledger.admit()  # the sample's probe turn: one live turn
            self.admitted = self.admitted or role == "answer"
            cached = CachedProvider(
                inner,
                b.endpoint,
                Store(b.store_root),
                repeat=b.repeat,
                role=role,
                ledger=ledger,
                explain_log=b.explain_log,
                gate=role == "summary",
            )
            try:
                done = await complete(cached, model_request(request, b.endpoint, tools))
            finally:
                billed = b.endpoint.catalog_ref if b is not self.binding else ""
                self._calls += [
                    msgspec.structs.replace(r, billed_as=billed) if billed else r
                    for r in cached.receipts
                ]
                self._replayed += cached.replayed
        except ContinuityError as error:
            self.error = self.error or error
            raise
        finally:
            await inner.aclose()
            if ledger is not None:
                ledger.close()
        return done.message

    def calls(self) -> list[CallReceipt]:
        return list(self._calls)

    def replayed(self) -> list[str]:
        return list(self._replayed)
