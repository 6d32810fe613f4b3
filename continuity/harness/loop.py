"""The agent loop: one owner turn = model requests and real tool calls until a reply.

Each request carries the session's context at the leaf. An assistant message with tool
calls is followed by one MCP call per tool call (results go to the session and the
tool-history sidecar); live input offered meanwhile is appended after the results, so
it reaches the next request. A message without tool calls ends the turn. The loop never
compacts: boundaries are separate operations (see the arms).

A durable steer (one drained from a `SteerInbox`) is delivered behind a ``steer``
marker entry naming its id, its text's digest and the request that consumes it, and is
recorded as consumed in the inbox only once the session holds it; a process restarted
by `continuity.harness.live` reconciles the inbox from those markers and continues an
open turn with `resume_turn`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from continuity.errors import HarnessError, ToolError
from continuity.harness.live_input import LiveInput
from continuity.harness.session import DurableSession, MessageEntry
from continuity.harness.steer_inbox import text_digest
from continuity.harness.tool_history import ToolHistory
from continuity.memory.history import CanonicalHistory
from continuity.memory.retained import RetainedStore
from continuity.messages import (
    AssistantMessage,
    Attribution,
    Message,
    ModelRequest,
    ToolCallRequest,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
    UserSource,
)
from continuity.providers.protocol import Provider, complete
from continuity.traces.tools import TOOLS

if TYPE_CHECKING:  # the MCP client is imported only where tools are offered
    from continuity.harness.toolbox import McpToolbox

__all__ = ["STEER_MARKER", "SYSTEM_PROMPT", "AgentLoop", "TurnReport"]

STEER_MARKER = "steer"  # the session's custom entry before a durable steer's message

SYSTEM_PROMPT = (
    "You are the owner's assistant. You help with their projects by reading email, chat, "
    "web pages, documents, calendars and parcel tracking through the tools offered, and "
    "you keep track of what was decided, sent, drafted and still open."
)


class TurnReport(msgspec.Struct, frozen=True):
    requests: int
    tool_calls: int
    live_inputs: int
    usage: Usage


class AgentLoop:
    """Runs owner turns against a provider with real MCP tools.

    Args:
        session, history, tool_history: the durable state the loop writes.
        toolbox: an open `McpToolbox`, or None for a tool-free harness.
        provider: the model; `model` is the identity requests are bound to.
        max_rounds: tool rounds allowed in one turn (a runaway guard).
        tool_errors: ``raise`` (replay: any failed call ends the run) or ``report`` (a
            probe turn: the model gets the error as the tool result, as in production).
    """

    def __init__(
        self,
        *,
        session: DurableSession,
        history: CanonicalHistory,
        tool_history: ToolHistory,
        toolbox: McpToolbox | None,
        provider: Provider,
        model: str,
        live_input: LiveInput | None = None,
        system: str = SYSTEM_PROMPT,
        max_rounds: int = 64,
        retained: RetainedStore | None = None,
        injected: Sequence[Message] = (),
        before_request: Callable[[], Awaitable[None]] | None = None,
        tool_errors: Literal["raise", "report"] = "raise",
    ) -> None:
        self.session = session
        self.history = history
        self.tool_history = tool_history
        self.toolbox = toolbox
        self.provider = provider
        self.model = model
        self.live_input = live_input or LiveInput()
        self.system = system
        self.max_rounds = max_rounds
        self.retained = retained
        self.injected = tuple(injected)
        self.before_request = before_request
        self.tool_errors = tool_errors

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        return self.toolbox.definitions if self.toolbox else ()

    def request(self) -> ModelRequest:
        return ModelRequest(
            session_id=self.session.header.session_id,
            provider=self.provider.name,
            model=self.model,
            system=self.system,
            messages=(*self.injected, *self.session.context()),
            tools=self.tools,
        )

    def add_user(self, message: UserMessage) -> None:
        entry = self.session.append_message(message)
        self.history.append(
            "user",
            message.text,
            attribution=message.attribution,
            source=message.source,
            entry_id=entry.id,
        )
        owner_turn = message.attribution == "owner" and message.source in ("owner", "steer")
        if self.retained is not None and owner_turn:
            self.retained.retain_owner(
                message.text,
                source="steer" if message.source == "steer" else "owner",
                entry_ref=entry.id,
            )

    async def run_turn(
        self, text: str, *, attribution: Attribution = "owner", source: UserSource = "owner"
    ) -> TurnReport:
        self.add_user(UserMessage(text=text, attribution=attribution, source=source))
        return await self.resume_turn()  # steers queued between turns ride with it

    async def resume_turn(self) -> TurnReport:
        """Continue a turn a restarted process found open (its owner message, results or
        steers written and no reply yet): steers still queued go first, then requests
        until a reply, as `run_turn` does after its owner message."""
        live = self._deliver_live()
        report = await self._requests()
        return TurnReport(
            report.requests, report.tool_calls, report.live_inputs + live, report.usage
        )

    def request_id(self) -> str:
        """The id of the next model request: the session's id and the request's ordinal
        among the session's model replies (stable across a restart, read from disk)."""
        replies = sum(
            1
            for e in self.session.entries
            if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        )
        return f"{self.session.header.session_id}/request-{replies + 1}"

    def _deliver_live(self) -> int:
        """Append the live input offered so far; a durable steer is preceded by its
        ``steer`` marker (id, text digest, consuming request) and then recorded as
        consumed in the inbox, so a restart never delivers it twice."""
        delivered = 0
        for offer in self.live_input.drain():
            delivered += 1
            request = self.request_id() if offer.steer_id is not None else ""
            if offer.steer_id is not None:
                self.session.append_custom(
                    STEER_MARKER,
                    {
                        "steer_id": offer.steer_id,
                        "sha256": text_digest(offer.text),
                        "request": request,
                    },
                )
            self.add_user(
                UserMessage(text=offer.text, attribution=offer.attribution, source="steer")
            )
            if offer.steer_id is not None:
                self.session.sync()  # the delivery is durable before the inbox says so
                self.live_input.consumed(offer, request)
        return delivered

    async def _requests(self) -> TurnReport:
        requests = calls = live = 0
        usage = Usage()
        while True:
            if requests and self.before_request is not None:
                await self.before_request()
            done = await complete(self.provider, self.request())
            requests += 1
            usage = usage + done.usage
            entry = self.session.append_message(
                done.message,
                provider=done.provider,
                model=done.model,
                usage=done.usage,
                stop_reason=done.stop_reason,
            )
            if done.message.text:
                self.history.append(
                    "assistant",
                    done.message.text,
                    attribution="host",
                    source="model",
                    entry_id=entry.id,
                )
            if not done.message.tool_calls:
                break
            if requests > self.max_rounds:
                raise HarnessError(
                    f"more than {self.max_rounds} tool rounds in one turn",
                    code="turn_round_limit",
                    location=self.session.path.name,
                )
            if self.toolbox is None:
                raise HarnessError(
                    "the model called a tool but none is offered",
                    code="tool_not_offered",
                    location=self.session.path.name,
                )
            for call in done.message.tool_calls:
                await self._call(call)
                calls += 1
            live += self._deliver_live()
        self.session.sync()
        return TurnReport(requests, calls, live, usage)

    async def _call(self, call: ToolCallRequest) -> None:
        """One MCP call and its result in the session (and the sidecar when it worked)."""
        assert self.toolbox is not None
        self.live_input.in_flight_call = call.call_id
        failed = False
        try:
            output = await self.toolbox.call(call)
        except ToolError as error:
            if self.tool_errors == "raise":
                raise
            output, failed = str(error), True  # the model sees the error result
        finally:
            self.live_input.in_flight_call = None
        result = self.session.append_message(
            ToolResultMessage(call_id=call.call_id, tool=call.name, text=output, is_error=failed)
        )
        if failed:
            return
        spec = TOOLS.get(call.name)
        kind = spec.kind if spec else "other"
        self.tool_history.record(call_id=call.call_id, tool=call.name, kind=kind, output=output)
        if self.retained is not None:
            self.retained.retain_tool_result(
                output, tool=call.name, tool_kind=kind, entry_ref=result.id
            )
