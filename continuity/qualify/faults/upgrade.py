"""The upgrade-aba case (`continuity.qualify.faults`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from continuity.qualify.cases import Knobs
from continuity.qualify.faults.common import (
    FaultRun,
    _aim,
    _git,
    _sha256,
    _units,
)
from continuity.qualify.receipts import (
    AFTER,
    FINAL,
    Delivery,
    FaultAfter,
    FaultFinal,
    Loss,
    ProcessId,
    identity,
    write_receipt,
)

__all__ = ["upgrade_aba"]


_ABA_TRACES = ("brightline-return", "fernway-office-move", "harbor-market-stall")
_B_CHANGE = "continuity/runner/units/record.py"  # inside the unit code: B's units differ


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


def _fill(
    work: Path, builds: tuple[Path, Path], env: dict[str, str], knobs: Knobs, case_id: str
) -> _Chunks:
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
            _aim(work, knobs, case_id, process)
            boundary = time.monotonic()  # build A's runner has exited: the switch
            time.sleep(knobs.interval_s)
    switched = FaultAfter(
        killed=chunks.processes[0],
        signal=knobs.signal,
        loss=Loss(kind="group_gone", observed="build A's runner exited"),
        hold_s=round(time.monotonic() - boundary, 3),
        recovery="chunk 2 with build B, chunk 3 with build A",
        restarted=chunks.processes[1],
    )
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
            cwd=builds[0],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
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
