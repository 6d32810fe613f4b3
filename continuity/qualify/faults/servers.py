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
    write_after,
)
from continuity.qualify.receipts import (
    FINAL,
    FaultFinal,
    InFlight,
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
            store,
            trace,
            trace_key=item.key,
            trace_digest=item.digest,
            tool_server_url=url,
            read_timeout=30,
        )
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
    loss = Loss(kind="connection_refused", observed=url.split("//", 1)[1].split("/")[0])
    write_after(work, knobs, target, loss, hold, "restart the server, replay again", restarted)
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


def _first_call(folder: Path) -> tuple[int, dict[str, object], int] | None:
    """The first history call any probe's server has received so far: (the server's
    place among the witnesses, its witness, the call's number in its log); None while
    no server has received one."""
    from continuity.sampling.history_witness import read_calls

    for place, witness in enumerate(_witnesses(folder)):
        calls = read_calls(Path(str(witness.get("calls"))))
        started = sorted(n for n, seen in calls.items() if "started" in seen)
        if started:
            return place, witness, started[0]
    return None


def _answered(witness: dict[str, object], call: int) -> bool:
    """Whether the server's log shows it began answering `call`."""
    from continuity.sampling.history_witness import read_calls

    return "answered" in read_calls(Path(str(witness.get("calls")))).get(call, set())


def _finish(process: subprocess.Popen[str], drain: threading.Thread) -> None:
    """Wait for the workload to end and its output to be drained."""
    process.wait(600)
    drain.join()
    assert process.stdout is not None
    process.stdout.close()


def kill_history_server(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The kill-history-server case: a store arm's probes each serve ConversationHistory
    from a process of their own that logs each call as it arrives and as it is answered
    (``CONTINUITY_HISTORY_PROCESS``, `continuity.sampling.history_witness`); the server is
    killed as soon as its log shows the first history call started, before it answers
    (each call is answered 1.5 s late). The after receipt proves the call was in flight
    (`InFlight`: started before the signal, never answered); that probe's sample must
    be excluded as ``store_degraded`` (never scored), the next probe's own server is the
    recovery, and the unit finishes."""
    run = FaultRun(expected_code="store_degraded")
    folder = work / "history"
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CONTINUITY_STORE": str(work / "store")}
    env |= {"CONTINUITY_OUT": str(work / "out"), "CONTINUITY_HISTORY_PROCESS": str(folder)}
    env["CONTINUITY_HISTORY_DELAY_MS"] = "1500"  # the kill lands before the answer
    command = _doit(  # an argv table: a flag and its value a line
        "units",
        "--suite", "original",
        "--trace", _TRACE,
        "--arms", "continuity-store",
        "--run", "kh",
        "--jobs", "1",
        "--probe-limit", "2",
    )  # fmt: skip
    started = time.monotonic()
    process, _ = _start(command, env)
    assert process.stdout is not None
    drain = threading.Thread(target=process.stdout.read)  # never let the pipe fill
    drain.start()
    ready = _wait_for(lambda: _first_call(folder) is not None or process.poll() is not None, 120)
    found = _first_call(folder) if ready else None
    if found is None:
        _finish(process, drain)
        _unexercised(work, process.returncode == 0)
        return run  # no probe's server received a history call: unexercised
    place, witness, call = found
    pid, url = int(str(witness["pid"])), str(witness["url"])
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
    in_flight = InFlight(call=call, started=True, answered=_answered(witness, call))
    recovered = _wait_for(lambda: len(_witnesses(folder)) > place + 1, 120)
    hold = time.monotonic() - confirmed
    if recovered:
        second = int(str(_witnesses(folder)[place + 1]["pid"]))
        restarted = identity(second) or ProcessId(pid=second, start="exited")
        host = url.split("//", 1)[1].split("/")[0]
        loss = Loss(kind="connection_refused", observed=host)
        write_after(
            work,
            knobs,
            target,
            loss,
            hold,
            "the next probe serves its own ConversationHistory",
            restarted,
            in_flight,
        )
    _finish(process, drain)
    run.timings["hold"] = hold
    run.timings["recovery"] = time.monotonic() - confirmed - hold
    _write_history_final(work, run, process)
    return run


def _write_history_final(work: Path, run: FaultRun, process: subprocess.Popen[str]) -> None:
    """``fault-final.json`` of the kill-history-server case: completed when the workload
    succeeded with its one unit and a valid sample, coded ``store_degraded`` when exactly
    one sample (the killed probe's) was excluded so; the unit is what it affected."""
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
