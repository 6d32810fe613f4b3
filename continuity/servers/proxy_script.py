"""The model proxy's script: a trace's assistant turns as replies for an outside agent,
and what each main request must carry (`continuity.servers.model_proxy`).

`proxy_script(trace)` gives one `ProxyStep` per assistant message of the trace, in
order: the reply (text and tool calls, by the trace's tool names), and the content the
request answered by it must contain, since the agent's own harness builds it: the owner
text of the turn (on the turn's first step), the tool results returned since the
previous step, and the steers delivered during those calls, after the last tool result
and in the user role (the outside counterpart of the replay's ``_expect_steers``).

`check_request` applies those expectations by containment (agents wrap user text and
may truncate tool output): each problem is a content-free sentence naming the turn id.
The tool results since the previous step are the request's last tool messages, in any
order (an agent running one reply's calls concurrently may append them as they end);
each is present when one of those messages holds the first 200 characters of its
output (as sent, JSON-escaped, or with whitespace collapsed), each message used once,
and the bytes it holds are recorded against the bytes sent (truncation is evidence, not
a failure).

The script adapts to what happens during the replay, always deterministically:

- `queue_steer`: a steer the agent took ``queued`` becomes an owner turn of its own. The
  request with the held call's result is answered by an interlude (no text, no call:
  the least the agent can be told, and it ends the turn), and the step that followed
  the steer in the trace answers the next request, which must carry the steer as user
  input after the last tool result.
- `drop_steer`: a steer that never reaches the agent (``rejected``, or an agent that
  takes none) is no longer expected.
- `one_call_each`: a request that sets ``parallel_tool_calls: false`` gets one tool
  call per reply: a step's calls are served one by one, in the trace's order, each
  further reply text-free, and the steers that arrived during a call are expected in
  the request after that call's result.

`wire_request` reads an OpenAI Chat Completions body into `WireRequest`: the system
text, each message's role and text in order, the assistant tool calls and the tool
names offered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

from continuity.traces.schema import (
    AssistantMessage,
    OwnerMessage,
    ReplayTrace,
    Steer,
    ToolResult,
    iter_turns,
)

__all__ = [
    "ProxyStep",
    "WireMessage",
    "WireRequest",
    "check_request",
    "drop_steer",
    "map_tool",
    "one_call_each",
    "proxy_script",
    "queue_steer",
    "request_holds",
    "wire_request",
]

_HEAD = 200  # a tool result is present when this much of its start is


class ProxyStep(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str
    text: str
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()  # (trace tool name, arguments)
    owner: str | None = None  # the owner text this request must carry (a turn's first step)
    results: tuple[str, ...] = ()  # tool outputs returned since the previous step
    steers: tuple[str, ...] = ()  # steer texts that must follow the last tool result
    # for each steer, the index of the previous step's call it arrived during (-1: none)
    during: tuple[int, ...] = ()
    interlude: bool = False  # the reply that ends a turn whose steer was queued


class WireMessage(msgspec.Struct, frozen=True):
    role: str
    text: str
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, arguments JSON)


class WireRequest(msgspec.Struct, frozen=True):
    model: str
    system: str
    messages: tuple[WireMessage, ...]
    tools: tuple[str, ...]
    stream: bool
    parallel_tool_calls: bool | None = None  # as the request set it (None: not set)


def proxy_script(trace: ReplayTrace) -> list[ProxyStep]:
    """One step per assistant message of `trace` (module doc)."""
    steps: list[ProxyStep] = []
    owner: str | None = None
    results: list[str] = []
    steers: list[Steer] = []
    calls: list[str] = []  # the call ids of the previous step, in order
    for _, _, turn in iter_turns(trace):
        if isinstance(turn, OwnerMessage):
            owner = turn.text
        elif isinstance(turn, ToolResult):
            results.append(turn.output)
        elif isinstance(turn, Steer):
            steers.append(turn)
        elif isinstance(turn, AssistantMessage):
            steps.append(
                ProxyStep(
                    turn_id=turn.turn_id,
                    text=turn.text,
                    tool_calls=tuple((c.tool, dict(c.arguments)) for c in turn.tool_calls),
                    owner=owner,
                    results=tuple(results),
                    steers=tuple(s.text for s in steers),
                    during=tuple(_index(calls, s.during_call) for s in steers),
                )
            )
            owner, results, steers = None, [], []
            calls = [c.call_id for c in turn.tool_calls]
    return steps


def _index(calls: list[str], call_id: str) -> int:
    return calls.index(call_id) if call_id in calls else -1


def _steers(step: ProxyStep) -> list[tuple[str, int]]:
    """Each steer of `step` with the index of the call it arrived during (-1: unknown)."""
    return [(s, step.during[n] if n < len(step.during) else -1) for n, s in enumerate(step.steers)]


def _with_steers(step: ProxyStep, pairs: Sequence[tuple[str, int]]) -> ProxyStep:
    return msgspec.structs.replace(
        step, steers=tuple(s for s, _ in pairs), during=tuple(d for _, d in pairs)
    )


def queue_steer(steps: list[ProxyStep], text: str) -> list[ProxyStep]:
    """`steps` with the steer `text` moved to a turn of its own (it was ``queued``): the
    step it preceded is split into an interlude, a text-free, call-free reply to the
    request with the tool results (it ends the turn), and the step itself, answering the
    request that carries the steer as user input after the last tool result. A second
    steer queued before the same step joins the first (one owner turn carries both).
    Unchanged when no step expects `text`."""
    found = next((n for n, step in enumerate(steps) if text in step.steers), None)
    if found is None:
        return list(steps)
    step, rest = steps[found], list(steps[found + 1 :])
    kept = [(s, d) for s, d in _steers(step) if s != text]
    if step.interlude and rest:  # already split for an earlier steer: this one joins it
        after = rest.pop(0)
        joined = _with_steers(after, [*_steers(after), (text, -1)])
        return [*steps[:found], _with_steers(step, kept), joined, *rest]
    interlude = ProxyStep(
        turn_id=f"{step.turn_id}:queued",
        text="",
        owner=step.owner,
        results=step.results,
        interlude=True,
    )
    answer = msgspec.structs.replace(step, owner=None, results=(), steers=(text,), during=(-1,))
    return [*steps[:found], _with_steers(interlude, kept), answer, *rest]


def drop_steer(steps: list[ProxyStep], text: str) -> list[ProxyStep]:
    """`steps` without the expectation of the steer `text` (rejected, or an agent that
    takes none: it never reaches the agent)."""
    found = next((n for n, step in enumerate(steps) if text in step.steers), None)
    if found is None:
        return list(steps)
    kept = [(s, d) for s, d in _steers(steps[found]) if s != text]
    return [*steps[:found], _with_steers(steps[found], kept), *steps[found + 1 :]]


def one_call_each(step: ProxyStep, following: ProxyStep | None) -> list[ProxyStep]:
    """`step` and the step after it for a request that asked for one tool call per reply
    (``parallel_tool_calls: false``): the step's text with its first call, then one
    text-free reply per further call, each expecting the steers that arrived during the
    call before it; the following step keeps the steers of the last call (and all the
    results: they are the request's last tool messages either way)."""
    if len(step.tool_calls) < 2:
        return [step] if following is None else [step, following]
    last = len(step.tool_calls) - 1
    pairs = _steers(following) if following is not None else []
    replies = [msgspec.structs.replace(step, tool_calls=step.tool_calls[:1])]
    for number, call in enumerate(step.tool_calls[1:], start=1):
        single = ProxyStep(turn_id=f"{step.turn_id}:{number}", text="", tool_calls=(call,))
        replies.append(_with_steers(single, [(s, d) for s, d in pairs if d == number - 1]))
    if following is not None:
        replies.append(_with_steers(following, [(s, d) for s, d in pairs if not 0 <= d < last]))
    return replies


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _object(value: Any, what: str) -> dict[str, Any]:
    """`value` when it is an object ({} when absent); anything else is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not an object")
    return value


def wire_request(body: dict[str, Any]) -> WireRequest:
    """`body` (a Chat Completions request) as a `WireRequest`.

    Raises:
        ValueError: the body is not a Chat Completions request.
    """
    raw = body.get("messages")
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        raise ValueError("messages is not a list of objects")
    system: list[str] = []
    messages: list[WireMessage] = []
    for message in raw:
        role = str(message.get("role", ""))
        text = _text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
            continue
        listed = message.get("tool_calls") or []
        if not isinstance(listed, list):
            raise ValueError("tool_calls is not a list")
        functions = [
            _object(c.get("function"), "a tool call's function")
            for c in listed
            if isinstance(c, dict)
        ]
        calls = tuple((str(f.get("name", "")), str(f.get("arguments", ""))) for f in functions)
        messages.append(WireMessage(role, text, calls))
    offered = body.get("tools") or []
    if not isinstance(offered, list):
        raise ValueError("tools is not a list")
    tools = tuple(
        str(_object(t.get("function"), "a tool's function").get("name", ""))
        for t in offered
        if isinstance(t, dict)
    )
    parallel = body.get("parallel_tool_calls")
    return WireRequest(
        model=str(body.get("model", "")),
        system="\n".join(system),
        messages=tuple(messages),
        tools=tools,
        stream=body.get("stream") is True,
        parallel_tool_calls=parallel if isinstance(parallel, bool) else None,
    )


def map_tool(name: str, offered: Sequence[str]) -> str | None:
    """The one offered tool that is `name`, or ends with ``_<name>`` (an MCP prefix)."""
    if name in offered:
        return name
    found = [t for t in offered if t.endswith("_" + name)]
    return found[0] if len(found) == 1 else None


def request_holds(request: WireRequest | None, text: str) -> bool:
    """Whether `request` (its system text and messages) carries `text`, up to
    whitespace; a blank `text` is carried by none."""
    if request is None or not text.strip():
        return False
    parts = [request.system, *(m.text for m in request.messages)]
    return " ".join(text.split()) in " ".join(" ".join(parts).split())


def _holds(text: str, part: str) -> bool:
    """`part` is in `text` as sent, JSON-escaped (an SDK that passes tool content on as
    JSON) or with its whitespace collapsed."""
    if part in text or json.dumps(part)[1:-1] in text:
        return True
    return " ".join(part.split()) in " ".join(text.split())


def _pair_results(outputs: Sequence[str], recent: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each expected output with the recent tool message holding its head, or None; each
    message used once, in any order (calls of one reply may be answered as they end), the
    message at the output's own position tried first."""
    free = list(range(len(recent)))
    paired: list[tuple[str, str | None]] = []
    for number, output in enumerate(outputs):
        order = sorted(free, key=lambda n: n != number)
        found = next((n for n in order if _holds(recent[n], output[:_HEAD])), None)
        if found is not None:
            free.remove(found)
        paired.append((output, recent[found] if found is not None else None))
    return paired


def check_request(step: ProxyStep, request: WireRequest) -> tuple[list[str], int, int]:
    """(problems, tool bytes the request holds, tool bytes sent) for `step`'s request."""
    problems: list[str] = []
    users = [m.text for m in request.messages if m.role == "user"]
    if step.owner is not None and not any(step.owner in u for u in users):
        problems.append(f"the owner text of {step.turn_id} is not in the request")
    tools = [m.text for m in request.messages if m.role == "tool"]
    recent = tools[len(tools) - len(step.results) :] if step.results else []
    seen = sent = 0
    for output, held in _pair_results(step.results, recent):
        size = len(output.encode("utf-8"))
        sent += size
        if held is None:
            problems.append(f"a tool result before {step.turn_id} is not in the request")
        else:
            seen += min(len(held.encode("utf-8")), size)
    last_tool = max((i for i, m in enumerate(request.messages) if m.role == "tool"), default=-1)
    after = [m.text for m in request.messages[last_tool + 1 :] if m.role == "user"]
    dropped = [steer for steer in step.steers if not any(steer in u for u in after)]
    problems += [
        f"a steer before {step.turn_id} is not after the last tool result as user input"
        for _ in dropped
    ]
    return problems, seen, sent
