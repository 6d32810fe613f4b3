"""A live session: a conversation driven through the harness by a process that can die
and be restarted, with owner steers taken from a durable inbox.

``python -m continuity.harness.live run --workspace DIR --trace FILE [--slow-steer-ms N]``
runs the trace's owner turns through the agent loop (the trace's assistant replies as
the scripted model, real MCP calls to an in-process fixture tool server holding its
frozen outputs). The workspace's durable roots (`Workspace`) and its steer inbox
(``steers.sqlite3``, `SteerInbox`) are the session: the same command on the same
workspace after the process was killed **resumes** it:

- the inbox is reconciled from the session's ``steer`` markers (a steer the session
  holds is consumed; a marker cut off before its message gets the message now), so no
  steer is delivered twice or lost;
- a tool round cut off by the restart gets an error result for each call that never
  returned (``interrupted``; the call is not re-run: a live tool may have effects);
- the scripted model and the fixture server continue where the session stands (one
  scripted reply per model reply in the session, one frozen output per call issued);
- an open turn continues (`AgentLoop.resume_turn`): queued steers go into its next
  request; then the remaining owner turns run, each taking the steers queued before it;
- the session is ``completed`` only when every scripted reply was requested and no
  steer is left in the inbox.

One process at a time runs a workspace (``live_workspace_busy`` otherwise).

The trace's own steers are offered to the inbox (by their turn id, owner-bound) when
their call starts; ``--slow-steer-ms`` holds those calls in the fixture server, so a
steer is queued while its call is in flight. The scripted reply after a steer checks it
reached that request as owner input (``replay_fidelity_failed`` otherwise).

``python -m continuity.harness.live steer --workspace DIR --id ID --text TEXT``
queues one owner steer from another process, at any time, including while no harness
runs; the next harness to run the session delivers it.

Each start appends a ``live_start`` entry (pid) to the session; ``live.json`` is the
content-free report of the last run: owner turns, requests, the steers delivered with
their consuming requests, and the starts.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec

from continuity.digest import value_digest
from continuity.errors import ContinuityError, HarnessError, UsageError, first_coded
from continuity.harness.live_input import LiveInput
from continuity.harness.loop import STEER_MARKER, AgentLoop
from continuity.harness.replay import scripted_steps
from continuity.harness.session import CustomEntry, DurableSession, MessageEntry
from continuity.harness.steer_inbox import SteerInbox
from continuity.harness.toolbox import McpToolbox
from continuity.harness.workspace import Workspace
from continuity.inputs import read_user_bytes
from continuity.memory.history import CanonicalHistory
from continuity.messages import AssistantMessage, ToolCallRequest, ToolResultMessage, UserMessage
from continuity.providers.scripted import ScriptedProvider
from continuity.servers.fixture import FixtureToolServer, frozen_records
from continuity.servers.wire_options import CodedArguments, whole_number
from continuity.traces.schema import (
    TRACE_MAX_BYTES,
    OwnerMessage,
    ReplayTrace,
    Steer,
    ToolResult,
    iter_turns,
)

__all__ = [
    "INBOX",
    "INTERRUPTED",
    "REPORT",
    "LiveReport",
    "SteerDelivery",
    "deliveries",
    "main",
    "run_live",
]

INBOX = "steers.sqlite3"
REPORT = "live.json"
INTERRUPTED = "interrupted: the harness restarted before this call returned; it was not re-run"


class SteerDelivery(msgspec.Struct, frozen=True, kw_only=True):
    steer_id: str
    sha256: str  # the steer text's digest
    request: str  # the model request that consumed it


class LiveReport(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    owner_turns: int
    requests: int  # model replies in the session, over every start
    interrupted_calls: int
    steers: list[SteerDelivery]
    starts: list[int]  # the pid of every process that ran the session, in order
    completed: bool


def deliveries(session: DurableSession) -> list[SteerDelivery]:
    """Every durable steer delivery the session records, in order (its markers)."""
    return [
        msgspec.convert(e.data, SteerDelivery)
        for e in session.entries
        if isinstance(e, CustomEntry) and e.custom_type == STEER_MARKER
    ]


def _messages(session: DurableSession) -> list[Any]:
    return [e.message for e in session.entries if isinstance(e, MessageEntry)]


def _reconcile(session: DurableSession, history: CanonicalHistory, inbox: SteerInbox) -> None:
    """The inbox agrees with the session: a marker cut off before its message gets the
    message (in the session and the canonical history); every marked steer is consumed
    by the request its marker names, and its text is the one the inbox holds."""
    rows = {r.steer_id: r for r in inbox.rows()}
    last = session.entries[-1] if session.entries else None
    if isinstance(last, CustomEntry) and last.custom_type == STEER_MARKER:
        row = rows.get(str(last.data["steer_id"]))
        if row is not None:
            entry = session.append_message(
                UserMessage(text=row.text, attribution=row.attribution, source="steer")
            )
            history.append(
                "user", row.text, attribution=row.attribution, source="steer", entry_id=entry.id
            )
            session.sync()
    for delivery in deliveries(session):
        row = rows.get(delivery.steer_id)
        if row is None or row.sha256 != delivery.sha256:
            raise HarnessError(
                "the session delivered a steer the inbox does not hold with that text",
                code="steer_unknown",
                location=delivery.steer_id,
            )
        inbox.consume(delivery.steer_id, delivery.request)


def _close_interrupted(session: DurableSession) -> int:
    """Error results for the calls of the last model reply that never returned."""
    messages = _messages(session)
    last_call = max(
        (i for i, m in enumerate(messages) if isinstance(m, AssistantMessage) and m.tool_calls),
        default=None,
    )
    if last_call is None:
        return 0
    answered = {m.call_id for m in messages[last_call:] if isinstance(m, ToolResultMessage)}
    missing = [c for c in messages[last_call].tool_calls if c.call_id not in answered]
    for call in missing:
        session.append_message(
            ToolResultMessage(call_id=call.call_id, tool=call.name, text=INTERRUPTED, is_error=True)
        )
    session.sync()
    return len(missing)


def _turn_open(session: DurableSession) -> bool:
    """The session's last turn has no final reply yet (a restart cut it): an owner
    message, a tool call or a tool result after the last final reply. A steer alone
    after a final reply opens no turn: it rides with the next owner turn's request."""
    messages = _messages(session)
    final = max(
        (i for i, m in enumerate(messages) if isinstance(m, AssistantMessage) and not m.tool_calls),
        default=-1,
    )
    return any(
        not (isinstance(m, UserMessage) and m.source == "steer") for m in messages[final + 1 :]
    )


class _Live:
    """One process's run of the session: its durable roots, inbox, model and tools."""

    def __init__(self, root: Path, trace: ReplayTrace, slow_steer_ms: int) -> None:
        self.trace = trace
        self.workspace = Workspace(root.absolute())
        self._lock = _lock_workspace(self.workspace.root)
        fresh = not self.workspace.session_path.exists()
        if fresh:
            session_id = value_digest(("continuity-live", trace.trace_id))[:32]
            self.session, self.history, self.tools = self.workspace.create(
                session_id=session_id, clock=_clock
            )
        else:
            self.session, self.history, self.tools = self.workspace.open(clock=_clock)
        try:
            self.inbox = SteerInbox(self.workspace.root / INBOX)
            _reconcile(self.session, self.history, self.inbox)
        except BaseException:
            self.session.close()
            self.history.close()
            if hasattr(self, "inbox"):
                self.inbox.close()
            self._lock.close()
            raise
        self.session.append_custom("live_start", {"pid": os.getpid()})
        self.interrupted = _close_interrupted(self.session)
        messages = _messages(self.session)
        replies = [m for m in messages if isinstance(m, AssistantMessage)]
        issued = sum(len(m.tool_calls) for m in replies)
        self.provider = ScriptedProvider(
            scripted_steps(trace)[len(replies) :], name="scripted", model="live-history-model"
        )
        steers = [t for _, _, t in iter_turns(trace) if isinstance(t, Steer)]
        self.steers = {s.during_call: s for s in steers}
        slow = {
            t.turn_id
            for _, _, t in iter_turns(trace)
            if isinstance(t, ToolResult) and t.call_id in self.steers
        }
        self.server = FixtureToolServer(
            frozen_records(trace)[issued:], delay_s=slow_steer_ms / 1000, slow=frozenset(slow)
        )
        self.live = LiveInput(self.inbox)
        self.done_turns = sum(
            1 for m in messages if isinstance(m, UserMessage) and m.source == "owner"
        )

    def offer_steer(self, call: ToolCallRequest) -> None:
        steer = self.steers.get(call.call_id)
        if steer is not None:  # owner-authored web live input binds the exact text
            self.live.offer(steer.text, owner_text=steer.text, steer_id=steer.turn_id)

    def close(self) -> None:
        self.session.close()
        self.history.close()
        self.inbox.close()
        self._lock.close()


def _lock_workspace(root: Path) -> Any:
    """An exclusive lock on the live workspace for this process (released at exit, even
    on SIGKILL): two harnesses never drain one session's steers.

    Raises:
        HarnessError: ``live_workspace_busy`` when another process holds it.
    """
    root.mkdir(parents=True, exist_ok=True)
    handle = open(root / ".live.lock", "a+b")  # noqa: SIM115 - held until close()
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise HarnessError(
            "another harness runs this live session",
            code="live_workspace_busy",
            location=str(root),
        ) from None
    return handle


def _clock() -> str:
    from continuity.store import utc_now

    return utc_now()


async def _drive(live: _Live, progress: Any) -> None:
    owner = [t for _, _, t in iter_turns(live.trace) if isinstance(t, OwnerMessage)]
    async with contextlib.AsyncExitStack() as stack:
        url = await stack.enter_async_context(live.server.running())
        toolbox = await stack.enter_async_context(
            McpToolbox(url, read_timeout=120, on_call_started=live.offer_steer)
        )
        loop = AgentLoop(
            session=live.session,
            history=live.history,
            tool_history=live.tools,
            toolbox=toolbox,
            provider=live.provider,
            model="live-history-model",
            live_input=live.live,
        )
        if _turn_open(live.session):
            progress(f"live: resuming turn {live.done_turns}/{len(owner)}")
            await loop.resume_turn()
        for number, turn in enumerate(owner[live.done_turns :], start=live.done_turns + 1):
            progress(f"live: turn {number}/{len(owner)}")
            await loop.run_turn(turn.text)


def run_live(
    root: Path, trace: ReplayTrace, *, slow_steer_ms: int = 0, progress: Any = None
) -> LiveReport:
    """Run (or resume) the live session at `root` to the end of `trace` (module doc)."""
    live = _Live(root, trace, slow_steer_ms)
    try:
        with first_coded():  # a task group's failure: its first coded error
            anyio.run(_drive, live, progress or (lambda line: None))
        completed = live.provider.remaining == 0 and not live.inbox.pending()
    finally:
        live.close()
    session = live.session  # closed, its entries as written
    messages = _messages(session)
    report = LiveReport(
        session_id=session.header.session_id,
        owner_turns=sum(1 for m in messages if isinstance(m, UserMessage) and m.source == "owner"),
        requests=sum(1 for m in messages if isinstance(m, AssistantMessage)),
        interrupted_calls=sum(
            1 for m in messages if isinstance(m, ToolResultMessage) and m.text == INTERRUPTED
        ),
        steers=deliveries(session),
        starts=[
            int(e.data["pid"])
            for e in session.entries
            if isinstance(e, CustomEntry) and e.custom_type == "live_start"
        ],
        completed=completed,
    )
    report_path = live.workspace.root / REPORT
    report_path.write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
    return report


def _parser() -> argparse.ArgumentParser:
    parser = CodedArguments(prog="python -m continuity.harness.live")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CodedArguments)
    run = commands.add_parser("run", help="run or resume the live session of a trace")
    run.add_argument("--workspace", type=Path, required=True)
    run.add_argument("--trace", type=Path, required=True, help="a trace file (JSON)")
    run.add_argument(
        "--slow-steer-ms",
        type=whole_number("--slow-steer-ms", 0, 600_000),
        default=0,
        help="hold each call a trace steer arrives during this long",
    )
    steer = commands.add_parser("steer", help="queue an owner steer for the session")
    steer.add_argument("--workspace", type=Path, required=True)
    steer.add_argument("--id", required=True, help="the steer's id (a redelivery is counted)")
    steer.add_argument("--text", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    from continuity.traces.validate import load_trace

    try:
        args = _parser().parse_args(argv)
        if args.command == "steer":
            with SteerInbox(args.workspace.absolute() / INBOX) as inbox:
                row = inbox.offer(args.id, args.text, owner_text=args.text)
            print(f"queued steer {row.steer_id} (redeliveries {row.redeliveries})")
            return 0
        data = read_user_bytes(args.trace, limit=TRACE_MAX_BYTES, what="the trace")
        trace = load_trace(data, source=str(args.trace))
        report = run_live(
            args.workspace,
            trace,
            slow_steer_ms=args.slow_steer_ms,
            progress=lambda line: print(line, flush=True),
        )
    except UsageError as error:
        print(f"error {error.code}: {error.message} (at {error.location})", file=sys.stderr)
        return 2
    except ContinuityError as error:
        print(f"error {error.code}: {error.message} (at {error.location})", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"error live_io_failed: {error.strerror} (at {error.filename})", file=sys.stderr)
        return 1
    print(
        f"live: done, {report.owner_turns} owner turns, {len(report.steers)} steers delivered, "
        f"{len(report.starts)} starts"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
