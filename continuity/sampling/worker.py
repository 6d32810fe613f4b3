"""The unit worker: every probe of one unit, each in a fresh process on a fresh copy.

``python -m continuity.sampling.worker`` is started once per unit (repeat x trace x arm) by
the runner, which holds the checkpoint's lock for the whole unit, and reads its
`UnitRequest` on stdin: the request holds the probes' evaluator-only values (``needles``),
so it never touches disk, and a killed worker leaves nothing of it behind. For
each probe the worker restores the pristine checkpoint snapshot at its original path,
then forks: the forked child is a new process (new pid, no state from earlier probes)
that crosses the arm's boundary and asks that one probe (`continuity.sampling.child`),
and reports its evidence through a pipe. Forking a warmed-up worker makes "a fresh
process per probe" cost milliseconds instead of a Python start-up per probe.

The worker prints a `UnitWorkerResult` as JSON: one `ProbeOutcome` per probe, either
the sample's evidence or the child's error code, with the `ProcessReceipt` of the child
that ran it (pids and time: kept beside the unit, never in it). A probe that fails never
stops the others.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import importlib.util
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec

from continuity.errors import CheckpointError, typed_error
from continuity.harness.template import Template
from continuity.harness.workspace import Workspace
from continuity.lookup.receipts import LookupBinding, LookupWitness
from continuity.parent_death import die_with_parent
from continuity.providers.endpoint import RealBinding
from continuity.sampling.receipts import ProbeRequest, ProcessReceipt, SampleEvidence
from continuity.store import Store

__all__ = [
    "ProbeOutcome",
    "ProbeSpec",
    "UnitRequest",
    "UnitWorkerResult",
    "collect_child",
    "main",
    "probe_request",
    "read_witness",
    "run_unit",
    "serve_unit",
    "warm_imports",
    "warm_zygote",
]


class ProbeSpec(msgspec.Struct, frozen=True):
    index: int
    text: str
    needles: list[str]
    lookup: LookupBinding | None = None
    # The expectation's category: which answer form its turn asks for (probe protocol).
    category: str = ""


class UnitRequest(msgspec.Struct, frozen=True, kw_only=True):
    store_root: str
    tree: str
    workspace: str
    arm: str
    probes: list[ProbeSpec]
    dump_requests: str | None = None
    real: RealBinding | None = None
    # The parent-enforced child watchdog (lookup: 720 s); None waits without a limit.
    watchdog_seconds: float | None = None
    # (reader, alternate) replacing the configured pair (the ledger arm's plan); None:
    # the configured pair.
    models: tuple[str, str] | None = None


class ProbeOutcome(msgspec.Struct, frozen=True):
    index: int
    evidence: SampleEvidence | None
    error: str | None
    # A failed lookup child's last content-free witness (its meter state survives).
    witness: LookupWitness | None = None
    # Which processes ran the probe (set by the worker, which forked the child).
    process: ProcessReceipt | None = None
    # Real mode: the keys of the probe's calls replayed from the call cache (reported
    # by the child; the worker moves them into `process`).
    replayed: list[str] = msgspec.field(default_factory=list)


def collect_child(
    pid: int,
    read_fd: int,
    *,
    watchdog: float | None,
    clock: Callable[[], float] = time.monotonic,
    poll: float = 0.05,
) -> tuple[bytes, int, bool]:
    """Read a probe child's report until it closes the pipe, then reap it; kill it when
    the watchdog expires first. Returns the report, the wait status and whether the
    watchdog fired. `clock` is injectable, so tests never wait."""
    chunks: list[bytes] = []
    started = clock()
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            if watchdog is not None and clock() - started > watchdog:
                os.kill(pid, signal.SIGKILL)
                return b"".join(chunks), os.waitpid(pid, 0)[1], True
            ready, _, _ = select.select([pipe], [], [], poll if watchdog is not None else None)
            if not ready:
                continue
            chunk = pipe.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks), os.waitpid(pid, 0)[1], False


class UnitWorkerResult(msgspec.Struct, frozen=True):
    worker_pid: int
    outcomes: list[ProbeOutcome]


def _child(workspace: Path, request: ProbeRequest, write_fd: int) -> None:
    """Runs in the forked child: never returns."""
    # Killed with the worker (fork clears the worker's own request), so a SIGKILLed
    # run leaves no probe child behind.
    die_with_parent(request.parent_pid)
    from continuity.sampling.child import run_probe

    code = 0
    replayed: list[str] = []
    try:
        evidence = anyio.run(
            functools.partial(run_probe, Workspace(workspace), request, replayed=replayed)
        )
        payload = msgspec.json.encode(
            ProbeOutcome(request.probe_index, evidence, None, replayed=replayed)
        )
    # Whatever it raises, even an interrupt, is reported to the parent and ends here in
    # os._exit: a forked child must never unwind into the worker's loop.
    except BaseException as exc:
        typed = typed_error(exc)
        message = str(typed) if typed is not None else f"{type(exc).__name__}: {exc}"
        payload = msgspec.json.encode(
            ProbeOutcome(request.probe_index, None, message, replayed=replayed)
        )
        code = 3
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(payload)
    os._exit(code)


def read_witness(path: Path) -> LookupWitness | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=LookupWitness)
    except (OSError, msgspec.MsgspecError):
        return None


def run_unit(request: UnitRequest) -> UnitWorkerResult:
    """Every probe of the unit, in order, each on a fresh copy of the checkpoint in a
    fresh forked child; a failed probe never stops the others.

    The snapshot is verified once into the checkpoint's template; each probe's copy is
    linked and copied from it (`continuity.harness.template`). A probe that changed a
    linked file gets ``checkpoint_contract_failed`` (its sample is excluded) and the
    template is rebuilt from the verified snapshot before the next probe."""
    template = Template(Store(request.store_root), request.tree, Path(request.workspace))
    outcomes: list[ProbeOutcome] = []
    if not request.probes:
        return UnitWorkerResult(os.getpid(), outcomes)
    try:
        template.build()
        for spec in request.probes:
            outcome = _run_probe_child(request, spec, template.fresh_copy())
            changed = template.check()
            if changed:
                outcome = _contract_failed(outcome, changed)
                template.build()
            outcomes.append(outcome)
    finally:
        template.remove()
    return UnitWorkerResult(os.getpid(), outcomes)


def _contract_failed(outcome: ProbeOutcome, changed: list[str]) -> ProbeOutcome:
    """The probe broke the fresh-copy rule: its sample is excluded, whatever it found."""
    return msgspec.structs.replace(
        outcome,
        evidence=None,
        error="checkpoint_contract_failed: the probe changed checkpoint files it shares "
        f"with the template: {', '.join(changed)}",
    )


def probe_request(request: UnitRequest, spec: ProbeSpec, witness_path: Path) -> ProbeRequest:
    """The probe child's request for one probe of the unit (this process is its parent;
    a lookup probe writes its witness to `witness_path`)."""
    lookup = spec.lookup
    if lookup is not None:
        lookup = msgspec.structs.replace(lookup, witness_path=str(witness_path))
    return ProbeRequest(
        arm=request.arm,
        probe_text=spec.text,
        category=spec.category,
        probe_index=spec.index,
        parent_pid=os.getpid(),
        dump_requests=request.dump_requests,
        needles=spec.needles,
        real=request.real,
        lookup=lookup,
        models=request.models,
        store_root=request.store_root,
    )


def _run_probe_child(request: UnitRequest, spec: ProbeSpec, root: Path) -> ProbeOutcome:
    """Fork the fresh process for one probe, collect its outcome, and attach the
    `ProcessReceipt` of the child that ran it."""
    witness_path = root / ".lookup-witness.json"
    probe = probe_request(request, spec, witness_path)
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the fresh process for this probe
        os.close(read_fd)
        _child(root, probe, write_fd)
    os.close(write_fd)
    data, status, fired = collect_child(pid, read_fd, watchdog=request.watchdog_seconds)
    outcome = _outcome(spec.index, data, status, request.watchdog_seconds if fired else None)
    if outcome.evidence is None and probe.lookup is not None:
        outcome = msgspec.structs.replace(outcome, witness=read_witness(witness_path))
    process = ProcessReceipt(
        probe_index=spec.index,
        parent_pid=probe.parent_pid,
        child_pid=pid,
        elapsed_seconds=round(time.monotonic() - started, 3),
        replayed_calls=outcome.replayed,
    )
    return msgspec.structs.replace(outcome, process=process, replayed=[])


def _outcome(index: int, data: bytes, status: int, watchdog: float | None) -> ProbeOutcome:
    """The child's reported outcome; ``child_failed`` when it reported none (it died),
    ``child_watchdog`` when the watchdog (`watchdog` seconds) killed it."""
    if watchdog is not None:
        return ProbeOutcome(
            index,
            None,
            f"child_watchdog: the probe child ran past the {watchdog:.0f} s "
            "watchdog and was killed",
        )
    try:
        return msgspec.json.decode(data, type=ProbeOutcome)
    except msgspec.MsgspecError:
        return ProbeOutcome(index, None, f"child_failed: probe child died (wait status {status})")


# What a tool arm's child loads lazily, at its loopback server's start and its MCP
# client's first request (the client's transport, httpcore2, about 58 ms with trio).
_TOOL_STACK = (
    "continuity.harness.toolbox",
    "continuity.interrupts",
    "continuity.sampling.history_process",
    "continuity.servers.asgi",
    "continuity.servers.history",
    # The MCP client validates ConversationHistory's structured content against its
    # output schema with jsonschema (about 60 ms of imports a probe child otherwise).
    "jsonschema",
    "referencing.exceptions",
    "uvicorn.lifespan.on",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.auto",
)
# Optional: imported when installed (the MCP SDK's own HTTP stack, in its versions here).
_OPTIONAL = ("httpcore2",)


def _import(names: tuple[str, ...], *, optional: bool = False) -> None:
    for name in names:
        if optional and importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name)


def warm_imports(request: UnitRequest) -> None:
    """Import once, before forking, what every probe child of `request` will need, so no
    child pays for it: the probe child itself, anyio's asyncio backend (about 45 ms a
    child otherwise: `benchmarks/bench_fork_imports.py`), the real providers for a real
    unit, and for a tool arm the MCP client, the history server and the HTTP modules
    they load lazily."""
    import anyio._backends._asyncio  # noqa: F401  # anyio.run imports it lazily

    import continuity.sampling.child
    from continuity.arms import ARMS

    if request.real is not None:
        import continuity.providers.cache
        import continuity.providers.real  # noqa: F401
    if ARMS[request.arm].history_tool:
        _import(_TOOL_STACK)
        _import(_OPTIONAL, optional=True)


def warm_zygote() -> None:
    """What a zygote (`continuity.zygote`) imports before it forks unit workers and
    checkpoint replays: everything an offline unit's worker, probe children and replay
    need."""
    import anyio._backends._asyncio  # noqa: F401

    import continuity.harness.checkpoints
    import continuity.harness.replay
    import continuity.sampling.child
    import continuity.servers.fixture  # noqa: F401

    # Not the real providers: httpx brings its CLI's rich and pygments (about 150 ms a
    # zygote); a real unit's worker imports them once, before it forks (`warm_imports`).

    _import(_TOOL_STACK)
    _import(_OPTIONAL, optional=True)


def _decode_request(data: bytes) -> UnitRequest:
    """Raises: CheckpointError ``worker_request_invalid`` when `data` is no request."""
    try:
        return msgspec.json.decode(data, type=UnitRequest)
    except msgspec.MsgspecError as exc:
        raise CheckpointError(
            f"the unit request does not decode: {exc}",
            code="worker_request_invalid",
            location="stdin",
        ) from None


def serve_unit(payload: bytes) -> bytes:
    """A zygote target: run the unit of `payload` (a `UnitRequest`, JSON) in this forked
    process; return its `UnitWorkerResult` (JSON)."""
    request = _decode_request(payload)
    warm_imports(request)
    gc.freeze()  # the probe children's collections skip what this process holds
    return msgspec.json.encode(run_unit(request))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m continuity.sampling.worker",
        description="Run one unit's probes; the UnitRequest (JSON) is read on stdin.",
    )
    parser.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="the runner's pid: the worker is killed when it dies (Linux)",
    )
    args = parser.parse_args(argv)
    if args.parent_pid is not None:  # before anything else: a dead runner has no use for it
        die_with_parent(args.parent_pid)
    try:
        out = serve_unit(sys.stdin.buffer.read())
    except (OSError, CheckpointError) as exc:
        print(f"error {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(out.decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
