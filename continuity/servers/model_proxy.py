"""The model proxy: continuity plays the model for an outside agent (CAP/0, v0).

An outside agent's model base URL points here: ``http://127.0.0.1:<port>/<token>/v1``
(`ModelProxy.token` is unguessable; any other path is 404 and a Host that is not
loopback is 403; both before the body is read, which is then held to 32 MiB and 64
levels of nesting). It serves three wire formats, each streamed (``"stream": true``) or
as one document, and ``GET /v1/models``:

- OpenAI Chat Completions, ``POST /v1/chat/completions`` (`continuity.servers.proxy_chat`);
- OpenAI Responses, ``POST /v1/responses`` (`continuity.servers.proxy_responses`; the
  agent sends its whole input: ``previous_response_id`` is refused);
- Anthropic Messages, ``POST /v1/messages`` (`continuity.servers.proxy_anthropic`),
  the ``anthropic`` SDK's path with the base URL ``http://127.0.0.1:<port>/<token>``;
  ``/v1/v1/messages`` too, for an agent handed the ``/v1`` base URL as it is.

Each request is read into the same format-neutral `WireRequest`, so everything below
(classes, checks, digests) is the same whatever format carried it: one conversation
sent in two formats has the same digests and replay signature. A refusal keeps the
status and ``code`` in every format, in the body shape its SDK parses.

Each request is classified by its model alias first (``cont-main``, ``cont-aux``),
else by shape: it offers tools and extends (or starts) the main conversation -> main.

- **script** mode (the replay): a main request gets the trace's next assistant turn
  (`continuity.servers.proxy_script`), its tool names mapped to the tools the agent
  offers (the one equal to the trace's name, or ending with ``_<name>``), with fresh
  call ids; the request is checked first (owner text, tool results, steers after the
  last result). How each steer reached the agent adapts the script (`steer_delivered`:
  a queued steer is expected as an owner turn of its own, a rejected one not at all),
  and a request setting ``parallel_tool_calls: false`` gets a step's several calls one
  per reply; otherwise a step's calls go out in one reply, which the agent may run
  concurrently. An aux request gets a canned empty answer (offline, recorded). A
  request it cannot classify is refused with ``replay_unclassified_call``, never
  guessed; a reply whose tool the agent does not offer is ``tools_not_offered``.
- **forward** mode (the probe): the request goes to `reader` (the scripted reader
  offline; the plan's reader through the guarded real mode and call cache otherwise),
  which may answer with tool calls (`ReaderReply`: the store arm's reader looks the
  conversation up), each named as the agent offers the tool.
- **compaction** (the agent's own, v1): while a compaction window is open
  (`open_compaction`: ``manual`` around ``session/compact``, where every request is the
  compaction's; ``auto`` for a whole sample of an agent that compacts on its own, where
  every request offering no tools is), requests are the compaction's (role ``compaction``) and
  go to `summarizer`; the texts it returned are `summaries`, and every later main
  request's fact says whether it carries one (``summary_carried``, up to whitespace).
  After a model switch the agent names `SWITCH`, which is a main alias like `MAIN`.

Every request leaves a content-free `RequestFact`: role, mode, model, message count,
characters and estimated tokens (``ceil(chars / 4)``), the tools offered, a digest of
its normalised messages, its relation to the previous main request (``first``,
``extends``, ``shrank``, ``reset``), the scripted turn id and the problems found.
`problems` holds ``(code, detail)`` pairs for the run to act on. The replay signature
(`replay_signature`) is the digest of the main script requests' digests, so two
re-replays that sent the same conversation have equal signatures; `volatile` regexes
(timestamps, nonces) are blanked before hashing. With `markers` (the trace's owner
texts), each fact counts its earlier user messages that each hold exactly one of them
(``transcript``): owner turns carried as turns, without their content (a memory note
that gathers several owner texts in one message is not a carried turn).
"""

from __future__ import annotations

import collections
import json
import re
import secrets
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import msgspec

from continuity.digest import value_digest
from continuity.errors import ContinuityError
from continuity.nesting import MAX_DEPTH, too_deep
from continuity.servers.asgi import (
    Receive,
    Send,
    lifespan,
    read_body,
    send_events,
    send_json,
    too_large,
)
from continuity.servers.proxy_anthropic import MESSAGES
from continuity.servers.proxy_chat import CHAT, ProxyFormat
from continuity.servers.proxy_responses import RESPONSES
from continuity.servers.proxy_script import (
    ProxyStep,
    WireRequest,
    check_request,
    drop_steer,
    map_tool,
    one_call_each,
    queue_steer,
    request_holds,
)
from continuity.servers.wire_model import model_list

__all__ = [
    "AUX",
    "MAIN",
    "SWITCH",
    "ModelProxy",
    "Reader",
    "ReaderReply",
    "RequestFact",
    "Summarizer",
    "replay_signature",
]

MAIN, AUX = "cont-main", "cont-aux"
SWITCH = "cont-switch"  # the second model a switch names (a main alias)


class ReaderReply(msgspec.Struct, frozen=True):
    """A reader's answer with tool calls (the store arm's reader looks records up):
    its text and each call as (the tool's name as the reader knows it, arguments)."""

    text: str
    calls: list[tuple[str, dict[str, Any]]] = []


Reader = Callable[[WireRequest], Awaitable["str | ReaderReply"]]
Summarizer = Callable[[WireRequest], Awaitable[str]]
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_ROUTES: dict[str, ProxyFormat] = {
    "/chat/completions": CHAT,
    "/responses": RESPONSES,
    "/messages": MESSAGES,
    "/v1/messages": MESSAGES,  # the anthropic SDK on the base URL ending in /v1
}


class RequestFact(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    role: Literal["main", "aux", "unclassified", "compaction"]
    mode: Literal["script", "forward", "canned", "refused", "summary"]
    model: str
    messages: int
    chars: int
    input_tokens: int
    tools_offered: list[str]
    digest: str
    prefix: Literal["first", "extends", "shrank", "reset"]
    step: str | None = None
    problems: list[str] = msgspec.field(default_factory=list)
    tool_bytes_seen: int = 0
    tool_bytes_sent: int = 0
    output_tokens: int = 0
    transcript: int = 0  # how many `markers` (owner texts) its earlier user messages hold
    reader_error: str | None = None  # forward mode: the reader's failure (the agent got 502)
    summary_carried: bool = False  # a main request holding a text `summarizer` returned


def replay_signature(facts: Sequence[RequestFact]) -> str:
    """The digest of the main script requests' digests, in order."""
    return value_digest(
        (
            "cap-replay-signature",
            [f.digest for f in facts if f.role == "main" and f.mode == "script"],
        )
    )


class ModelProxy:
    """The ASGI app (module doc)."""

    def __init__(
        self,
        script: Sequence[ProxyStep],
        *,
        reader: Reader | None = None,
        token: str | None = None,
        volatile: Sequence[str] = (),
        markers: Sequence[str] = (),
        summarizer: Summarizer | None = None,
    ) -> None:
        self.token = token or secrets.token_urlsafe(18)
        self.summarizer = summarizer
        self.summaries: list[str] = []  # the texts returned to compaction requests
        self.asked: list[str] = []  # the tools the reader called, as it named them
        self._compacting: Literal["manual", "auto", ""] = ""
        self.markers = tuple(markers)
        self.mode: Literal["script", "forward"] = "script"
        self.reader = reader
        self.facts: list[RequestFact] = []
        # the forwarded requests themselves (in memory only: the probe's context, for
        # the availability analysis; never written out)
        self.forwarded: list[WireRequest] = []
        # the reader's text returned to each forwarded main request, in order (the
        # probe's answer must be the last of its turn's)
        self.replies: list[str] = []
        self.problems: list[tuple[str, str]] = []
        self._steps = collections.deque(script)
        self._volatile = [re.compile(p) for p in volatile]
        self._last_main: list[tuple[str, str]] | None = None
        self._probe_first = False  # forward mode, until the probe's main request
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Scripted turns not yet requested."""
        return len(self._steps)

    def forward(self) -> None:
        """Switch to forward mode: the probe's requests go to the reader. The probe
        turn's first request that offers tools is its main request even when it does not
        extend the replay's last one (a new session, a restarted agent's rebuilt context)."""
        with self._lock:
            self.mode = "forward"
            self._probe_first = True

    def open_compaction(self, kind: Literal["manual", "auto", ""]) -> None:
        """Open (``manual``, ``auto``) or close (``""``) the compaction window (module
        doc)."""
        with self._lock:
            self._compacting = kind

    def steer_delivered(self, text: str, delivery: str) -> None:
        """Adapt the script to how the steer `text` reached the agent (from any thread,
        before its held call is released): ``queued`` makes it an owner turn of its own
        (`continuity.servers.proxy_script.queue_steer`); ``rejected`` or ``none`` means it
        never reaches the agent and ``late`` (no acknowledgement in time) that it may not,
        so no request is checked for it (a label, never an exclusion); ``injected`` keeps
        it expected after the held call's result."""
        with self._lock:
            if delivery == "queued":
                self._steps = collections.deque(queue_steer(list(self._steps), text))
            elif delivery in ("rejected", "none", "late"):
                self._steps = collections.deque(drop_steer(list(self._steps), text))

    def _next_step(self, request: WireRequest) -> ProxyStep | None:
        """The next scripted step (under the lock); a request that asks for one tool call
        per reply (``parallel_tool_calls: false``) gets a step's calls one by one."""
        if not self._steps:
            return None
        step = self._steps.popleft()
        if request.parallel_tool_calls is False and len(step.tool_calls) > 1:
            following = self._steps.popleft() if self._steps else None
            step, *rest = one_call_each(step, following)
            self._steps.extendleft(reversed(rest))
        return step

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        host = dict(scope.get("headers") or []).get(b"host", b"").decode(errors="replace")
        if host.rsplit(":", 1)[0] not in _LOOPBACK:
            await _json(send, 403, {"error": {"message": "not a loopback host"}})
            return
        base = f"/{self.token}/v1"
        path = str(scope["path"])
        if not path.startswith(base + "/"):
            await _json(send, 404, {"error": {"message": "no such path"}})
            return
        route = path[len(base) :]
        if scope["method"] == "GET" and route == "/models":
            await _json(send, 200, _models())
            return
        wire = _ROUTES.get(route) if scope["method"] == "POST" else None
        if wire is None:
            await _json(send, 404, {"error": {"message": f"no route {route}"}})
            return
        await self._serve(wire, receive, send)

    async def _serve(self, wire: ProxyFormat, receive: Receive, send: Send) -> None:
        """Read, answer and send one request in the format `wire`."""
        raw = await read_body(receive)
        if raw is None:
            await _json(send, 413, wire.error(413, "proxy_request_invalid", too_large()))
            return
        if too_deep(raw):
            detail = f"the body nests deeper than {MAX_DEPTH} levels"
            await _json(send, 400, wire.error(400, "proxy_request_invalid", detail))
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            request = wire.parse(body)
        except ValueError as exc:
            detail = f"not a {wire.what}: {exc}"
            await _json(send, 400, wire.error(400, "proxy_request_invalid", detail))
            return
        status, reply = await self._answer(request)
        if status != 200:
            await _json(send, status, wire.error(status, reply["code"], reply["message"]))
        elif request.stream:
            await send_events(send, wire.events(request.model, reply))
        else:
            await _json(send, 200, wire.document(request.model, reply))

    def _normal(self, request: WireRequest) -> list[tuple[str, str]]:
        def blank(text: str) -> str:
            for pattern in self._volatile:
                text = pattern.sub("<volatile>", text)
            return text

        head = [("system", blank(request.system))]
        return head + [(m.role, blank(m.text + json.dumps(m.tool_calls))) for m in request.messages]

    def _role(self, request: WireRequest, normal: list[tuple[str, str]]) -> str:
        if self._compacting == "manual" or (self._compacting == "auto" and not request.tools):
            return "compaction"
        if request.model in (MAIN, SWITCH):
            return "main"
        if request.model == AUX:
            return "aux"
        previous = self._last_main
        extends = previous is None or normal[: len(previous)] == previous
        if request.tools and (extends or self._probe_first):
            self._probe_first = False
            return "main"
        return "unclassified"

    def _carries_summary(self, request: WireRequest) -> bool:
        """Whether `request` holds a text the summarizer returned (up to whitespace)."""
        return any(request_holds(request, s) for s in self.summaries)

    async def _answer(self, request: WireRequest) -> tuple[int, dict[str, Any]]:
        normal = self._normal(request)
        with self._lock:
            index = len(self.facts)
            role = self._role(request, normal)
            previous = self._last_main
            if role == "main":
                self._last_main = normal
            step = self._next_step(request) if role == "main" and self.mode == "script" else None
        if previous is None or role != "main":
            prefix = "first"
        elif normal[: len(previous)] == previous:
            prefix = "extends"
        else:
            prefix = "shrank" if len(normal) < len(previous) else "reset"
        chars = sum(len(text) for _, text in normal)
        carried = role == "main" and self._carries_summary(request)
        earlier = [m.text for m in request.messages[:-1] if m.role == "user"]
        transcript = sum(1 for text in earlier if sum(k in text for k in self.markers) == 1)
        fact: dict[str, Any] = {
            "index": index,
            "role": role,
            "model": request.model,
            "messages": len(normal),
            "chars": chars,
            "input_tokens": -(-chars // 4),
            "tools_offered": list(request.tools),
            "digest": value_digest(("cap-request", normal)),
            "prefix": prefix,
            "transcript": transcript,
            "summary_carried": carried,
        }
        status, reply = await self._reply(request, role, step, fact)
        self.facts.append(msgspec.convert(fact, RequestFact))
        if status == 200:
            reply["usage"] = (fact["input_tokens"], fact.get("output_tokens", 0))
        return status, reply

    def _problem(self, fact: dict[str, Any], code: str, detail: str) -> None:
        fact.setdefault("problems", []).append(code)
        self.problems.append((code, detail))

    async def _reply(
        self, request: WireRequest, role: str, step: ProxyStep | None, fact: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        if role == "unclassified":  # reported, never guessed (the probe's too)
            fact["mode"] = "refused"
            self._problem(fact, "replay_unclassified_call", f"request {fact['index']}")
            return 400, _refusal("replay_unclassified_call", "a call the replay cannot classify")
        if role == "compaction":
            return await self._summarize(request, fact)
        if role == "aux" and self.mode == "script":
            fact["mode"] = "canned"
            return 200, {"text": "", "calls": []}
        if self.mode == "forward":
            fact["mode"] = "forward"
            if role == "main":
                self.forwarded.append(request)
            if self.reader is None:
                return 503, _refusal("proxy_no_reader", "no reader in forward mode")
            try:
                answer = await self.reader(request)
            except ContinuityError as error:  # the reader keeps it; the agent sees a 502
                fact["reader_error"] = error.code
                return 502, _refusal(error.code, "the reader endpoint failed")
            return self._forwarded(request, role, fact, answer)
        fact["mode"] = "script"
        if step is None:
            self._problem(fact, "replay_fidelity_failed", "more main requests than turns")
            return 400, _refusal("replay_fidelity_failed", "the replay has no turn left")
        fact["step"] = step.turn_id
        problems, fact["tool_bytes_seen"], fact["tool_bytes_sent"] = check_request(step, request)
        for detail in problems:
            self._problem(fact, "replay_fidelity_failed", detail)
        calls, missing = self._map_calls(request, fact, step.tool_calls, step.turn_id)
        if missing is not None:
            return 400, _refusal("tools_not_offered", f"the agent offers no tool {missing}")
        fact["output_tokens"] = -(-len(step.text) // 4)
        return 200, {"text": step.text, "calls": calls}

    def _map_calls(
        self,
        request: WireRequest,
        fact: dict[str, Any],
        calls: Sequence[tuple[str, dict[str, Any]]],
        where: str,
    ) -> tuple[list[tuple[str, str, dict[str, Any]]], str | None]:
        """The calls of a reply (the script's or the reader's) with fresh ids, each named
        as the agent offers the tool; and the first tool it does not offer (recorded as
        ``tools_not_offered`` at `where`), the calls before it only, or None."""
        mapped: list[tuple[str, str, dict[str, Any]]] = []
        for number, (name, arguments) in enumerate(calls):
            offered = map_tool(name, request.tools)
            if offered is None:
                self._problem(fact, "tools_not_offered", f"{name} at {where}")
                return mapped, name
            mapped.append((f"call_{fact['index']}_{number}", offered, arguments))
        return mapped, None

    def _forwarded(
        self, request: WireRequest, role: str, fact: dict[str, Any], answer: str | ReaderReply
    ) -> tuple[int, dict[str, Any]]:
        """The reader's answer to a forwarded request: its text, and any tool calls it
        asked for, each named as the agent offers it (a tool the agent does not offer
        is ``tools_not_offered``). Only a reply without calls is the model's final text."""
        reply = answer if isinstance(answer, ReaderReply) else ReaderReply(text=answer)
        calls, missing = self._map_calls(request, fact, reply.calls, "the probe")
        self.asked += [name for name, _ in reply.calls[: len(calls)]]
        if missing is not None:
            return 400, _refusal("tools_not_offered", f"the agent offers no tool {missing}")
        fact["output_tokens"] = -(-len(reply.text) // 4)
        if role == "main" and not calls:
            self.replies.append(reply.text)
        return 200, {"text": reply.text, "calls": calls}

    async def _summarize(
        self, request: WireRequest, fact: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """A compaction request: answered by the summarizer, its text kept."""
        fact["mode"] = "summary"
        if self.summarizer is None:
            return 503, _refusal("proxy_no_reader", "no summarizer for the agent's compaction")
        try:
            text = await self.summarizer(request)
        except ContinuityError as error:
            fact["reader_error"] = error.code
            return 502, _refusal(error.code, "the summarizer endpoint failed")
        fact["output_tokens"] = -(-len(text) // 4)
        self.summaries.append(text)
        return 200, {"text": text, "calls": []}


def _refusal(code: str, message: str) -> dict[str, Any]:
    """A refusal, before its format shapes it."""
    return {"code": code, "message": message}


def _models() -> dict[str, Any]:
    listed = model_list(MAIN)
    for alias in (AUX, SWITCH):
        listed["data"].append({**listed["data"][0], "id": alias, "display_name": alias})
    return listed


async def _json(send: Send, status: int, value: dict[str, Any]) -> None:
    body = json.dumps(value).encode()
    await send_json(send, status, body, [(b"content-length", str(len(body)).encode())])
