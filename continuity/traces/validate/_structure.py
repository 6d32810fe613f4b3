"""Structure: the trace's header, unique ids, turn order and tool calls.

`check_header` wants a fictional trace with a well-formed id; `index_turns` records every
turn (its path, reader-visible text, conversation order and session) for the later
rules and refuses repeated ids and empty content; `check_sequence` walks the turns in
order (sessions opened by the owner and moving forward in time, every call answered by
a result of its tool and kind, steers after a result of the latest step, every owner
input replied to).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import msgspec

from continuity.traces.schema import (
    TRACE_ID_PATTERN,
    AssistantMessage,
    OwnerMessage,
    ToolCall,
    ToolResult,
    Turn,
)
from continuity.traces.tools import TOOLS, argument_problems
from continuity.traces.validate._context import Context, Located

__all__ = ["check_header", "check_sequence", "index_turns"]


def check_header(ctx: Context) -> None:
    trace = ctx.trace
    if trace.fictional is not True:
        ctx.add(
            "trace_not_fictional",
            "$.fictional",
            "every trace must be invented and marked fictional: true",
        )
    if not TRACE_ID_PATTERN.fullmatch(trace.trace_id):
        ctx.add(
            "trace_malformed",
            "$.trace_id",
            "trace ids are 3-96 lowercase letters, digits and hyphens",
        )


def _turn_text(turn: Turn) -> str:
    if isinstance(turn, ToolResult):
        return turn.output
    if isinstance(turn, AssistantMessage):
        args = "\n".join(
            msgspec.json.encode(call.arguments).decode("utf-8") for call in turn.tool_calls
        )
        return f"{turn.text}\n{args}" if args else turn.text
    return turn.text


def index_turns(ctx: Context) -> None:
    seen_sessions: set[str] = set()
    order = 0
    for s_index, session in enumerate(ctx.trace.sessions):
        s_path = f"$.sessions[{s_index}]"
        if session.session_id in seen_sessions:
            ctx.add("duplicate_id", f"{s_path}.session_id", f"{session.session_id!r} repeats")
        seen_sessions.add(session.session_id)
        if not session.turns:
            ctx.add("trace_malformed", f"{s_path}.turns", "a session needs turns")
        for t_index, turn in enumerate(session.turns):
            path = f"{s_path}.turns[{t_index}]"
            if turn.turn_id in ctx.turns:
                ctx.add("duplicate_id", f"{path}.turn_id", f"{turn.turn_id!r} repeats")
                continue
            text = _turn_text(turn)
            empty = not text.strip() and not (
                isinstance(turn, AssistantMessage) and turn.tool_calls
            )
            if empty:
                ctx.add("trace_malformed", path, f"turn {turn.turn_id!r} has no content")
            ctx.turns[turn.turn_id] = Located(path, turn, text, order, s_index)
            order += 1
            if isinstance(turn, ToolResult):
                ctx.records.append(turn)
                ctx.record_paths.append(path)
    probe_ids = Counter(p.probe_id for p in ctx.trace.probes)
    for p_index, probe in enumerate(ctx.trace.probes):
        if probe_ids[probe.probe_id] > 1:
            ctx.add("duplicate_id", f"$.probes[{p_index}].probe_id", "probe id repeats")
        if not probe.text.strip():
            ctx.add("trace_malformed", f"$.probes[{p_index}].text", "empty probe text")


def check_sequence(ctx: Context) -> None:
    previous_date: dt.date | None = None
    call_ids: set[str] = set()
    pending: dict[str, str] = {}  # call id -> tool, awaiting a result
    answered: set[str] = set()  # calls of the latest assistant step already answered
    awaiting_reply = False  # an owner message or steer not yet answered
    turn_over = False  # the last assistant message had no tool calls
    for s_index, session in enumerate(ctx.trace.sessions):
        s_path = f"$.sessions[{s_index}]"
        try:
            date = dt.date.fromisoformat(session.date)
        except ValueError:
            ctx.add("trace_malformed", f"{s_path}.date", f"{session.date!r} is not a date")
        else:
            if previous_date and date < previous_date:
                ctx.add("sequence_invalid", f"{s_path}.date", "sessions go back in time")
            previous_date = date
        if session.turns and not isinstance(session.turns[0], OwnerMessage):
            ctx.add("sequence_invalid", f"{s_path}.turns[0]", "a session opens with the owner")
        for t_index, turn in enumerate(session.turns):
            path = f"{s_path}.turns[{t_index}]"
            if turn_over and not isinstance(turn, OwnerMessage):
                ctx.add(
                    "sequence_invalid",
                    path,
                    "a reply without tool calls ends the turn; the owner speaks next",
                )
            if isinstance(turn, (OwnerMessage, AssistantMessage)) and pending:
                ctx.add(
                    "sequence_invalid",
                    path,
                    f"tool calls {sorted(pending)} have no result before this turn",
                )
                pending.clear()
            if isinstance(turn, OwnerMessage):
                if awaiting_reply:
                    ctx.add("sequence_invalid", path, "the previous owner input got no reply")
                awaiting_reply = True
                answered = set()
            elif isinstance(turn, AssistantMessage):
                awaiting_reply = False
                answered = set()
                for c_index, call in enumerate(turn.tool_calls):
                    _tool_call(ctx, call, f"{path}.tool_calls[{c_index}]")
                    if call.call_id in call_ids:
                        ctx.add(
                            "duplicate_id",
                            f"{path}.tool_calls[{c_index}].call_id",
                            f"call id {call.call_id!r} repeats",
                        )
                    call_ids.add(call.call_id)
                    pending[call.call_id] = call.tool
            elif isinstance(turn, ToolResult):
                _tool_result(ctx, turn, path, pending, answered)
            else:
                if turn.during_call not in answered:
                    ctx.add(
                        "sequence_invalid",
                        f"{path}.during_call",
                        "a steer follows the result of a call of the latest assistant "
                        f"step; {turn.during_call!r} is not one",
                    )
                awaiting_reply = True
            turn_over = isinstance(turn, AssistantMessage) and not turn.tool_calls
    if pending:
        ctx.add("sequence_invalid", "$.sessions", f"calls {sorted(pending)} never answered")
    if awaiting_reply:
        ctx.add("sequence_invalid", "$.sessions", "the conversation ends without a reply")


def _tool_call(ctx: Context, call: ToolCall, path: str) -> None:
    spec = TOOLS.get(call.tool)
    if spec is None:
        ctx.add("tool_call_invalid", f"{path}.tool", f"unknown tool {call.tool!r}")
        return
    for problem in argument_problems(spec, call.arguments):
        ctx.add("tool_call_invalid", f"{path}.arguments", f"{call.tool}: {problem}")


def _tool_result(
    ctx: Context, turn: ToolResult, path: str, pending: dict[str, str], answered: set[str]
) -> None:
    tool = pending.pop(turn.call_id, None)
    if tool is None:
        ctx.add(
            "sequence_invalid",
            f"{path}.call_id",
            f"result for {turn.call_id!r}, which is not an open call",
        )
        return
    answered.add(turn.call_id)
    if tool != turn.tool:
        ctx.add("tool_call_invalid", f"{path}.tool", f"call was to {tool}, not {turn.tool}")
        return
    spec = TOOLS.get(turn.tool)
    if spec is not None and spec.kind != turn.tool_kind:
        ctx.add(
            "tool_call_invalid",
            f"{path}.tool_kind",
            f"{turn.tool} returns {spec.kind}, not {turn.tool_kind}",
        )
