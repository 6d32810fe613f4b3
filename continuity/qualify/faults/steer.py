"""The steer-across-restart case (`continuity.qualify.faults`).

The workload is a live session of one original trace (`continuity.harness.live`): the
trace's steer is queued in the session's durable inbox when its tool call starts, and
that call is held in flight. Once the inbox holds the steer, the harness's process
group is killed with the configured signal; the loss is confirmed when the group has
no member left. While no harness runs, a second owner steer is queued from another
process (``live steer``). After the hold the same command restarts the harness, which
must deliver both steers exactly once, into requests after the restart, and finish the
trace.

Steer deliveries are attributed from the durable session alone, by each steer
message's text digest against the inbox's steers (not from the harness's own markers),
each with the request that consumed it: a steer consumed by two requests fails the
grader (``steer_consumed_twice``); one the inbox holds and the session never delivered
leaves the case not completed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from continuity.processes import GONE, kill_group
from continuity.qualify.cases import Knobs
from continuity.qualify.faults.common import (
    _REPO,
    _TRACE,
    FaultRun,
    _infrastructure,
    _kill_group,
    _sha256,
    _start,
    _unexercised,
    _wait_for,
    write_after,
)
from continuity.qualify.receipts import (
    FINAL,
    Delivery,
    FaultFinal,
    Loss,
    ProcessId,
    write_receipt,
)
from continuity.sqlite_open import READ_ONLY, open_db

__all__ = ["steer_across_restart"]

_EXTERNAL_TEXT = "One more thing while you are at it: keep every receipt for the warranty file."


def _queued(inbox: Path) -> list[tuple[str, str, str | None]]:
    """(steer id, text digest, consuming request) of every steer the inbox holds."""
    if not inbox.is_file():
        return []
    try:
        with open_db(inbox, READ_ONLY) as db:
            rows = db.execute("SELECT steer_id, sha256, consumed_by FROM steers ORDER BY seq")
            return [(r[0], r[1], r[2]) for r in rows]
    except sqlite3.Error:
        return []  # not created yet


def _attributed(session: Path, queued: list[tuple[str, str, str | None]]) -> list[Delivery]:
    """Every steer message in the session, attributed to its steer by text digest, with
    the request that consumed it (the ordinal of the next model reply)."""
    by_digest = {digest: steer_id for steer_id, digest, _ in queued}
    found: list[Delivery] = []
    header, *lines = session.read_text(encoding="utf-8").splitlines()
    session_id = json.loads(header)["session_id"]
    replies = 0
    for line in lines:
        entry = json.loads(line)
        message = entry.get("message") or {}
        if message.get("role") == "assistant":
            replies += 1
        elif message.get("role") == "user" and message.get("source") == "steer":
            digest = hashlib.sha256(message["text"].encode("utf-8")).hexdigest()
            steer_id = by_digest.get(digest, f"unqueued:{digest[:16]}")
            request = f"{session_id}/request-{replies + 1}"
            found.append(Delivery(kind="steer", id=steer_id, sha256=request))
    # a steer counts as consumed only by a request that was answered
    return [d for d in found if _request_number(d.sha256) <= replies]


def _after_restart(session: Path, restarted_pid: int) -> int:
    """The 1-based line of the restarted harness's ``live_start`` entry (0: none)."""
    for number, line in enumerate(session.read_text(encoding="utf-8").splitlines(), start=1):
        entry = json.loads(line)
        if entry.get("custom_type") == "live_start" and entry["data"]["pid"] == restarted_pid:
            return number
    return 0


def _request_number(request: str) -> int:
    return int(request.rsplit("-", 1)[1])


def steer_across_restart(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The steer-across-restart case (module doc)."""
    run = FaultRun()
    workspace, trace = work / "live", _REPO / "fixtures" / "original" / f"{_TRACE}.json"
    inbox = workspace / "steers.sqlite3"
    command = [  # an argv table: a flag and its value a line
        sys.executable, "-m", "continuity.harness.live", "run",
        "--workspace", str(workspace),
        "--trace", str(trace),
        "--slow-steer-ms", "4000",
    ]  # fmt: skip
    started = time.monotonic()
    process, target = _start(command, dict(os.environ))
    assert process.stdout is not None
    drain = threading.Thread(target=process.stdout.read, daemon=True)  # never let it fill
    drain.start()
    if not _wait_for(lambda: bool(_queued(inbox)) or process.poll() is not None, 120) or (
        process.poll() is not None
    ):
        process.wait(60)
        drain.join()
        process.stdout.close()
        _unexercised(work, process.returncode == 0)
        return run  # it ended before a steer was queued: unexercised
    confirmed = _kill_group(work, knobs, case_id, run, (process.pid, target), started, "harness")
    process.wait(10)
    drain.join()
    process.stdout.close()
    if any(consumed is not None for _, _, consumed in _queued(inbox)):
        _unexercised(work, False)  # its call returned before the kill: nothing was queued
        return run
    steer_id = f"qualify-steer-{knobs.seed}"
    queue = [  # an argv table: a flag and its value a line
        sys.executable, "-m", "continuity.harness.live", "steer",
        "--workspace", str(workspace),
        "--id", steer_id,
        "--text", _EXTERNAL_TEXT,
    ]  # fmt: skip
    queued = subprocess.run(queue, cwd=_REPO, capture_output=True, timeout=60, check=False)
    if queued.returncode != 0:
        raise _infrastructure("the steer could not be queued", "qualify_workload_failed")
    time.sleep(max(0.0, knobs.interval_s - (time.monotonic() - confirmed)))
    again, restarted = _start(command, dict(os.environ))
    hold = time.monotonic() - confirmed
    loss = Loss(kind="group_gone", observed="harness group")
    write_after(
        work, knobs, target, loss, hold, "queue a second steer, rerun the same command", restarted
    )
    try:
        again.communicate(timeout=600)
    finally:
        kill_group(again.pid, tolerate=GONE)
    run.timings["hold"] = hold
    run.timings["recovery"] = time.monotonic() - confirmed - hold
    _write_final(work, run, workspace, inbox, again, restarted)
    return run


def _write_final(
    work: Path,
    run: FaultRun,
    workspace: Path,
    inbox: Path,
    again: subprocess.Popen[str],
    restarted: ProcessId,
) -> None:
    """``fault-final.json`` of the rerun `again` (started as `restarted`): completed when
    it succeeded and delivered both steers, each consumed, into requests after the
    restart; the session and the live state (under `workspace`) are what it affected."""
    session = workspace / "session" / "session.jsonl"
    steers = _queued(inbox)
    deliveries = _attributed(session, steers)
    restart_line = _after_restart(session, restarted.pid)
    delivered = {d.id for d in deliveries}
    first_after = _first_request_after(session, restart_line)
    completed = (
        again.returncode == 0
        and len(steers) == 2
        and all(s in delivered and consumed is not None for s, _, consumed in steers)
        and all(_request_number(d.sha256) >= first_after for d in deliveries)
        and restart_line > 0
    )
    affected = {"session.jsonl": session, "live.json": workspace / "live.json"}
    run.affected = {n: p for n, p in affected.items() if p.is_file()}
    final = FaultFinal(
        completed=completed,
        code=None,
        affected={n: _sha256(p) for n, p in run.affected.items()},
        deliveries=deliveries,
    )
    write_receipt(work, FINAL, final)


def _first_request_after(session: Path, line_number: int) -> int:
    """The ordinal of the first model request made after session line `line_number`."""
    replies = 0
    for number, line in enumerate(session.read_text(encoding="utf-8").splitlines(), start=1):
        if number > line_number:
            break
        message = json.loads(line).get("message") or {}
        replies += message.get("role") == "assistant"
    return replies + 1
