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
The tool results since the previous step are the request's last tool messages, in
order; each is present when it holds the first 200 characters of its output (as sent,
JSON-escaped, or with whitespace collapsed), and the
bytes it holds are recorded against the bytes sent (truncation is evidence, not a
failure).

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
    "map_tool",
    "proxy_script",
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


def proxy_script(trace: ReplayTrace) -> list[ProxyStep]:
    """One step per assistant message of `trace` (module doc)."""
    steps: list[ProxyStep] = []
    owner: str | None = None
    results: list[str] = []
    steers: list[str] = []
    for _, _, turn in iter_turns(trace):
        if isinstance(turn, OwnerMessage):
            owner = turn.text
        elif isinstance(turn, ToolResult):
            results.append(turn.output)
        elif isinstance(turn, Steer):
            steers.append(turn.text)
        elif isinstance(turn, AssistantMessage):
            calls = tuple((c.tool, dict(c.arguments)) for c in turn.tool_calls)
            steps.append(
                ProxyStep(
                    turn_id=turn.turn_id,
                    text=turn.text,
                    tool_calls=calls,
                    owner=owner,
                    results=tuple(results),
                    steers=tuple(steers),
                )
            )
            owner, results, steers = None, [], []
    return steps


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


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
        functions = [c.get("function") or {} for c in listed if isinstance(c, dict)]
        calls = tuple((str(f.get("name", "")), str(f.get("arguments", ""))) for f in functions)
        messages.append(WireMessage(role, text, calls))
    offered = body.get("tools") or []
    if not isinstance(offered, list):
        raise ValueError("tools is not a list")
    tools = tuple(
        str((t.get("function") or {}).get("name", "")) for t in offered if isinstance(t, dict)
    )
    return WireRequest(
        model=str(body.get("model", "")),
        system="\n".join(system),
        messages=tuple(messages),
        tools=tools,
        stream=body.get("stream") is True,
    )


def map_tool(name: str, offered: Sequence[str]) -> str | None:
    """The one offered tool that is `name`, or ends with ``_<name>`` (an MCP prefix)."""
    if name in offered:
        return name
    found = [t for t in offered if t.endswith("_" + name)]
    return found[0] if len(found) == 1 else None


def _holds(text: str, part: str) -> bool:
    """`part` is in `text` as sent, JSON-escaped (an SDK that passes tool content on as
    JSON) or with its whitespace collapsed."""
    if part in text or json.dumps(part)[1:-1] in text:
        return True
    return " ".join(part.split()) in " ".join(text.split())


def check_request(step: ProxyStep, request: WireRequest) -> tuple[list[str], int, int]:
    """(problems, tool bytes the request holds, tool bytes sent) for `step`'s request."""
    problems: list[str] = []
    users = [m.text for m in request.messages if m.role == "user"]
    if step.owner is not None and not any(step.owner in u for u in users):
        problems.append(f"the owner text of {step.turn_id} is not in the request")
    tools = [m.text for m in request.messages if m.role == "tool"]
    recent = tools[len(tools) - len(step.results) :] if step.results else []
    seen = sent = 0
    for number, output in enumerate(step.results):
        size = len(output.encode("utf-8"))
        sent += size
        held = recent[number] if number < len(recent) else ""
        if not _holds(held, output[:_HEAD]):
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
