"""The kill-tool-server and kill-history-server cases (`continuity.qualify.faults`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from continuity.errors import ContinuityError
from continuity.qualify.cases import Knobs
from continuity.qualify.faults.common import (
    _REPO,
    _TRACE,
    FaultRun,
    _aim,
    _doit,
    _infrastructure,
    _sha256,
    _start,
    _unexercised,
    _units,
    _wait_for,
)
from continuity.qualify.receipts import (
    AFTER,
    FINAL,
    FaultAfter,
    FaultFinal,
    Loss,
    ProcessId,
    identity,
    write_receipt,
)

__all__ = ["kill_history_server", "kill_tool_server"]


def _fixture_server(trace: Path, log: Path, delay_ms: int) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "continuity.servers.fixture", "--trace", str(trace)]
    command += ["--delay-ms", str(delay_ms), "--log", str(log)]
    server = subprocess.Popen(
        command, cwd=_REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert server.stdout is not None
    url = server.stdout.readline().split()[-1]
    server.stdout.close()  # it prints its URL once
    return server, url


def _refused(url: str) -> bool:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def _replay(store_root: Path, url: str) -> str | None:
    """Replay the trace into its checkpoint through `url`; the typed code, or None."""
    from continuity.harness.checkpoints import build_checkpoint
    from continuity.store import Store
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    store = Store(store_root)
    suite = build_suite(store, "original", out_dir=store_root.parent / "traces")
    (item,) = [i for i in suite.items if i.trace_id == _TRACE]
    trace = load_trace(store.get_blob(item.digest), source=_TRACE)
    try:
        build_checkpoint(
            store, trace, trace_key=item.key, trace_digest=item.digest, tool_server_url=url,
            read_timeout=30,
        )  # fmt: skip
    except ContinuityError as error:
        return error.code
    return None


def kill_tool_server(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The kill-tool-server case (module doc)."""
    run = FaultRun(expected_code="tool_server_unavailable")
    trace = _REPO / "fixtures" / "original" / f"{_TRACE}.json"
    work.mkdir(parents=True, exist_ok=True)
    log = work / "calls.jsonl"
    started = time.monotonic()
    server, url = _fixture_server(trace, log, delay_ms=3000)
    target = identity(server.pid)
    if target is None:
        raise _infrastructure("the tool server exited at once", "qualify_workload_failed")
    codes: list[str | None] = []
    replay = threading.Thread(target=lambda: codes.append(_replay(work / "store", url)))
    replay.start()
    if not _wait_for(lambda: log.is_file() and log.stat().st_size > 0, 60):
        replay.join()
        server.kill()
        _unexercised(work, False)
        return run  # no call ever reached the server: unexercised
    _aim(work, knobs, case_id, target)
    os.kill(server.pid, signal.Signals[knobs.signal])
    server.wait(10)
    run.timings["until_fault"] = time.monotonic() - started
    if not _wait_for(lambda: _refused(url), 10):
        raise _infrastructure("the killed server still accepts", "qualify_loss_unconfirmed")
    confirmed = time.monotonic()
    replay.join(60)
    seen = codes[0] if codes else None
    time.sleep(knobs.interval_s)
    fresh, fresh_url = _fixture_server(trace, work / "calls-rerun.jsonl", delay_ms=0)
    hold = time.monotonic() - confirmed
    restarted = identity(fresh.pid) or ProcessId(pid=fresh.pid, start="exited")
    write_receipt(
        work,
        AFTER,
        FaultAfter(
            killed=target, signal=knobs.signal,
            loss=Loss(kind="connection_refused", observed=url.split("//", 1)[1].split("/")[0]),
            hold_s=round(hold, 3), recovery="restart the server, replay again",
            restarted=restarted,
        ),
    )  # fmt: skip
    try:
        rerun = _replay(work / "store", fresh_url)
    finally:
        fresh.kill()
        fresh.wait(10)
    run.timings["hold"] = hold
    run.timings["recovery"] = time.monotonic() - confirmed - hold
    final = FaultFinal(completed=rerun is None, code=seen, affected={}, deliveries=[])
    write_receipt(work, FINAL, final)
    return run


def _witnesses(folder: Path) -> list[dict[str, object]]:
    """The history-server witnesses so far, in the order the servers started."""
    found = []
    for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue  # being written
    return found


def _degraded(work: Path) -> tuple[int, int]:
    """(samples store_degraded, samples scored) of the run's unit: read from its file."""
    units = _units(work, "kh")
    if not units:
        return 0, 0
    record = json.loads(next(iter(units.values())).read_text())
    statuses = [probe["status"] for probe in record["probes"]]
    return statuses.count("store_degraded"), statuses.count("valid")


def kill_history_server(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The kill-history-server case: a store arm's probes each serve ConversationHistory
    from a process of their own (``CONTINUITY_HISTORY_PROCESS``); the first probe's server
    is killed as soon as it listens. That probe's calls fail, its sample must be excluded
    as ``store_degraded`` (never scored), the next probe's own server is the recovery, and
    the unit finishes."""
    run = FaultRun(expected_code="store_degraded")
    folder = work / "history"
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CONTINUITY_STORE": str(work / "store")}
    env |= {"CONTINUITY_OUT": str(work / "out"), "CONTINUITY_HISTORY_PROCESS": str(folder)}
    env["CONTINUITY_HISTORY_DELAY_MS"] = "1500"  # a call is in flight when the kill lands
    command = _doit("units", "--suite", "original", "--trace", _TRACE, "--arms",
                    "continuity-store", "--run", "kh", "--jobs", "1",
                    "--probe-limit", "2")  # fmt: skip
    started = time.monotonic()
    process, _ = _start(command, env)
    assert process.stdout is not None
    drain = threading.Thread(target=process.stdout.read)  # never let the pipe fill
    drain.start()
    if not _wait_for(lambda: bool(_witnesses(folder)), 120):
        process.wait(600)
        drain.join()
        process.stdout.close()
        _unexercised(work, process.returncode == 0)
        return run  # no probe served history: unexercised
    first = _witnesses(folder)[0]
    pid, url = int(str(first["pid"])), str(first["url"])
    target = identity(pid) or ProcessId(pid=pid, start="exited")
    _aim(work, knobs, case_id, target)
    try:
        os.kill(pid, signal.Signals[knobs.signal])
    except ProcessLookupError:
        raise _infrastructure(
            "the history server ended before the fault", "qualify_workload_failed"
        ) from None
    run.timings["until_fault"] = time.monotonic() - started
    if not _wait_for(lambda: _refused(url), 10):
        raise _infrastructure("the killed history server still accepts", "qualify_loss_unconfirmed")
    confirmed = time.monotonic()
    recovered = _wait_for(lambda: len(_witnesses(folder)) > 1, 120)
    hold = time.monotonic() - confirmed
    if recovered:
        second = int(str(_witnesses(folder)[1]["pid"]))
        restarted = identity(second) or ProcessId(pid=second, start="exited")
        host = url.split("//", 1)[1].split("/")[0]
        write_receipt(work, AFTER, FaultAfter(killed=target, signal=knobs.signal,
                      loss=Loss(kind="connection_refused", observed=host), hold_s=round(hold, 3),
                      recovery="the next probe serves its own ConversationHistory",
                      restarted=restarted))  # fmt: skip
    process.wait(600)
    drain.join()
    process.stdout.close()
    run.timings["hold"] = hold
    run.timings["recovery"] = time.monotonic() - confirmed - hold
    degraded, valid = _degraded(work)
    units = _units(work, "kh")
    final = FaultFinal(
        completed=process.returncode == 0 and len(units) == 1 and valid > 0,
        code="store_degraded" if degraded == 1 else None,  # exactly the killed probe's
        affected={n: _sha256(p) for n, p in units.items()},
        deliveries=[],
    )
    write_receipt(work, FINAL, final)
    run.affected = units
    return run
