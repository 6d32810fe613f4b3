"""The live session: a harness process killed with a steer queued, a steer queued while
no harness runs, and the restarted process delivering each exactly once; the crash
windows inside a delivery reconciled from the session."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from continuity.errors import HarnessError
from continuity.harness.live import INBOX, deliveries, run_live
from continuity.harness.loop import STEER_MARKER
from continuity.harness.session import DurableSession
from continuity.harness.steer_inbox import SteerInbox
from continuity.messages import UserMessage
from continuity.traces.schema import Steer, iter_turns
from tests.conftest import ORIGINALS
from tests.harness.test_replay import trace_named

TRACE = "brightline-return"


def _rows(workspace: Path) -> int:
    try:
        with sqlite3.connect(f"file:{workspace / INBOX}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT count(*) FROM steers").fetchone()[0])
    except sqlite3.Error:
        return 0


def _live(*args: str) -> list[str]:
    return [sys.executable, "-m", "continuity.harness.live", *args]


def _steer_messages(workspace: Path) -> list[str]:
    session = DurableSession.load(workspace / "session" / "session.jsonl")
    texts = [
        m.text for m in session.context() if isinstance(m, UserMessage) and m.source == "steer"
    ]
    session.close()
    return texts


def test_a_killed_harness_restarts_and_delivers_each_queued_steer_once(tmp_path: Path) -> None:
    workspace = tmp_path / "live"
    trace = str(ORIGINALS / f"{TRACE}.json")
    run = _live("run", "--workspace", str(workspace), "--trace", trace, "--slow-steer-ms", "8000")
    process = subprocess.Popen(run, stdout=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while _rows(workspace) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _rows(workspace) == 1  # the trace's steer is queued, its call in flight
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)
    queued = subprocess.run(
        _live("steer", "--workspace", str(workspace), "--id", "late", "--text", "Also file it."),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert queued.stdout.strip() == "queued steer late (redeliveries 0)"
    resumed = subprocess.run(run, capture_output=True, text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads((workspace / "live.json").read_text())
    assert report["completed"] is True and len(report["starts"]) == 2
    assert report["interrupted_calls"] == 1  # the call the kill cut is answered, not re-run
    requests = {s["steer_id"]: s["request"] for s in report["steers"]}
    assert set(requests) == {"d3-16", "late"} and len(report["steers"]) == 2
    steer = next(t for _, _, t in iter_turns(trace_named(TRACE)) if isinstance(t, Steer))
    assert _steer_messages(workspace) == [steer.text, "Also file it."]
    # a third start of a finished session delivers nothing again
    again = subprocess.run(run, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0 and _steer_messages(workspace) == [steer.text, "Also file it."]


def test_a_marker_cut_off_before_its_message_gets_the_message_on_restart(tmp_path: Path) -> None:
    """The crash windows of one delivery: after the marker, before the message; after
    the message, before the inbox recorded it. Both end with one delivery."""
    workspace = tmp_path / "live"
    trace = trace_named(TRACE)
    run_live(workspace, trace)  # a finished session with the trace's steer delivered
    session_path = workspace / "session" / "session.jsonl"
    with SteerInbox(workspace / INBOX) as inbox:
        inbox.offer("cut", "Hold the refund.", owner_text="Hold the refund.")
    session = DurableSession.load(session_path)
    request = f"{session.header.session_id}/request-99"
    digest = hashlib.sha256(b"Hold the refund.").hexdigest()
    marker = {"steer_id": "cut", "sha256": digest, "request": request}
    session.append_custom(STEER_MARKER, marker)  # the process died right here
    session.close()
    report = run_live(workspace, trace)
    assert _steer_messages(workspace).count("Hold the refund.") == 1
    with SteerInbox(workspace / INBOX) as inbox:
        assert {r.steer_id: r.consumed_by for r in inbox.rows()}["cut"] == request
        # the session holds a delivery the inbox never recorded: reconciled, not redone
        inbox._db.execute("UPDATE steers SET consumed_by = NULL WHERE steer_id = 'cut'")
    run_live(workspace, trace)
    assert _steer_messages(workspace).count("Hold the refund.") == 1
    session = DurableSession.load(session_path)
    assert [d.steer_id for d in deliveries(session)].count("cut") == 1
    session.close()
    assert msgspec.json.decode((workspace / "live.json").read_bytes())["completed"] is True
    assert report.completed


def test_the_command_line_refuses_bad_input_with_one_coded_line(tmp_path: Path) -> None:
    workspace = str(tmp_path / "live")
    missing = subprocess.run(
        _live("run", "--workspace", workspace, "--trace", str(tmp_path / "none.json")),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    malformed = subprocess.run(
        _live("run", "--workspace", workspace, "--trace", str(bad)),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    steer = _live("steer", "--workspace", workspace, "--id", "s1", "--text")
    subprocess.run([*steer, "Draft it."], capture_output=True, timeout=60, check=True)
    conflict = subprocess.run(
        [*steer, "Send it."], capture_output=True, text=True, timeout=60, check=False
    )
    negative = subprocess.run(
        _live("run", "--workspace", workspace, "--trace", str(bad), "--slow-steer-ms", "-5"),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    unknown = subprocess.run(_live("resume"), capture_output=True, text=True, timeout=60)
    for done, code, status in (
        (missing, "live_io_failed", 1), (malformed, "trace_malformed", 1),
        (conflict, "steer_conflict", 1), (negative, "option_invalid", 2),
        (unknown, "option_invalid", 2),
    ):  # fmt: skip
        lines = done.stderr.strip().splitlines()
        assert done.returncode == status and len(lines) == 1, done.stderr
        assert lines[0].startswith(f"error {code}: "), lines[0]


def test_a_marker_whose_text_the_inbox_does_not_hold_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "live"
    trace = trace_named(TRACE)
    run_live(workspace, trace)
    with SteerInbox(workspace / INBOX) as inbox:
        inbox.offer("s9", "The real text.")
    session = DurableSession.load(workspace / "session" / "session.jsonl")
    session.append_custom(STEER_MARKER, {"steer_id": "s9", "sha256": "0" * 64, "request": "r"})
    session.close()
    with pytest.raises(HarnessError) as caught:
        run_live(workspace, trace)
    assert (caught.value.code, caught.value.location) == ("steer_unknown", "s9")


def test_two_harnesses_never_run_one_live_session(tmp_path: Path) -> None:
    from continuity.harness.live import _lock_workspace

    held = _lock_workspace(tmp_path / "live")
    try:
        with pytest.raises(HarnessError) as caught:
            run_live(tmp_path / "live", trace_named(TRACE))
        assert caught.value.code == "live_workspace_busy"
    finally:
        held.close()
