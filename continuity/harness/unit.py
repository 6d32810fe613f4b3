"""The unit worker: every probe of one unit, each in a fresh process on a fresh copy.

``python -m continuity.harness.unit --request FILE`` is started once per unit (repeat x
trace x arm) by the runner, which holds the checkpoint's lock for the whole unit. For
each probe the worker restores the pristine checkpoint snapshot at its original path,
then forks: the forked child is a new process (new pid, no state from earlier probes)
that crosses the arm's boundary and asks that one probe (`continuity.harness.probe`),
and reports its evidence through a pipe. Forking a warmed-up worker makes "a fresh
process per probe" cost milliseconds instead of a Python start-up per probe.

The worker prints a `UnitWorkerResult` as JSON: one `ProbeOutcome` per probe, either
the sample's evidence or the child's error code. A probe that fails never stops the
others.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import anyio
import msgspec

from continuity.errors import typed_error
from continuity.harness.receipts import ProbeRequest, SampleEvidence
from continuity.harness.workspace import Workspace
from continuity.providers.endpoint import RealBinding
from continuity.store import Store

__all__ = ["ProbeOutcome", "ProbeSpec", "UnitRequest", "UnitWorkerResult", "main"]


class ProbeSpec(msgspec.Struct, frozen=True):
    index: int
    text: str
    needles: list[str]


class UnitRequest(msgspec.Struct, frozen=True, kw_only=True):
    store_root: str
    tree: str
    workspace: str
    arm: str
    probes: list[ProbeSpec]
    dump_requests: str | None = None
    real: RealBinding | None = None


class ProbeOutcome(msgspec.Struct, frozen=True):
    index: int
    evidence: SampleEvidence | None
    error: str | None


class UnitWorkerResult(msgspec.Struct, frozen=True):
    worker_pid: int
    outcomes: list[ProbeOutcome]


def _child(workspace: Path, request: ProbeRequest, write_fd: int) -> None:
    """Runs in the forked child: never returns."""
    from continuity.harness.probe import run_probe

    code = 0
    try:
        payload = msgspec.json.encode(
            ProbeOutcome(
                request.probe_index, anyio.run(run_probe, Workspace(workspace), request), None
            )
        )
    except BaseException as exc:  # reported to the parent, whatever it is
        typed = typed_error(exc)
        message = str(typed) if typed is not None else f"{type(exc).__name__}: {exc}"
        payload = msgspec.json.encode(ProbeOutcome(request.probe_index, None, message))
        code = 3
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(payload)
    os._exit(code)


def run_unit(request: UnitRequest) -> UnitWorkerResult:
    store = Store(request.store_root)
    root = Path(request.workspace)
    outcomes = []
    for spec in request.probes:
        if root.exists():
            shutil.rmtree(root)
        store.restore_tree(request.tree, root)
        probe = ProbeRequest(
            arm=request.arm,
            probe_text=spec.text,
            probe_index=spec.index,
            parent_pid=os.getpid(),
            dump_requests=request.dump_requests,
            needles=spec.needles,
            real=request.real,
        )
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the fresh process for this probe
            os.close(read_fd)
            _child(root, probe, write_fd)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        try:
            outcome = msgspec.json.decode(data, type=ProbeOutcome)
        except msgspec.MsgspecError:
            outcome = ProbeOutcome(
                spec.index, None, f"child_failed: probe child died (wait status {status})"
            )
        outcomes.append(outcome)
    return UnitWorkerResult(os.getpid(), outcomes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m continuity.harness.unit")
    parser.add_argument("--request", type=Path, required=True)
    args = parser.parse_args(argv)
    request = msgspec.json.decode(args.request.read_bytes(), type=UnitRequest)
    # Warm the imports once here, so every forked probe starts with them loaded.
    import continuity.harness.probe
    from continuity.arms import ARMS

    if request.real is not None:
        import continuity.providers.cache
        import continuity.providers.real
    if ARMS[request.arm].history_tool:
        import continuity.harness.toolbox
        import continuity.servers.history  # noqa: F401
    result = run_unit(request)
    sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
