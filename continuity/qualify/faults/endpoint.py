"""The drop-endpoint case (`continuity.qualify.faults`).

A real-mode run (``doit dry_run``, then ``doit units --real --confirm-plan``) of one
original trace, arm native, two probes, against the loopback wire stand-in in a process
of its own at a fixed port. The stand-in streams half of the second model call's answer
and stalls (``--stall-from 2``, which notes ``{"stalled": 2}`` in its calls log); the
case then kills it with the configured signal, so the endpoint stops mid-stream. The
loss is confirmed by a refused connection to the port. The run must observe the reset
stream and stop with the resumable ``run_incomplete`` naming
``provider_stream_interrupted``: its last coded line is the code graded (anything else
is ``code_mismatch``). After the hold a new stand-in listens at the same port (the
plan's base URL, so its digest, is unchanged) and the same command runs again: it must
finish, sending only the lost call (the first call is replayed from the call cache).

Calls are attributed by the digest of the request body the endpoint received, across
both stand-ins' shared calls log: a call the first run completed and the rerun sent
again is ``call_sent_twice``; the lost call must be sent again exactly once.

Real mode refuses to run under a ``CI`` variable (``real_refused_ci``) and outside a
clean checkout. This case is the one place the qualification runs it: from a clean
worktree of this checkout's HEAD, with ``CI`` removed from the workload's environment
only, against an endpoint it started itself on 127.0.0.1 with an empty API key, so no
call can leave the machine or cost anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
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
    _aim,
    _git,
    _infrastructure,
    _sha256,
    _start,
    _unexercised,
    _wait_for,
    write_after,
)
from continuity.qualify.faults.servers import _refused
from continuity.qualify.receipts import (
    FINAL,
    Delivery,
    FaultFinal,
    Loss,
    ProcessId,
    identity,
    write_receipt,
)

__all__ = ["drop_endpoint"]

_STALL = 2  # the call the endpoint stops in the middle of


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _endpoint(port: int, log: Path, stall: bool) -> tuple[subprocess.Popen[str], ProcessId]:
    command = [sys.executable, "-m", "continuity.servers.wire", "--port", str(port)]
    command += ["--calls-log", str(log)] + (["--stall-from", str(_STALL)] if stall else [])
    server = subprocess.Popen(
        command, cwd=_REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert server.stdout is not None
    line = server.stdout.readline()  # it prints its URL once
    server.stdout.close()
    found = identity(server.pid)
    if not line.startswith("listening") or found is None:
        server.kill()
        raise _infrastructure(
            f"the endpoint did not start at port {port}", "qualify_workload_failed"
        )
    return server, found


def _log(log: Path) -> list[dict[str, object]]:
    if not log.is_file():
        return []
    entries = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # the line being written
    return entries


def _calls(entries: list[dict[str, object]]) -> list[str]:
    """The digest of each model call's request body, in the order the endpoint got them."""
    return [
        hashlib.sha256(json.dumps(e["body"], sort_keys=True).encode()).hexdigest()
        for e in entries
        if "body" in e
    ]


class _Real:
    """The real-mode workload: a clean worktree, its environment and its commands."""

    def __init__(self, work: Path, port: int) -> None:
        self.checkout = work / "checkout"
        _git("worktree", "add", "-q", "--detach", str(self.checkout), "HEAD")
        credentials = work / "credentials.json"
        credentials.write_text('{"api_key": ""}\n', encoding="utf-8")
        self.env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONPATH")}
        self.env["CONTINUITY_STORE"] = str(work / "store")
        self.options = [  # an argv table: a flag and its value a line
            "--provider", "openai-chat",
            "--base-url", f"http://127.0.0.1:{port}/v1",
            "--reader", "openai:local-model",
            "--judge", "none",
            "--effort", "none",
            "--arms", "native",
            "--probe-limit", "2",
            "--credentials", str(credentials),
        ]  # fmt: skip
        self.out = work / "run"

    def confirm(self) -> list[str]:
        """Dry-run the plan; the ``doit units --real`` command that runs it."""
        done = subprocess.run(
            [sys.executable, "-m", "doit", "dry_run", *self.options],
            cwd=self.checkout,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        found = re.search(r"--confirm-plan ([0-9a-f]{64})", done.stdout)
        if done.returncode != 0 or found is None:
            said = (done.stderr or done.stdout).strip()[-200:]
            raise _infrastructure(f"the dry run failed: {said}", "qualify_workload_failed")
        return [  # an argv table: a flag and its value a line
            sys.executable, "-m", "doit", "units", "--real", *self.options,
            "--confirm-plan", found.group(1),
            "--out", str(self.out),
            "--trace", _TRACE,
            "--jobs", "1",
        ]  # fmt: skip

    def close(self) -> None:
        _git("worktree", "remove", "--force", str(self.checkout))
        _git("worktree", "prune")


def drop_endpoint(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The drop-endpoint case (module doc)."""
    run = FaultRun(expected_code="run_incomplete")
    work.mkdir(parents=True, exist_ok=True)
    port, log = _free_port(), work / "calls.jsonl"
    real = _Real(work, port)
    try:
        return _drop(work, knobs, case_id, run, real, port, log)
    finally:
        real.close()


def _drop(
    work: Path, knobs: Knobs, case_id: str, run: FaultRun, real: _Real, port: int, log: Path
) -> FaultRun:
    command = real.confirm()
    server, target = _endpoint(port, log, stall=True)
    try:
        return _fault(work, knobs, case_id, run, (real, command), server, target, port, log)
    finally:
        server.kill()
        server.wait(10)


def _stop(
    work: Path,
    knobs: Knobs,
    case_id: str,
    run: FaultRun,
    process: subprocess.Popen[str],
    endpoint: tuple[subprocess.Popen[str], ProcessId],
    port: int,
    log: Path,
) -> float | None:
    """Kill the endpoint once it stalls mid-stream; when the loss was confirmed (None:
    the run ended first, unexercised), after the run has stopped."""
    server, target = endpoint
    stalled = {"stalled": _STALL}
    started = time.monotonic()
    if not _wait_for(lambda: stalled in _log(log) or process.poll() is not None, 300) or (
        stalled not in _log(log)
    ):
        process.wait(600)
        _unexercised(work, process.returncode == 0)
        return None
    _aim(work, knobs, case_id, target)
    os.kill(server.pid, signal.Signals[knobs.signal])
    server.wait(10)
    run.timings["until_fault"] = time.monotonic() - started
    if not _wait_for(lambda: _refused(f"http://127.0.0.1:{port}/v1"), 10):
        raise _infrastructure("the killed endpoint still accepts", "qualify_loss_unconfirmed")
    confirmed = time.monotonic()
    process.wait(600)  # the run observes the reset and stops
    return confirmed


def _first_run_code(work: Path, said: str, returncode: int) -> str | None:
    """The code the first run stopped with, kept as ``run-1.txt`` (`said`, its output):
    the last code it printed when it failed for the lost stream, None otherwise."""
    (work / "run-1.txt").write_text(said, encoding="utf-8")
    coded = re.findall(r"^([a-z_]+): ", said, re.M)
    code = coded[-1] if returncode != 0 and coded else None
    if "provider_stream_interrupted" not in said:
        code = None  # it did not stop for the lost stream (run-1.txt says what it did)
    return code


def _fault(
    work: Path,
    knobs: Knobs,
    case_id: str,
    run: FaultRun,
    workload: tuple[_Real, list[str]],
    server: subprocess.Popen[str],
    target: ProcessId,
    port: int,
    log: Path,
) -> FaultRun:
    real, command = workload
    process, _ = _start(command, real.env, cwd=real.checkout)
    stdout = process.stdout
    assert stdout is not None
    output: list[str] = []
    drain = threading.Thread(target=lambda: output.append(stdout.read()), daemon=True)
    drain.start()  # never let the pipe fill
    try:
        stopped = _stop(work, knobs, case_id, run, process, (server, target), port, log)
    finally:
        kill_group(process.pid, tolerate=GONE)
        drain.join(10)
        stdout.close()
    if stopped is None:
        return run  # unexercised
    code = _first_run_code(work, "".join(output), process.returncode)
    confirmed = stopped
    first = _log(log)
    time.sleep(knobs.interval_s)
    fresh, restarted = _endpoint(port, log, stall=False)
    hold = time.monotonic() - confirmed
    loss = Loss(kind="connection_reset", observed=f"127.0.0.1:{port}")
    write_after(
        work,
        knobs,
        target,
        loss,
        hold,
        "restart the endpoint at the same port, rerun the same command",
        restarted,
    )
    try:
        again = subprocess.run(
            command,
            cwd=real.checkout,
            env=real.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        fresh.kill()
        fresh.wait(10)
    (work / "run-2.txt").write_text(again.stdout + again.stderr, encoding="utf-8")
    run.timings["hold"] = hold
    run.timings["recovery"] = time.monotonic() - confirmed - hold
    sent, resent = _calls(first), _calls(_log(log)[len(first) :])
    lost = sent[_STALL - 1] if len(sent) >= _STALL else ""
    deliveries = [Delivery(kind="call", id=d, sha256=d, lost=d == lost) for d in sent]
    deliveries += [Delivery(kind="call", id=d, sha256=d) for d in resent]
    units = sorted((real.out / "units").glob("*.json"))
    run.affected = {p.name: p for p in units} | {
        name: work / name for name in ("run-1.txt", "run-2.txt", "calls.jsonl")
    }
    final = FaultFinal(
        completed=again.returncode == 0 and len(units) == 1 and lost in resent,
        code=code,
        affected={n: _sha256(p) for n, p in run.affected.items()},
        deliveries=deliveries,
    )
    write_receipt(work, FINAL, final)
    return run
