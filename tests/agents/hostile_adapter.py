"""A CAP/0 adapter that attacks its runner (the sandbox's test). ``HOSTILE`` (JSON) names
what to try at ``initialize``: files to read, directories to list, a loopback port to
reach and a marker for a ``setsid`` double-forked daemon. What each attempt gave is
written to ``attacks.json`` in the workspace; the run then proceeds like any adapter's.
``HOSTILE_STREAM`` makes it break the protocol instead: ``deep`` (a 100,000-deep JSON
line), ``huge`` (a line over the runner's limit), ``flood`` (agent/event notifications
without end)."""

from __future__ import annotations

import functools
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import anyio

from continuity.agents.protocol import (
    AgentIdentity,
    AgentInfo,
    Capabilities,
    InitParams,
    TurnResult,
)
from continuity.agents.sdk import serve_stdio


def _try_read(path: str) -> str:
    try:
        return f"ok:{len(Path(path).read_bytes())}"
    except OSError as exc:
        return f"err:{type(exc).__name__}"


def _try_list(path: str) -> str:
    try:
        return f"ok:{','.join(sorted(os.listdir(path))[:5])}"
    except OSError as exc:
        return f"err:{type(exc).__name__}"


def _try_connect(port: int) -> str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return "ok:connected"
    except OSError as exc:
        return f"err:{type(exc).__name__}"


def _daemon(marker: str) -> None:
    """Double-fork a daemon in a session of its own (escapes a process-group kill)."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", marker])
        os._exit(0)
    os.wait()


def _attack(plan: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"env": sorted(os.environ)}
    found["read"] = {path: _try_read(path) for path in plan.get("read", [])}
    found["list"] = {path: _try_list(path) for path in plan.get("list", [])}
    if plan.get("port"):
        found["port"] = _try_connect(int(plan["port"]))
    if plan.get("daemon"):
        _daemon(plan["daemon"])
    return found


PROTOCOL = os.fdopen(os.dup(1), "wb")  # the protocol's stdout, also for breaking it


def _break_the_stream(how: str) -> None:
    out = PROTOCOL
    if how == "deep":
        out.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    elif how == "huge":
        out.write(b'{"jsonrpc": "2.0", "method": "agent/event", "params": {"x": "')
        out.write(b"x" * (9 * 1024 * 1024) + b'"}}\n')
    elif how == "flood":
        line = json.dumps({"jsonrpc": "2.0", "method": "agent/event",
                           "params": {"pad": "x" * 4000}}).encode() + b"\n"  # fmt: skip
        for _ in range(5000):  # 20 MB of notifications
            out.write(line)
    out.flush()


class Hostile:
    async def initialize(self, params: InitParams) -> AgentInfo:
        how = os.environ.get("HOSTILE_STREAM", "")
        if how:
            _break_the_stream(how)
        plan = json.loads(os.environ.get("HOSTILE", "{}"))
        found = _attack(plan)
        found["workspace"] = params.workspace
        Path(params.workspace, "attacks.json").write_text(json.dumps(found))
        caps = Capabilities(steer="none", resume_after_restart=False, new_session=True)
        return AgentInfo(agent=AgentIdentity(name="hostile", version="1"), capabilities=caps)

    async def open_session(self, key: str) -> str:
        return key

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> TurnResult:
        return TurnResult(turn_id=turn_id, status="completed", reply={"text": "ok"})

    async def shutdown(self) -> None:
        return None


if __name__ == "__main__":
    os.dup2(2, 1)
    anyio.run(functools.partial(serve_stdio, Hostile(), stdout=PROTOCOL))
