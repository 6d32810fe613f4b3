"""The durable steer inbox and the loop's exactly-once delivery of its steers."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from continuity.errors import HarnessError
from continuity.harness.live_input import LiveInput
from continuity.harness.loop import STEER_MARKER, AgentLoop
from continuity.harness.session import CustomEntry, DurableSession
from continuity.harness.steer_inbox import SteerInbox
from continuity.harness.tool_history import ToolHistory
from continuity.memory.history import CanonicalHistory
from continuity.messages import UserMessage
from continuity.providers.scripted import ScriptedProvider, text_step


def test_an_offer_is_durable_and_an_identical_redelivery_is_counted_not_queued(
    tmp_path: Path,
) -> None:
    path = tmp_path / "steers.sqlite3"
    with SteerInbox(path) as inbox:
        first = inbox.offer("s1", "Just draft it.", owner_text="Just draft it.")
        inbox.offer("s2", "Anonymous note.")
    with SteerInbox(path) as reopened:  # another process, later
        again = reopened.offer("s1", "Just draft it.", owner_text="Just draft it.")
        pending = reopened.pending()
    assert first.attribution == "owner" and first.redeliveries == 0
    assert again.redeliveries == 1 and again.seq == first.seq
    assert [(r.steer_id, r.attribution) for r in pending] == [("s1", "owner"), ("s2", "unknown")]


@pytest.mark.parametrize(
    ("act", "code"),
    [
        (lambda i: i.offer("s1", "Other text."), "steer_conflict"),
        (lambda i: i.offer("", "No id."), "steer_invalid"),
        (lambda i: i.offer("s2", "  "), "steer_invalid"),
        (lambda i: i.consume("s9", "session/request-1"), "steer_unknown"),
        (lambda i: (i.consume("s1", "r-3"), i.consume("s1", "r-4")), "steer_consumed_twice"),
    ],
)
def test_bad_offers_and_second_consumers_are_refused_with_a_code(
    tmp_path: Path, act: object, code: str
) -> None:
    with SteerInbox(tmp_path / "steers.sqlite3") as inbox:
        inbox.offer("s1", "Just draft it.")
        with pytest.raises(HarnessError) as caught:
            act(inbox)  # type: ignore[operator]
        assert caught.value.code == code
        assert [r.text for r in inbox.rows()] == ["Just draft it."]  # nothing half-written


def test_consuming_again_with_the_same_request_is_a_no_op(tmp_path: Path) -> None:
    with SteerInbox(tmp_path / "steers.sqlite3") as inbox:
        inbox.offer("s1", "Just draft it.")
        inbox.consume("s1", "r-3")
        inbox.consume("s1", "r-3")
        assert inbox.pending() == [] and inbox.rows()[0].consumed_by == "r-3"


def test_a_file_that_is_not_an_inbox_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "steers.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HarnessError) as caught:
        SteerInbox(path)
    assert caught.value.code == "steer_inbox_invalid" and caught.value.location == str(path)


def _loop(tmp_path: Path, inbox: SteerInbox) -> AgentLoop:
    session = DurableSession.create(
        tmp_path / "session.jsonl", session_id="s0", clock=lambda: "2026-01-01T00:00:00Z"
    )
    return AgentLoop(
        session=session,
        history=CanonicalHistory.create(tmp_path / "history.jsonl"),
        tool_history=ToolHistory.create(tmp_path / "tools", artifact_root=tmp_path),
        toolbox=None,
        provider=ScriptedProvider([text_step("ok"), text_step("noted")]),
        model="scripted-model",
        live_input=LiveInput(inbox),
    )


def test_a_queued_steer_goes_into_the_next_request_once_behind_its_marker(
    tmp_path: Path,
) -> None:
    inbox = SteerInbox(tmp_path / "steers.sqlite3")
    loop = _loop(tmp_path, inbox)
    anyio.run(loop.run_turn, "Hello.")
    inbox.offer("s1", "Just draft it.", owner_text="Just draft it.")  # between turns
    anyio.run(loop.resume_turn)
    markers = [e for e in loop.session.entries if isinstance(e, CustomEntry)]
    assert [(m.custom_type, m.data["steer_id"], m.data["request"]) for m in markers] == [
        (STEER_MARKER, "s1", "s0/request-2")
    ]
    steer_messages = [m for m in loop.session.context() if isinstance(m, UserMessage)]
    assert [(m.text, m.source, m.attribution) for m in steer_messages][-1] == (
        "Just draft it.",
        "steer",
        "owner",
    )
    assert inbox.rows()[0].consumed_by == "s0/request-2" and inbox.pending() == []
    loop.session.close()
    loop.history.close()
    inbox.close()
