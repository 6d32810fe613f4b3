"""The offline contract's outside-agent pass (CAP/0 v0).

The toy reference adapter (``examples/agents/toy``, beside the package in a checkout)
is planned and run as any user's agent is (`continuity.runner.agent_units`): over the
four original traces, arms ``native``, ``restart`` and ``new_session``, one probe each,
offline (a reader that declines, no credentials), into the run
``<out>/runs/offline-contract-agent``, then aggregated. Every sample must be
``valid``: its replay clean, its boundary ``verified`` from observations and its copy
proven (every sample of a trace has the trace's first replay signature); and the
report must open with the black-box banner. Anything else is
``agent_contract_failed``, naming the samples.

The contract runs the pass in a process of its own (`start_outside_agent`,
``python -m continuity.contract_agent``) beside its checkpoints and units: the pass is
a dozen re-replays through child processes, mostly waiting. The child reads its
request (the store, the run folder, the traces' keys and digests) on stdin and writes
one JSON event a line on its stdout: a progress tick, then its sentence or the typed
error it raised, which the parent raises again with the same code and location.
Anything else the child prints goes to stderr. It dies with the thread that started it
(`continuity.parent_death`), and `AgentPass.stop` ends it early.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import msgspec
from msgspec import UNSET

from continuity.errors import ContinuityError
from continuity.interrupts import install as install_interrupts
from continuity.parent_death import die_with_parent
from continuity.plan.plan import build_plan
from continuity.plan.pricing import default_catalog_path
from continuity.processes import kill_group, signal_group
from continuity.progress import Tick, progress
from continuity.report.freshness import aggregate_stamped
from continuity.runner.manifest import utc_stamp, write_run_manifest
from continuity.store import Store
from continuity.traces.schema import Trace, decode_trace
from continuity.zygote import ChildFailure

__all__ = [
    "PASS_WORKERS",
    "STOP_GRACE_S",
    "TOY_MANIFEST",
    "AgentPass",
    "AgentPassEvent",
    "AgentPassRequest",
    "check_outside_agent",
    "main",
    "start_outside_agent",
]

TOY_MANIFEST = Path(__file__).resolve().parents[1] / "examples" / "agents" / "toy" / "agent.toml"


_STAGE = "outside agent original"
# Traces the pass replays at once: a sample mostly waits on its adapter's processes.
PASS_WORKERS = 4
STOP_GRACE_S = 5.0  # how long `AgentPass.stop` lets the pass unwind before SIGKILL

# What the report's banner must say a black box cannot show (and that it is one).
_BANNER_SAYS = (
    "External agent.",
    "memory the agent never sent to a model",
    "the contents of provider-side compaction",
)


def check_outside_agent(
    store: Store,
    traces: Sequence[tuple[str, Trace]],
    run_dir: Path,
    tick: Tick | None = None,
) -> str:
    """Run the pass (module doc) over `traces` (their keys and traces) in this process;
    the contract's sentence for it. `tick` reports each sample (else a progress line of
    its own).

    Raises:
        ContinuityError: ``agent_contract_failed``.
    """
    # Here, not at the top: the contract's own process only starts the pass's process,
    # and needs none of the agent machinery (about 0.6 s of imports).
    from continuity.agents.identity import DEFAULT_ARMS, SANDBOXED, UNSANDBOXED, identity
    from continuity.agents.manifest import load_manifest
    from continuity.agents.sandbox import sandbox_problem
    from continuity.runner.agent_units import AgentUnitPlan, build_agent_units

    if not TOY_MANIFEST.is_file():
        return "skipped: no examples/agents/toy beside the package (not a checkout)"
    started = utc_stamp()
    manifest = load_manifest(TOY_MANIFEST)
    # Sandboxed where bubblewrap works; elsewhere (a fresh machine without it) the pass
    # says so in its sentence and its report's banner says UNSANDBOXED: never silent.
    unsandboxed = sandbox_problem()
    agent = identity(manifest, sandboxed=unsandboxed is None)
    plan = build_plan(arms=",".join(DEFAULT_ARMS), probe_limit=1, agent=agent)
    unit_plan = AgentUnitPlan.of(plan, manifest)
    if tick is None:  # its own progress line: a dozen samples, each a re-replay
        with progress(_STAGE) as own:
            records = build_agent_units(
                store, unit_plan, traces, run_dir, progress=own, workers=PASS_WORKERS
            ).records
    else:
        records = build_agent_units(
            store, unit_plan, traces, run_dir, progress=tick, workers=PASS_WORKERS
        ).records
    write_run_manifest(run_dir, plan, started=started)
    results, paths, _ = aggregate_stamped(store, run_dir, default_catalog_path())
    samples = [(r, p) for r in records for p in r.probes]
    bad = [
        f"{r.trace_id}/{r.arm}/{p.probe_id} {p.status}" for r, p in samples if p.status != "valid"
    ]
    report = paths["report"].read_text(encoding="utf-8")
    isolation = UNSANDBOXED.split(":")[0] if unsandboxed else SANDBOXED.split(":")[0]
    said = all(s in report for s in (*_BANNER_SAYS, isolation))
    if bad or not samples or results.agent is UNSET or not said:
        raise ContinuityError(
            f"{len(bad)} of {len(samples)} outside-agent samples not valid: {', '.join(bad[:6])}",
            code="agent_contract_failed",
            location=str(paths["report"]),
        )
    signatures = len({p.agent.signature for _, p in samples if p.agent is not UNSET})
    return (
        f"the toy outside agent over CAP/0: {len(samples)} samples ({len(traces)} originals x "
        f"{', '.join(DEFAULT_ARMS)}), each a fresh re-replay through the model proxy and the "
        f"fixture MCP server: every boundary verified by traffic, every copy proven ({signatures} "
        f"replay signatures, one per trace); "
        + (
            "each adapter sandboxed (bubblewrap)"
            if unsandboxed is None
            else f"UNSANDBOXED, since this machine cannot sandbox ({unsandboxed})"
        )
        + f"; its report {paths['report']} opens with the black-box banner"
    )


class AgentPassRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What the pass's own process is asked on stdin: the store's root, the run folder,
    and (key, blob digest) of each trace."""

    store: str
    run_dir: str
    traces: list[tuple[str, str]]


class AgentPassEvent(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One line of the child's stdout: a progress tick, its sentence, or its error."""

    tick: tuple[int, int, str, str] | None = None
    sentence: str | None = None
    failure: ChildFailure | None = None


class AgentPass:
    """The pass running in its own process (`start_outside_agent`)."""

    def __init__(self, request: AgentPassRequest) -> None:
        self._request = request
        self._events: list[AgentPassEvent] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._started = threading.Event()
        self._exit: int | None = None
        self._thread = threading.Thread(target=self._run, name="outside-agent", daemon=True)
        # The stage's progress ends where the pass is waited for (`result`, `stop`).
        self._stage = ExitStack()
        self._tick = self._stage.enter_context(progress(_STAGE))
        self._thread.start()
        self._started.wait()

    def _run(self) -> None:
        # Started from this thread, which waits for it: the kernel's "parent" of a
        # child that dies with its parent (`continuity.parent_death`).
        try:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "continuity.contract_agent",
                    "--parent-pid",
                    str(os.getpid()),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        finally:
            self._started.set()
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        with process.stdin:
            process.stdin.write(msgspec.json.encode(self._request))
        with process.stdout:
            for line in process.stdout:
                event = msgspec.json.decode(line, type=AgentPassEvent)
                if event.tick is not None:
                    self._tick(*event.tick)
                else:
                    self._events.append(event)
        self._exit = process.wait()

    @property
    def pid(self) -> int | None:
        """The pass's process (the leader of its process group)."""
        return self._process.pid if self._process is not None else None

    def result(self) -> str:
        """Wait for the pass; its sentence.

        Raises:
            ContinuityError: what the pass raised (its code and location), or
                ``agent_contract_failed`` when its process died without a word.
        """
        self._thread.join()
        self._stage.close()  # a second close does nothing
        for event in self._events:
            if event.failure is not None:
                raise event.failure.error()
            if event.sentence is not None:
                return event.sentence
        raise ContinuityError(
            f"the outside-agent pass's process ended ({self._exit}) without a result "
            "(its stderr is above)",
            code="agent_contract_failed",
            location=self._request.run_dir,
        )

    def check(self) -> None:
        """Raise now what the pass raised, when it has already ended so; else nothing."""
        if not self._thread.is_alive():
            self.result()

    def stop(self) -> None:
        """End the pass early (the contract failed elsewhere); a finished one is left.
        SIGTERM first, so the pass stops its adapters and servers
        (`continuity.interrupts`), then SIGKILL to its group after `STOP_GRACE_S`."""
        process = self._process
        if process is not None and process.poll() is None:
            signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                kill_group(process.pid)
        self._thread.join()
        self._stage.close()


def start_outside_agent(
    store: Store, traces: Sequence[tuple[str, str]], run_dir: Path
) -> AgentPass:
    """Start the pass over `traces` (key, blob digest) in a process of its own."""
    request = AgentPassRequest(store=str(store.root), run_dir=str(run_dir), traces=list(traces))
    return AgentPass(request)


def _serve(request: AgentPassRequest, events: int) -> None:
    def emit(event: AgentPassEvent) -> None:
        os.write(events, msgspec.json.encode(event) + b"\n")

    def tick(done: int, total: int, item: str, status: str) -> None:
        emit(AgentPassEvent(tick=(done, total, item, status)))

    store = Store(request.store)
    try:
        traces = [(key, decode_trace(store.get_blob(d))) for key, d in request.traces]
        sentence = check_outside_agent(store, traces, Path(request.run_dir), tick)
    except ContinuityError as exc:
        failure = ChildFailure(type(exc).__name__, exc.message, exc.code, exc.location)
        emit(AgentPassEvent(failure=failure))
        return
    emit(AgentPassEvent(sentence=sentence))


def main(argv: list[str] | None = None) -> int:
    """``python -m continuity.contract_agent --parent-pid PID`` (module doc)."""
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] == ["--parent-pid"] and len(args) == 2:
        die_with_parent(int(args[1]))
    # SIGTERM (or the terminal's SIGINT) stops every descendant, then unwinds; the
    # contract's own process prints the one interrupt line, not this one.
    install_interrupts(announce=False)
    request = msgspec.json.decode(sys.stdin.buffer.read(), type=AgentPassRequest)
    events = os.dup(1)
    os.dup2(2, 1)  # every other print of the pass goes to stderr
    _serve(request, events)
    return 0


if __name__ == "__main__":
    sys.exit(main())
