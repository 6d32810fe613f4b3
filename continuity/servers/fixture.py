"""The fixture tool server: a real MCP server serving a trace's frozen tool outputs.

Built on the official `mcp` SDK (low-level `Server`, streamable HTTP), it lists the six
catalog tools with their input schemas and answers each call with the next frozen
output of the trace, after checking that the call names the expected tool with the
expected arguments. The calls of one assistant turn (one step, several calls) match
that step's records in any order, by tool name and arguments, each record used once:
an agent may run them concurrently. Calls of different steps keep the trace's order:
a step's records are open only when every record of the steps before is matched. Every
call is logged. A mismatched call gets an MCP error result, so the caller's replay
fails rather than drifting.

Run standalone: ``python -m continuity.servers.fixture --trace FILE [--delay-ms N]``
prints ``listening http://127.0.0.1:PORT/mcp`` and serves until killed.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import msgspec
from mcp.server.lowlevel.server import Server

from continuity.traces.schema import AssistantMessage, ReplayTrace, ToolResult, iter_turns
from continuity.traces.tools import TOOLS, argument_problems, input_schema

__all__ = [
    "MCP_PATH",
    "CallLogEntry",
    "FixtureToolServer",
    "FrozenRecord",
    "frozen_records",
    "main",
]

MCP_PATH = "/mcp"


class FrozenRecord(msgspec.Struct, frozen=True):
    record_id: str
    tool: str
    arguments: dict[str, Any]
    output: str
    step: str = ""  # the assistant turn that made the call ("": a step of its own)


class CallLogEntry(msgspec.Struct, frozen=True):
    seq: int
    tool: str
    arguments: dict[str, Any]
    record_id: str | None
    matched: bool
    output_bytes: int
    session: str | None = None  # the MCP session the call came in (a new process: a new one)
    held: str | None = None  # a steer hold: ``released``, or ``late`` past its deadline


def frozen_records(trace: ReplayTrace) -> list[FrozenRecord]:
    """The trace's tool results, in order, each with the call that produced it and the
    assistant turn that made the call."""
    calls = {}
    records = []
    for _, _, turn in iter_turns(trace):
        if isinstance(turn, AssistantMessage):
            calls.update({c.call_id: (c, turn.turn_id) for c in turn.tool_calls})
        elif isinstance(turn, ToolResult):
            call, step = calls[turn.call_id]
            records.append(
                FrozenRecord(turn.turn_id, call.tool, dict(call.arguments), turn.output, step)
            )
    return records


def _steps(records: Sequence[FrozenRecord]) -> list[list[FrozenRecord]]:
    """`records` grouped by step, in order (a record without a step is one on its own)."""
    groups: list[list[FrozenRecord]] = []
    for record in records:
        if groups and record.step and groups[-1][0].step == record.step:
            groups[-1].append(record)
        else:
            groups.append([record])
    return groups


def _session_of(ctx: Any) -> str | None:
    """The MCP session id of the request `ctx` came in (None without one: stdio)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    found = headers.get("mcp-session-id") if headers is not None else None
    return str(found) if found else None


class FixtureToolServer:
    """Serves `records` over MCP, step by step (module doc). `call_log` holds every call
    received, in the order they were answered. Each call is answered `delay_s` late;
    with `slow`, only the calls matching one of those record ids are.

    Steer holds (outside agents): a call whose record is in `holds` is held after
    `on_hold(record_id)` is called, until `release(record_id)` or `hold_deadline_s`
    (then it is answered and logged ``late``). `running(token=...)` serves at the
    unguessable path ``/<token>/mcp``. Each logged call names its MCP session."""

    def __init__(
        self,
        records: Sequence[FrozenRecord],
        *,
        delay_s: float = 0.0,
        log_path: Path | None = None,
        slow: frozenset[str] | None = None,
        holds: frozenset[str] = frozenset(),
        on_hold: Callable[[str], None] | None = None,
        hold_deadline_s: float = 60.0,
    ) -> None:
        self.records = list(records)
        self.delay_s = delay_s
        self.slow = slow
        self.holds = holds
        self.on_hold = on_hold
        self.hold_deadline_s = hold_deadline_s
        self._released: set[str] = set()
        self._notified: set[str] = set()
        self.log_path = log_path
        self.call_log: list[CallLogEntry] = []
        self._lock = threading.Lock()
        self._steps = _steps(self.records)
        self._step = 0  # the open step: the first with a record not yet claimed
        self._claimed: set[str] = set()
        self._served = 0

    def build(self) -> Server[Any]:
        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[
                    types.Tool(
                        name=spec.name,
                        description=spec.description,
                        input_schema=input_schema(spec),
                    )
                    for spec in TOOLS.values()
                ]
            )

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            tool, arguments = params.name, dict(params.arguments or {})
            record, why = self._claim(tool, arguments)
            slow = self.slow is None or (record is not None and record.record_id in self.slow)
            if self.delay_s and slow:
                await anyio.sleep(self.delay_s)
            held = await self._hold(record) if record is not None else None
            return self._answer(tool, arguments, record, why, _session_of(ctx), held)

        return Server(
            "continuity-fixture-tools",
            version="1",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )

    def release(self, record_id: str) -> None:
        """Let the held call of `record_id` be answered (from any thread)."""
        with self._lock:
            self._released.add(record_id)

    def _claim(self, tool: str, arguments: dict[str, Any]) -> tuple[FrozenRecord | None, str]:
        """The open step's first unclaimed record that `tool` with `arguments` is, now
        claimed (a later identical call gets the next one); else None and why."""
        spec = TOOLS.get(tool)
        problems = ["unknown tool"] if spec is None else argument_problems(spec, arguments)
        with self._lock:
            while self._step < len(self._steps) and all(
                r.record_id in self._claimed for r in self._steps[self._step]
            ):
                self._step += 1
            if self._step == len(self._steps):
                return None, "; ".join(problems) or "no call was expected"
            left = [r for r in self._steps[self._step] if r.record_id not in self._claimed]
            found = next((r for r in left if (r.tool, r.arguments) == (tool, arguments)), None)
            if found is None or problems:
                expected = " or ".join(f"{r.tool} {r.arguments}" for r in left)
                return None, "; ".join(problems) or f"expected {expected}"
            self._claimed.add(found.record_id)
            return found, ""

    async def _hold(self, record: FrozenRecord) -> str | None:
        """Hold the call of `record` when it is held, until released or the deadline; the
        runner is told once per record."""
        if record.record_id not in self.holds:
            return None
        with self._lock:
            due, first = record.record_id, record.record_id not in self._notified
            self._notified.add(due)
        if first and self.on_hold is not None:
            self.on_hold(due)
        with anyio.move_on_after(self.hold_deadline_s):
            while True:
                with self._lock:
                    if due in self._released:
                        return "released"
                await anyio.sleep(0.01)
        return "late"

    def _answer(
        self,
        tool: str,
        arguments: dict[str, Any],
        record: FrozenRecord | None,
        why: str,
        session: str | None = None,
        held: str | None = None,
    ) -> types.CallToolResult:
        with self._lock:
            seq = len(self.call_log) + 1
            if record is not None:
                self._served += 1
                size = len(record.output.encode("utf-8"))
                entry = CallLogEntry(
                    seq, tool, arguments, record.record_id, True, size, session, held
                )
                result = types.CallToolResult(
                    content=[types.TextContent(type="text", text=record.output)]
                )
            else:
                entry = CallLogEntry(seq, tool, arguments, None, False, 0, session, held)
                result = types.CallToolResult(
                    content=[types.TextContent(type="text", text=f"unexpected call: {why}")],
                    is_error=True,
                )
            self.call_log.append(entry)
            if self.log_path is not None:
                with open(self.log_path, "ab") as handle:
                    handle.write(msgspec.json.encode(entry) + b"\n")
        return result

    @property
    def served_all(self) -> bool:
        return self._served == len(self.records)

    @asynccontextmanager
    async def running(
        self, token: str | None = None, *, unix: Path | None = None
    ) -> AsyncIterator[str]:
        """Serve on 127.0.0.1 at an ephemeral port (and on the Unix socket `unix`, if
        given); yield the MCP endpoint URL (``/<token>/mcp`` with a token, else
        ``/mcp``)."""
        from continuity.servers.asgi import body_limited, serve_asgi

        path = f"/{token}{MCP_PATH}" if token else MCP_PATH
        app = self.build().streamable_http_app(
            host="127.0.0.1", json_response=True, streamable_http_path=path
        )
        async with serve_asgi(body_limited(app), unix=unix) as base:
            yield base + path


def main(argv: list[str] | None = None) -> int:
    from continuity.errors import InputError, TraceInvalid
    from continuity.inputs import read_user_bytes
    from continuity.traces.schema import TRACE_MAX_BYTES
    from continuity.traces.validate import load_trace

    parser = argparse.ArgumentParser(prog="python -m continuity.servers.fixture")
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--log", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        data = read_user_bytes(args.trace, limit=TRACE_MAX_BYTES, what="a trace file")
        trace = load_trace(data, source=str(args.trace))
    except (OSError, InputError, TraceInvalid) as exc:
        print(f"error {exc}", file=sys.stderr)
        return 2
    server = FixtureToolServer(
        frozen_records(trace), delay_s=args.delay_ms / 1000, log_path=args.log
    )

    async def serve() -> None:
        async with server.running() as url:
            print(f"listening {url}", flush=True)
            await anyio.sleep_forever()

    anyio.run(serve)
    return 0


if __name__ == "__main__":
    sys.exit(main())
