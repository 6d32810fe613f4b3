"""The fault cases: each runs a real offline workload and injects one fault.

Every case writes its receipts into the attempt's ``work/`` as it goes
(`continuity.qualify.receipts`): ``fault-before.json`` once the fault is aimed at a live
process, ``fault-after.json`` once the loss is confirmed, the hold held and the
recovery started, ``fault-final.json`` when the recovery ends. The configured interval
is a minimum hold after the loss is confirmed. Nothing retries automatically: the
recovery is the one action the case names.

- `kill_runner`: ``doit units`` over four original traces and four arms, in a private
  store and output, in a process group of its own; once the knobs' ``at_unit``-th unit
  (default the fourth) is built the whole group is killed with the configured signal,
  the loss is confirmed when the group has no member left, and after the hold the same
  command runs again. Every unit is attributed by its key in the run's store: a unit
  the killed run finished must come back as the same bytes (an identical redelivery);
  ``doit verify`` then checks the store holds nothing corrupt or half-written.
- `kill_tool_server`: the checkpoint replay of one original trace against the MCP
  fixture tool server in a process of its own, slowed so that a call is in flight; the
  server is killed once its log shows the call, the loss is confirmed by a refused
  connection to its port, the replay must fail with ``tool_server_unavailable``, and
  after the hold a new server is started and the replay run again.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from continuity.errors import ContinuityError
from continuity.qualify.cases import Knobs
from continuity.qualify.receipts import (
    AFTER,
    BEFORE,
    FINAL,
    Delivery,
    FaultAfter,
    FaultBefore,
    FaultFinal,
    Loss,
    ProcessId,
    identity,
    write_receipt,
)
from continuity.spend.containment import group_members

__all__ = ["FAULTS", "FaultRun", "kill_runner", "kill_tool_server"]

_REPO = Path(__file__).resolve().parents[2]
_RUNNER_ARMS = "native,cold-rebuild,continuity-store,continuity-pack-cold"
_RUNNER_UNITS = 16  # four original traces x four arms
_TRACE = "brightline-return"


def _infrastructure(message: str, code: str) -> ContinuityError:
    """The fault could not be set up at all: an infrastructure failure, never a verdict."""
    return ContinuityError(message, code=code, location="qualify")


@dataclass
class FaultRun:
    """What a case leaves for grading: the affected files and the phase timings."""

    affected: dict[str, Path] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    expected_code: str | None = None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _confirm_group_gone(pgid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.05)
    return False


def _doit(*args: str) -> list[str]:
    return [sys.executable, "-m", "doit", "-f", str(_REPO / "dodo.py"), *args]


def _units_command() -> list[str]:
    return _doit(
        "units", "--suite", "original", "--arms", _RUNNER_ARMS, "--run", "qualify",
        "--jobs", "1",
    )  # fmt: skip


def _stored_units(work: Path) -> dict[str, str]:
    """Every unit the run's store holds: its key -> its output's digest."""
    from continuity.store import Store

    if not (work / "store" / "actions").is_dir():
        return {}
    store = Store(work / "store")
    found = {}
    for path in store.iter_actions():
        entry = store.get_action(path.stem, verify_output=False)
        if entry is not None and entry.kind == "unit":
            found[path.stem] = entry.output.digest
    return found


def _units(work: Path, run: str = "qualify") -> dict[str, Path]:
    folder = work / "out" / "runs" / run / "units"
    return {p.name: p for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def _start(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], ProcessId]:
    process = subprocess.Popen(
        command,
        cwd=_REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group: the fault takes all of it
    )
    found = identity(process.pid)
    if found is None:
        raise _infrastructure("the workload exited at once", "qualify_workload_failed")
    return process, found


def kill_runner(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The kill-runner case (module doc)."""
    run = FaultRun()
    env = {
        **os.environ,
        "CONTINUITY_STORE": str(work / "store"),
        "CONTINUITY_OUT": str(work / "out"),
    }
    started = time.monotonic()
    process, target = _start(_units_command(), env)
    assert process.stdout is not None
    aimed = False
    marker = f"[{knobs.at_unit}/{_RUNNER_UNITS}]"  # that unit is built, the next under way
    for line in process.stdout:
        if marker in line:
            aimed = True
            break
    if not aimed:  # it ended before the fault could be aimed: unexercised
        process.wait(60)
        process.stdout.close()
        final = FaultFinal(completed=process.returncode == 0, code=None, affected={}, deliveries=[])
        write_receipt(work, FINAL, final)
        return run
    write_receipt(
        work,
        BEFORE,
        FaultBefore(
            case=case_id, signal=knobs.signal, interval_s=knobs.interval_s, seed=knobs.seed,
            target=target,
        ),
    )  # fmt: skip
    os.killpg(process.pid, signal.Signals[knobs.signal])
    run.timings["until_fault"] = time.monotonic() - started
    if not _confirm_group_gone(process.pid):
        raise _infrastructure("the runner's group outlived the signal", "qualify_loss_unconfirmed")
    confirmed = time.monotonic()
    process.wait(10)
    process.stdout.close()
    first = _stored_units(work)  # what the killed run delivered (units are keyed)
    time.sleep(knobs.interval_s)
    again, restarted = _start(_units_command(), env)
    hold = time.monotonic() - confirmed
    write_receipt(
        work,
        AFTER,
        FaultAfter(
            killed=target, signal=knobs.signal,
            loss=Loss(kind="group_gone", observed="runner group"), hold_s=round(hold, 3),
            recovery="rerun the same command", restarted=restarted,
        ),
    )  # fmt: skip
    again.communicate(timeout=600)
    run.timings["hold"] = hold
    run.timings["recovery"] = time.monotonic() - confirmed - hold
    units = _units(work)
    deliveries = [Delivery(kind="unit", id=k, sha256=d) for k, d in first.items()]
    deliveries += [Delivery(kind="unit", id=k, sha256=d) for k, d in _stored_units(work).items()]
    completed = again.returncode == 0 and len(units) == _RUNNER_UNITS
    verify = subprocess.run(
        _doit("verify"),
        cwd=_REPO, env=env, capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    final = FaultFinal(
        completed=completed,
        code=None,
        affected={n: _sha256(p) for n, p in units.items()},
        deliveries=deliveries,
        store_verified=verify.returncode == 0,  # nothing corrupt or half-written
    )
    write_receipt(work, FINAL, final)
    run.affected = units
    return run


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


def _wait_for(ready: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(0.05)
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
        write_receipt(
            work, FINAL, FaultFinal(completed=False, code=None, affected={}, deliveries=[])
        )
        return run  # no call ever reached the server: unexercised
    write_receipt(
        work,
        BEFORE,
        FaultBefore(
            case=case_id, signal=knobs.signal, interval_s=knobs.interval_s, seed=knobs.seed,
            target=target,
        ),
    )  # fmt: skip
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


_ABA_TRACES = ("brightline-return", "fernway-office-move", "harbor-market-stall")
_B_CHANGE = "continuity/runner/unit_record.py"  # inside the unit code: B's units differ


def _git(*args: str, cwd: Path = _REPO) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=qualify", "-c", "user.email=qualify@localhost", *args],
        cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        failed = done.stderr.strip()[:200]
        raise _infrastructure(f"git {args[0]} failed: {failed}", "qualify_workload_failed")
    return done.stdout.strip()


def _builds(work: Path) -> tuple[Path, Path]:
    """Build A (this checkout's HEAD) and build B (HEAD with one committed change inside
    the unit code), as worktrees of this checkout."""
    a, b = work / "build-a", work / "build-b"
    _git("worktree", "add", "-q", "--detach", str(a), "HEAD")
    _git("worktree", "add", "-q", "--detach", str(b), "HEAD")
    with open(b / _B_CHANGE, "a", encoding="utf-8") as handle:
        handle.write("# qualification: build B of an A/B/A upgrade\n")
    _git("commit", "-q", "-am", "qualification build B", cwd=b)
    return a, b


def _chunk(build: Path, trace: str, env: dict[str, str]) -> tuple[ProcessId, int]:
    """One chunk of the run with `build`'s own code (run from its directory)."""
    command = [sys.executable, "-m", "doit", "units", "--suite", "original", "--trace", trace]
    command += ["--arms", "native", "--run", "aba"]
    process = subprocess.Popen(
        command, cwd=build, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    found = identity(process.pid) or ProcessId(pid=process.pid, start="exited")
    return found, process.wait(600)


@dataclass
class _Chunks:
    written: list[dict[str, str]] = field(default_factory=list)  # per chunk: unit -> sha256
    processes: list[ProcessId] = field(default_factory=list)
    exits: list[int] = field(default_factory=list)


def _fill(work: Path, builds: tuple[Path, Path], env: dict[str, str], knobs: Knobs,
          case_id: str) -> _Chunks:  # fmt: skip
    """Chunks 1-3 with builds A, B, A; the receipts before and after the switch."""
    chunks = _Chunks()
    boundary = time.monotonic()
    order = zip((*builds, builds[0]), _ABA_TRACES, strict=True)
    for number, (build, trace) in enumerate(order, start=1):
        before = set(_units(work, "aba"))
        process, code = _chunk(build, trace, env)
        chunks.processes.append(process)
        chunks.exits.append(code)
        fresh = {n: _sha256(p) for n, p in _units(work, "aba").items() if n not in before}
        chunks.written.append(fresh)
        if number == 1:
            aimed = FaultBefore(case=case_id, signal=knobs.signal, interval_s=knobs.interval_s,
                                seed=knobs.seed, target=process)  # fmt: skip
            write_receipt(work, BEFORE, aimed)
            boundary = time.monotonic()  # build A's runner has exited: the switch
            time.sleep(knobs.interval_s)
    switched = FaultAfter(
        killed=chunks.processes[0], signal=knobs.signal,
        loss=Loss(kind="group_gone", observed="build A's runner exited"),
        hold_s=round(time.monotonic() - boundary, 3),
        recovery="chunk 2 with build B, chunk 3 with build A", restarted=chunks.processes[1],
    )  # fmt: skip
    write_receipt(work, AFTER, switched)
    return chunks


def upgrade_aba(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The upgrade-aba case: build A fills chunk 1, build B chunk 2, build A chunk 3 of one
    run; the run's aggregate must refuse to pool B's unit with A's (``run_builds_mixed``,
    naming it), and no chunk's unit may be lost or rewritten."""
    run = FaultRun(expected_code="run_builds_mixed")
    work.mkdir(parents=True, exist_ok=True)
    builds = _builds(work)
    env = {**os.environ, "CONTINUITY_STORE": str(work / "store")}
    env["CONTINUITY_OUT"] = str(work / "out")
    env.pop("PYTHONPATH", None)  # each chunk imports its own build's code
    started = time.monotonic()
    try:
        chunks = _fill(work, builds, env, knobs, case_id)
        run.timings["chunks"] = time.monotonic() - started
        aggregate = subprocess.run(
            [sys.executable, "-m", "doit", "aggregate", "--run", "aba"],
            cwd=builds[0], env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    finally:
        for build in builds:
            _git("worktree", "remove", "--force", str(build))
        _git("worktree", "prune")
    said = aggregate.stdout + aggregate.stderr
    units = _units(work, "aba")
    pairs = [(n, d) for chunk in chunks.written for n, d in chunk.items()]
    intact = all(n in units and _sha256(units[n]) == d for n, d in pairs)
    named = bool(chunks.written[1]) and all(n in said for n in chunks.written[1])
    one_each = [len(c) for c in chunks.written] == [1, 1, 1]
    final = FaultFinal(
        completed=chunks.exits == [0, 0, 0] and intact and one_each,
        code="run_builds_mixed" if "run_builds_mixed" in said and named else None,
        affected={n: _sha256(p) for n, p in units.items()},
        deliveries=[Delivery(kind="unit", id=n, sha256=d) for n, d in pairs],
    )
    write_receipt(work, FINAL, final)
    run.affected = units
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
        write_receipt(work, FINAL, FaultFinal(completed=process.returncode == 0, code=None,
                                              affected={}, deliveries=[]))  # fmt: skip
        return run  # no probe served history: unexercised
    first = _witnesses(folder)[0]
    pid, url = int(str(first["pid"])), str(first["url"])
    target = identity(pid) or ProcessId(pid=pid, start="exited")
    write_receipt(work, BEFORE, FaultBefore(case=case_id, signal=knobs.signal,
                  interval_s=knobs.interval_s, seed=knobs.seed, target=target))  # fmt: skip
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


FAULTS: dict[str, Callable[[Path, Knobs, str], FaultRun]] = {
    "kill-runner": kill_runner,
    "kill-runner-long-hold": kill_runner,
    "kill-tool-server": kill_tool_server,
    "upgrade-aba": upgrade_aba,
    "kill-history-server": kill_history_server,
}
