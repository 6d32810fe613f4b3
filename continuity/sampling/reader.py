"""The reader step of the probe child: who answers the probe, and what it was sent.

One reader per probe, chosen once by `choose_reader` from the request's mode:

- offline recall: `ScriptedReader` over `scripted_steps`, which declines in the form the probe
  turn asks for (``ANSWER: UNKNOWN`` or ``UNKNOWN``: `continuity.probes.protocol`) and,
  when ConversationHistory is offered, first searches and gets one record, so the
  retrieval path runs (its accuracy means nothing);
- offline lookup: `ScriptedReader` over `continuity.lookup.reader.LookupReader`, the
  scripted lookup reader under the probe's call budget;
- real: `RealReader`, the plan's endpoint behind the call cache (`RealCalls`), whose
  receipts (one per call, made or replayed) go into the evidence.

Every reader keeps the requests it was sent (`ProbeReader.seen`) and, with
``dump_requests``, appends each request's wire payload to that file: offline readers as
each request arrives, the real reader after the turn. `recording_toolbox` is the MCP
client that records every ConversationHistory call.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from continuity.errors import ToolError
from continuity.lookup.reader import HISTORY_TOOL, UNKNOWN_ANSWER, LookupReader
from continuity.lookup.state import ReaderStop
from continuity.messages import ModelRequest, ToolCallRequest, ToolResultMessage, wire_payload
from continuity.probes.protocol import probe_turn_text, unknown_reply
from continuity.providers.endpoint import CallReceipt, RealBinding
from continuity.providers.protocol import Provider
from continuity.providers.scripted import ScriptedProvider, ScriptedStep, Step
from continuity.sampling.receipts import HistoryCall, ProbeRequest

if TYPE_CHECKING:
    from continuity.harness.toolbox import McpToolbox
    from continuity.providers.cache import CachedProvider, Ledger
    from continuity.providers.http import HttpProvider

__all__ = [
    "HISTORY_TOOL",
    "UNKNOWN_ANSWER",
    "ProbeReader",
    "RealCalls",
    "RealReader",
    "RequestLog",
    "ScriptedReader",
    "choose_reader",
    "recording_toolbox",
    "scripted_steps",
]


class RequestLog:
    """The requests a scripted reader was sent, in order, each also appended to the
    dump file (one wire payload a line) when there is one."""

    def __init__(self, dump: Path | None) -> None:
        self.seen: list[ModelRequest] = []
        self.dump = dump

    def record(self, request: ModelRequest) -> None:
        self.seen.append(request)
        if self.dump is not None:
            with open(self.dump, "ab") as handle:
                handle.write(wire_payload(request) + b"\n")


def scripted_steps(
    probe_text: str, history_tool: bool, log: RequestLog, decline: str = UNKNOWN_ANSWER
) -> list[Step]:
    """The scripted recall reader: search, get the first hit, then decline (`decline`:
    ``UNKNOWN``, or ``ANSWER: UNKNOWN`` where the probe turn asks for an answer line)."""

    def answer(request: ModelRequest) -> ScriptedStep:
        log.record(request)
        return ScriptedStep(text=decline)

    if not history_tool:
        return [answer]
    words = " ".join(probe_text.replace(":", " ").split()[-8:])

    def search(request: ModelRequest) -> ScriptedStep:
        log.record(request)
        call = ToolCallRequest(
            "probe-1", HISTORY_TOOL, {"action": "search", "query": words, "limit": 5}
        )
        return ScriptedStep(text="", tool_calls=(call,))

    def get_first(request: ModelRequest) -> ScriptedStep:
        last = request.messages[-1]
        hits = []
        if isinstance(last, ToolResultMessage) and not last.is_error:
            with contextlib.suppress(ValueError):
                hits = json.loads(last.text).get("hits", [])
        if not hits:
            return answer(request)
        log.record(request)
        call = ToolCallRequest(
            "probe-2", HISTORY_TOOL, {"action": "get", "id": hits[0]["packed_id"]}
        )
        return ScriptedStep(text="", tool_calls=(call,))

    def after_get(request: ModelRequest) -> ScriptedStep:
        return answer(request)

    return [search, get_first, after_get]


class ProbeReader:
    """The reader of one probe: its provider, the requests it was sent, and what the
    evidence takes from it once the turn is over."""

    provider: Provider
    seen: list[ModelRequest]

    @property
    def stopped(self) -> ReaderStop | None:
        """Why the scripted lookup reader stopped (None for every other reader)."""
        return None

    def finish(self) -> None:
        """After the turn (and its tools) closed: nothing, unless the reader dumps late."""

    def probe_input_tokens(self) -> int:
        """The input tokens of the reader's first request."""
        raise NotImplementedError

    def calls(self) -> list[CallReceipt]:
        """One receipt per real model call (none offline)."""
        return []


class ScriptedReader(ProbeReader):
    """An offline reader: a scripted provider posing as the reader's model."""

    def __init__(
        self,
        steps: list[Step],
        log: RequestLog,
        *,
        name: str,
        model: str,
        lookup: LookupReader | None = None,
    ) -> None:
        self.scripted = ScriptedProvider(steps, name=name, model=model)
        self.provider = self.scripted
        self.seen = log.seen
        self.lookup = lookup

    @property
    def stopped(self) -> ReaderStop | None:
        return self.lookup.stopped if self.lookup is not None else None

    def probe_input_tokens(self) -> int:
        requests = self.scripted.requests
        return requests[0].usage.total_input if requests else 0


class RealCalls:
    """Real mode: one HTTP client shared by the reader and the summarizer, each behind
    the call cache; the invocation's ledger admits the live turn first."""

    def __init__(self, binding: RealBinding) -> None:
        from continuity.providers.real import make_provider
        from continuity.providers.shared_ledger import open_ledger
        from continuity.store import Store

        self.binding = binding
        self.ledger: Ledger | None = open_ledger(binding.ledger) if binding.ledger else None
        self.store = Store(binding.store_root)
        self.inner: HttpProvider = make_provider(binding.endpoint)
        self.wrapped: list[CachedProvider] = []

    @classmethod
    def open(cls, binding: RealBinding) -> RealCalls:
        calls = cls(binding)
        if calls.ledger is not None:
            try:
                calls.ledger.admit()  # raises admission_stopped: nothing else happens
            except BaseException:  # any failure: the ledger is closed, then it propagates
                calls.ledger.close()
                raise
        return calls

    def provider(
        self, role: Literal["answer", "summary"], probe: str | None = None
    ) -> CachedProvider:
        from continuity.providers.cache import CachedProvider

        wrapped = CachedProvider(
            self.inner,
            self.binding.endpoint,
            self.store,
            repeat=self.binding.repeat,
            role=role,
            ledger=self.ledger,
            explain_log=self.binding.explain_log,
            probe=probe,  # a probe's own summaries: once per probe, never shared
        )
        self.wrapped.append(wrapped)
        return wrapped

    def receipts(self) -> list[CallReceipt]:
        return [r for w in self.wrapped for r in w.receipts]

    def replayed(self) -> list[str]:
        """The keys of the calls replayed from the call cache, in call order per role."""
        return [k for w in self.wrapped for k in w.replayed]

    async def aclose(self) -> None:
        await self.inner.aclose()
        if self.ledger is not None:
            self.ledger.close()


class RealReader(ProbeReader):
    """The plan's endpoint behind the call cache; its requests are dumped after the turn."""

    def __init__(self, real: RealCalls, dump: Path | None) -> None:
        self.real = real
        self.cached = real.provider("answer")
        self.provider = self.cached
        self.seen = self.cached.requests
        self.dump = dump

    def finish(self) -> None:
        if self.dump is not None:
            with open(self.dump, "ab") as handle:
                handle.writelines(wire_payload(r) + b"\n" for r in self.seen)

    def probe_input_tokens(self) -> int:
        answers = [c for c in self.real.receipts() if c.role == "answer"]
        return answers[0].usage.total_input if answers else 0

    def calls(self) -> list[CallReceipt]:
        return self.real.receipts()


def choose_reader(
    request: ProbeRequest,
    real: RealCalls | None,
    *,
    history_tool: bool,
    name: str,
    model: str,
) -> ProbeReader:
    """The probe's reader, by mode: real, offline lookup, or offline recall."""
    dump = Path(request.dump_requests) if request.dump_requests else None
    if real is not None:
        return RealReader(real, dump)
    log = RequestLog(dump)
    decline = unknown_reply(probe_turn_text(request.probe_text, request.category))
    lookup = request.lookup
    if lookup is not None:
        reader = LookupReader(request.probe_text, call_budget=lookup.call_budget, decline=decline)

        def lookup_step(step_request: ModelRequest) -> ScriptedStep:
            log.record(step_request)
            return reader(step_request)

        steps: list[Step] = [lookup_step] * (lookup.call_budget + 3)
        return ScriptedReader(steps, log, name=name, model=model, lookup=reader)
    steps = scripted_steps(request.probe_text, history_tool, log, decline)
    return ScriptedReader(steps, log, name=name, model=model)


def recording_toolbox(
    url: str, calls: list[HistoryCall], after_call: Callable[[str], None] | None = None
) -> McpToolbox:
    """An MCP client that records every ConversationHistory call: action, outcome, bytes.
    The MCP SDK is imported here, so tool-free probe children never pay for it."""
    from continuity.harness.toolbox import McpToolbox

    class RecordingToolbox(McpToolbox):
        async def call(self, call: ToolCallRequest) -> str:
            action = str(call.arguments.get("action", "?"))
            try:
                text = await super().call(call)
            except ToolError as error:
                status: Literal["unavailable", "invalid"] = (
                    "unavailable" if error.code == "tool_server_unavailable" else "invalid"
                )
                calls.append(HistoryCall(action, status, 0))
                raise
            calls.append(HistoryCall(action, "succeeded", len(text.encode("utf-8"))))
            if after_call is not None:
                after_call(text)
            return text

    return RecordingToolbox(url)
