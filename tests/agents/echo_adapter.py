"""A small CAP/0 adapter for the tests: it echoes turns, keeps its sessions in a JSON
file in the workspace (so it resumes after a restart), and takes steers while a turn
is pending. ``ECHO_MODE``: ``print`` (prints to stdout, which the SDK sends to the log),
``slow`` (turns never end), ``exit`` (dies before answering)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio

from continuity.agents.protocol import (
    AgentIdentity,
    AgentInfo,
    Capabilities,
    InitParams,
    SteerResult,
    TurnResult,
)
from continuity.agents.sdk import serve_stdio


class Echo:
    def __init__(self) -> None:
        self.mode = os.environ.get("ECHO_MODE", "")
        self.state = Path()
        self.sessions: dict[str, list[str]] = {}
        self.steered: dict[str, anyio.Event] = {}
        self.steers: dict[str, str] = {}

    async def initialize(self, params: InitParams) -> AgentInfo:
        if self.mode == "exit":
            os._exit(3)
        self.state = Path(params.workspace) / "sessions.json"
        if params.resume and self.state.exists():
            self.sessions = json.loads(self.state.read_text())
        caps = Capabilities(steer="injected", resume_after_restart=True, new_session=True)
        return AgentInfo(agent=AgentIdentity(name="echo", version="1"), capabilities=caps)

    async def open_session(self, key: str) -> str:
        self.sessions.setdefault(key, [])
        return key

    async def run_turn(self, session_id: str, turn_id: str, text: str, at: str) -> TurnResult:
        if self.mode == "print":
            print("printed by the agent")
        if self.mode == "slow":
            await anyio.sleep_forever()
        if text.startswith("wait-for-steer"):
            self.steered[turn_id] = anyio.Event()
            await self.steered[turn_id].wait()
            text = f"{text} + {self.steers[turn_id]}"
        if text == "env":
            own = ("PYTHON", "LC_CTYPE")  # set by Python itself in the child
            text = ",".join(sorted(k for k in os.environ if not k.startswith(own)))
        self.sessions[session_id].append(text)
        self.state.write_text(json.dumps(self.sessions))
        history = " | ".join(self.sessions[session_id])
        return TurnResult(turn_id=turn_id, status="completed", reply={"text": history})

    async def steer(self, session_id: str, turn_id: str, steer_id: str, text: str) -> SteerResult:
        while turn_id not in self.steered:
            await anyio.sleep(0.01)
        self.steers[turn_id] = text
        self.steered[turn_id].set()
        return SteerResult(delivery="injected")

    async def shutdown(self) -> None:
        return None


if __name__ == "__main__":
    anyio.run(serve_stdio, Echo())
