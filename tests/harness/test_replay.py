"""Replay fidelity on every original and hard seeds 101-108, and its typed failures."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import msgspec
import pytest
from mcp.server.lowlevel.server import Server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from continuity.errors import ReplayFidelityError, ScriptExhausted, ToolError
from continuity.harness.checkpoints import build_checkpoint
from continuity.harness.live_input import LiveInput
from continuity.harness.replay import replay_trace
from continuity.harness.session import DurableSession
from continuity.harness.tool_history import ToolHistory
from continuity.messages import ToolResultMessage, UserMessage
from continuity.servers.wire import serve_in_thread
from continuity.store import Store
from continuity.traces.generator import generate_trace
from continuity.traces.schema import (
    AssistantMessage,
    ReplayTrace,
    Session,
    Steer,
    ToolResult,
    Trace,
    iter_turns,
    replay_projection,
)
from continuity.traces.validate import load_trace
from tests.conftest import ORIGINALS, store_files

TRACES = [
    *(p.stem for p in sorted(ORIGINALS.glob("*.json"))),
    *(f"hard-{seed}" for seed in range(101, 109)),
    "distractors-103",
]


@functools.cache
def trace_named(name: str) -> Trace:
    if name.startswith("hard-"):
        return generate_trace(int(name.removeprefix("hard-")))
    if name.startswith("distractors-"):
        return generate_trace(int(name.removeprefix("distractors-")), distractors=True)
    return load_trace((ORIGINALS / f"{name}.json").read_bytes())


@pytest.mark.parametrize("name", TRACES)
def test_replay_fidelity(name: str, tmp_path: Path) -> None:
    trace = trace_named(name)
    root = tmp_path / "ws"
    receipt = anyio.run(lambda: replay_trace(replay_projection(trace), root))
    turns = [t for _, _, t in iter_turns(trace)]
    results = [t for t in turns if isinstance(t, ToolResult)]
    steers = [t for t in turns if isinstance(t, Steer)]
    assert receipt.call_log_verified and receipt.tool_calls == len(results)
    assert receipt.steers_owner == receipt.steers_offered == len(steers)
    assert receipt.requests == sum(isinstance(t, AssistantMessage) for t in turns)
    # Independently of the replay's own checks, read the durable session back.
    session = DurableSession.load(root / "session" / "session.jsonl")
    context = session.context()
    outputs = [m.text for m in context if isinstance(m, ToolResultMessage)]
    assert outputs == [r.output for r in results]
    owner_steers = [m for m in context if isinstance(m, UserMessage) and m.source == "steer"]
    assert [m.text for m in owner_steers] == [s.text for s in steers]
    assert all(m.attribution == "owner" for m in owner_steers)
    for steer in owner_steers:  # each steer directly follows the results of its call
        index = context.index(steer)
        assert isinstance(context[index - 1], (ToolResultMessage, UserMessage))
    sidecar = ToolHistory.open(root / "tool-history", artifact_root=root)
    assert [r.bytes for r in sidecar.records()] == [len(r.output.encode()) for r in results]
    oversized = [r for r in sidecar.records() if r.bytes > 16384]
    assert all(r.truncated and r.retained_bytes == 16384 for r in oversized)
    assert receipt.truncated_records == len(oversized)


def test_replay_is_byte_identical_across_runs(tmp_path: Path) -> None:
    trace = replay_projection(trace_named("harbor-market-stall"))
    anyio.run(lambda: replay_trace(trace, tmp_path / "a"))
    anyio.run(lambda: replay_trace(trace, tmp_path / "a2"))
    for part in ("session/session.jsonl", "session/history.jsonl", "tool-history/records.jsonl"):
        assert (tmp_path / "a" / part).read_bytes() == (tmp_path / "a2" / part).read_bytes()


def _without_last_reply(trace: ReplayTrace) -> ReplayTrace:
    last = trace.sessions[-1]
    shortened = Session(session_id=last.session_id, date=last.date, turns=last.turns[:-1])
    return msgspec.structs.replace(trace, sessions=(*trace.sessions[:-1], shortened))


def test_a_scripted_queue_that_runs_dry_is_a_typed_error(tmp_path: Path) -> None:
    trace = _without_last_reply(replay_projection(trace_named("brightline-return")))
    with pytest.raises(ScriptExhausted) as err:
        anyio.run(lambda: replay_trace(trace, tmp_path / "ws"))
    assert err.value.code == "script_exhausted"


def test_a_steer_that_never_arrives_fails_fidelity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lost(self: LiveInput, text: str, *, owner_text: str | None = None) -> Any:
        return None  # a harness bug: the offer is dropped

    monkeypatch.setattr(LiveInput, "offer", lost)
    with pytest.raises(ReplayFidelityError) as err:
        anyio.run(
            lambda: replay_trace(
                replay_projection(trace_named("brightline-return")), tmp_path / "ws"
            )
        )
    assert err.value.code == "replay_fidelity_failed"


def test_a_workspace_must_be_empty(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "stray").write_text("x")
    with pytest.raises(Exception) as err:
        anyio.run(
            lambda: replay_trace(
                replay_projection(trace_named("brightline-return")), tmp_path / "ws"
            )
        )
    assert getattr(err.value, "code", "") == "workspace_not_empty"


def _image_server() -> Any:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name="email_search", description="d", input_schema={"type": "object"})
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data="AAAA", mime_type="image/png")]
        )

    server: Server[Any] = Server("broken", on_list_tools=list_tools, on_call_tool=call_tool)
    return server.streamable_http_app(host="127.0.0.1")


def _garbage_app() -> Any:
    async def endpoint(request: Request) -> JSONResponse:
        return JSONResponse({"jsonrpc": "2.0", "id": 0, "result": {"unexpected": True}})

    return Starlette(routes=[Route("/mcp", endpoint, methods=["POST", "GET", "DELETE"])])


def _checkpoint_through(store: Store, url: str, read_timeout: float = 30.0) -> None:
    trace = trace_named("brightline-return")
    build_checkpoint(
        store,
        trace,
        trace_key="ab" * 32,
        trace_digest="cd" * 32,
        tool_server_url=url,
        read_timeout=read_timeout,
    )


def _nothing_stored(store: Store, before: dict[str, bytes]) -> bool:
    leftovers = store.root / "checkpoints"
    return store_files(store) == before and not (leftovers.exists() and any(leftovers.iterdir()))


def test_a_malformed_tool_result_is_a_typed_error(store: Store) -> None:
    before = store_files(store)
    with serve_in_thread(_image_server()) as base, pytest.raises(ToolError) as err:
        url = base + "/mcp"
        _checkpoint_through(store, url)
    assert err.value.code == "tool_response_malformed"
    assert _nothing_stored(store, before)


def test_a_malformed_protocol_message_is_a_typed_error(tmp_path: Path) -> None:
    trace = replay_projection(trace_named("brightline-return"))
    with serve_in_thread(_garbage_app()) as base, pytest.raises(ToolError) as err:
        url = base + "/mcp"
        anyio.run(lambda: replay_trace(trace, tmp_path / "ws", tool_server_url=url, read_timeout=1))
    assert err.value.code in ("tool_response_malformed", "tool_server_unavailable")


def test_a_server_that_dies_mid_call_is_a_typed_error(store: Store) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "continuity.servers.fixture",
            "--trace",
            str(ORIGINALS / "brightline-return.json"),
            "--delay-ms",
            "3000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split()[-1]

    def kill_soon() -> None:
        time.sleep(1.0)  # the first tool call is waiting on the server's 3 s delay
        os.kill(proc.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_soon)
    killer.start()
    started = time.monotonic()
    before = store_files(store)
    try:
        with pytest.raises(ToolError) as err:
            _checkpoint_through(store, url, read_timeout=20)
    finally:
        killer.join()
        proc.wait(10)
        proc.stdout.close()
    assert err.value.code == "tool_server_unavailable"
    assert time.monotonic() - started < 15
    assert _nothing_stored(store, before)


def test_no_server_at_all_is_unavailable(tmp_path: Path) -> None:
    from continuity.servers.asgi import bound_socket

    sock = bound_socket()
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(ToolError) as err:
        anyio.run(
            lambda: replay_trace(
                replay_projection(trace_named("brightline-return")),
                tmp_path / "ws",
                tool_server_url=f"http://127.0.0.1:{port}/mcp",
            )
        )
    assert err.value.code == "tool_server_unavailable"
