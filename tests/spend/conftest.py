"""Fixtures for the guard: a scripted loopback Responses endpoint, a test-only permit
source and a guard bound to both."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from continuity.messages import ModelRequest, ToolDefinition, UserMessage
from continuity.servers.asgi import serve_asgi
from continuity.spend.assumptions import ASSUMED_V1, reservation
from continuity.spend.contract import AuxiliaryCallers, GuardContract
from continuity.spend.guard import GuardedProvider
from continuity.spend.permits import TestOnlyPermitSource
from tests.spend.sse import Reply, ScriptedSse

RMAX = reservation(ASSUMED_V1)
CALLERS_OFF = AuxiliaryCallers(
    judge=None, memory=False, subagents=False, upkeep=False, compaction=False, output_schema=None
)
RUN_ID = "run-7f3a"
HISTORY = ToolDefinition(
    "ConversationHistory",
    "search retained records",
    {
        "type": "object",
        "properties": {
            "action": {"type": "string"},
            "query": {"type": "string"},
            "filters": {"type": "object", "properties": {"since": {"type": "string"}}},
        },
    },
)


def request(text: str = "Where did Ana move in 2029?") -> ModelRequest:
    return ModelRequest(
        session_id="s-1",
        provider="openai-responses",
        model="gpt-6.1-sol",
        system="Answer from the conversation.",
        messages=(UserMessage(text),),
        tools=(HISTORY,),
    )


def contract_for(url: str, cache_key: str | None = None) -> GuardContract:
    return GuardContract(
        provider="openai-codex",
        model="gpt-6.1-sol",
        api="openai-responses",
        base_url=url,
        effort="high",
        prompt_cache_key=cache_key,
    )


@pytest.fixture
def credentials(tmp_path: Path) -> str:
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"api_key": "sk-loopback"}))
    return str(path)


class Rig:
    """One scripted server, one permit source, and a factory of guards over them."""

    def __init__(self, app: ScriptedSse, url: str, credentials: str) -> None:
        self.app, self.url, self.credentials = app, url, credentials
        self.permits = TestOnlyPermitSource(Decimal("100.00"), RMAX)
        self.guards: list[GuardedProvider] = []

    def guard(
        self, *, slot: str = "slot-1", cache_key: str | None = None, **more: Any
    ) -> GuardedProvider:
        guard = GuardedProvider(
            contract=contract_for(self.url + "/v1", cache_key),
            permits=more.pop("permits", self.permits),
            run_id=more.pop("run_id", RUN_ID),
            slot_id=slot,
            credentials_path=self.credentials,
            callers=more.pop("callers", CALLERS_OFF),
            **more,
        )
        self.guards.append(guard)
        return guard

    def script(self, *replies: Reply) -> None:
        self.app.replies.extend(replies)


@pytest.fixture
async def rig(credentials: str) -> AsyncIterator[Rig]:
    app = ScriptedSse([])
    async with serve_asgi(app) as url:
        made = Rig(app, url, credentials)
        try:
            yield made
        finally:
            app.release()
            for guard in made.guards:
                await guard.aclose()


Drain = Callable[[GuardedProvider, ModelRequest], Any]
