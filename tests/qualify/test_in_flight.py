"""The kill-history-server case kills a call in flight and proves it (issue 36, item 8):
the history server's call witness logs a call started before the server sees it and
answered before its bytes leave; the grader fails a case that must kill a call in
flight when its receipt shows none (a kill on listening, or after the answer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from continuity.qualify.cases import case_by_id
from continuity.qualify.graders import GRADER_VERSION, grade_fault
from continuity.qualify.receipts import FaultAfter, InFlight
from continuity.sampling.history_witness import CallWitness, read_calls
from tests.qualify.test_graders import AFTER, BEFORE, FINAL, KNOBS

_CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}}
_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def test_the_history_case_is_one_that_kills_a_call_in_flight() -> None:
    case = case_by_id("continuity.reliability.kill-history-server")
    assert case is not None and case.in_flight
    others = [c for c in (case_by_id("continuity.reliability.kill-runner"),) if c is not None]
    assert others and not any(c.in_flight for c in others)
    assert GRADER_VERSION == "qualify-graders-v3"


@pytest.mark.parametrize(
    "in_flight",
    [
        None,  # the kill landed on a server with no call (on listening)
        InFlight(call=1, started=False, answered=False),
        InFlight(call=1, started=True, answered=True),  # answered before it died
    ],
)
def test_a_kill_with_no_call_in_flight_fails_the_case(in_flight: InFlight | None) -> None:
    after = msgspec.structs.replace(AFTER, in_flight=in_flight)
    verdict = grade_fault(KNOBS, BEFORE, after, FINAL, in_flight=True)
    assert verdict.status == "fail" and verdict.causes == ["no_call_in_flight"]


def test_a_kill_under_an_unanswered_call_passes() -> None:
    after = msgspec.structs.replace(AFTER, in_flight=InFlight(call=1, started=True, answered=False))
    assert grade_fault(KNOBS, BEFORE, after, FINAL, in_flight=True).status == "pass"
    # a case that does not ask for a call in flight is graded as before
    assert grade_fault(KNOBS, BEFORE, AFTER, FINAL).status == "pass"


def test_a_receipt_without_a_call_keeps_its_bytes() -> None:
    """`in_flight` is left out when unset: the other cases' receipts are unchanged."""
    assert "in_flight" not in json.loads(msgspec.json.encode(AFTER))
    decoded = msgspec.json.decode(msgspec.json.encode(AFTER), type=FaultAfter)
    assert decoded == AFTER


class _Held:
    """An inner ASGI app that answers a POST only once `release` is set."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        self.bodies.append(message["body"])
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})


async def _post(app: Any, body: dict[str, Any], sent: list[dict[str, Any]]) -> None:
    chunks = [json.dumps(body).encode()[:5], json.dumps(body).encode()[5:]]
    messages = [
        {"type": "http.request", "body": chunks[0], "more_body": True},
        {"type": "http.request", "body": chunks[1], "more_body": False},
    ]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await anyio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": "POST", "path": "/mcp"}, receive, send)


@pytest.mark.anyio
async def test_the_witness_logs_a_call_started_before_it_is_answered(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    inner = _Held()
    witness = CallWitness(inner, log)
    sent: list[dict[str, Any]] = []
    async with anyio.create_task_group() as group:
        group.start_soon(_post, witness, _CALL, sent)
        with anyio.fail_after(5):
            while not inner.bodies:
                await anyio.sleep(0.01)
        # the server holds the call: started, not answered, nothing sent yet
        assert read_calls(log) == {1: {"started"}} and sent == []
        assert json.loads(inner.bodies[0]) == _CALL  # the body reaches the server whole
        inner.release.set()
    assert read_calls(log) == {1: {"started", "answered"}}
    assert sent[-1]["body"] == b"{}"
    # a request that calls no tool (initialize, tools/list) is not a history call
    inner.release = anyio.Event()
    inner.release.set()
    await _post(witness, _LIST, [])
    assert read_calls(log) == {1: {"started", "answered"}}
    assert "content" not in log.read_text() and "params" not in log.read_text()


def test_a_missing_or_cut_log_reads_as_what_it_shows(tmp_path: Path) -> None:
    assert read_calls(tmp_path / "none.jsonl") == {}
    log = tmp_path / "calls.jsonl"
    log.write_text('{"event": "started", "call": 1}\n{"event": "answ')
    assert read_calls(log) == {1: {"started"}}
