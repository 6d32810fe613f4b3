"""The probe child: cross an arm's boundary in a fresh process and ask one probe.

``python -m continuity.sampling.child --workspace PATH`` reads its `ProbeRequest` (JSON)
on stdin, never from a file: the request holds evaluator-only values (``needles``) that
must not be left on disk by a killed run. It runs over a checkpoint restored at its
original path. It applies the arm's boundary operations in
order (restart marker, model-change reseed, pre-turn compaction under the arm's policy),
offers the arm's tools (ConversationHistory only, for the store and pack arms, served
by a real MCP server over the retained store), injects the continuity pack for the pack
arm, and asks the probe on the reader in a new, otherwise tool-free turn. The reader is
scripted: it declines (``ANSWER: UNKNOWN`` on a value probe, else ``UNKNOWN``) and, when
ConversationHistory is offered, first searches and gets one record, so the retrieval
path runs. Its accuracy means nothing.

In real mode (`ProbeRequest.real`) the invocation's ledger admits the live turn first,
and the reader and the compaction summarizer are the plan's endpoint behind the call
cache; the evidence then carries one receipt per call (key, the model the server
returned, usage), the same bytes whether the call was made or replayed from the cache
(the replayed keys go to the caller beside the evidence: `run_probe`'s ``replayed``).

It prints a content-free `SampleEvidence` as JSON; with a store (``store_root``) it first
keeps there what the reader was sent (`continuity.sampling.context`) and names it in the
evidence (``context``). With ``dump_requests`` it also writes
every reader request's wire payload to that file, for inspection and tests. A request
that cannot be read, does not decode or names no known arm prints ``error
probe_request_invalid: ...`` and exits 3, as does a probe that fails with a typed error
(its own code); anything else (an interrupt, a bug) propagates unchanged.

`probe_target` is the same child as a zygote's target (`continuity.zygote`): a fresh
process forked from a pre-imported one, for callers that hold a zygote pool (the arm
samples). Its payload is a `ProbeCall` (the workspace and the request, through the
zygote's pipe, never a file); it replies with a `ProbeReply` (`continuity.sampling.receipts`):
the evidence, or the line ``error <code>: ...`` the command would print, and its own pid.

`run_probe` is a chain of named steps, each in its own module: `probe_setup` and
`restore` (`continuity.sampling.boundary`) → `cross_boundary` → `choose_reader`
(`continuity.sampling.reader`) → `_ask` (the turn, with `continuity.sampling.lookup` in lookup
mode) → `seal_evidence` (`continuity.sampling.evidence`). The mode (offline recall, offline
lookup, real) is chosen once, by the reader and by whether a `LookupProbe` exists.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import anyio
import msgspec

from continuity.arms import ARMS
from continuity.errors import ContinuityError, HarnessError, typed_error
from continuity.harness.loop import AgentLoop
from continuity.harness.workspace import Workspace
from continuity.lookup.probe import bounded_cleanup
from continuity.lookup.receipts import PathReceipt
from continuity.parent_death import die_with_parent
from continuity.probes.protocol import probe_turn_text
from continuity.providers.protocol import Provider
from continuity.providers.scripted import ScriptedSummarizer
from continuity.sampling.boundary import (
    Crossing,
    MidRunCompaction,
    ProbeSetup,
    Restored,
    cross_boundary,
    probe_setup,
    restore,
)
from continuity.sampling.context import keep_context
from continuity.sampling.evidence import Asked, seal_evidence
from continuity.sampling.lookup import LookupProbe
from continuity.sampling.reader import ProbeReader, RealCalls, choose_reader, recording_toolbox
from continuity.sampling.receipts import (
    HistoryCall,
    ProbeCall,
    ProbeReply,
    ProbeRequest,
    SampleEvidence,
)

if TYPE_CHECKING:
    from contextlib import AsyncExitStack

    from continuity.harness.toolbox import McpToolbox

__all__ = ["main", "probe_target", "read_request", "run_probe"]


async def run_probe(
    workspace: Workspace,
    request: ProbeRequest,
    *,
    clock: Callable[[], float] | None = None,
    replayed: list[str] | None = None,
) -> SampleEvidence:
    """Cross the arm's boundary over `workspace` and ask the probe. See the module doc.
    `clock` (seconds, monotonic) times the lookup deadline; tests inject a fake one.
    Real mode: `replayed`, when given, collects the keys of the calls replayed from the
    call cache (also when the probe fails): the caller keeps them beside the sealed
    evidence, which is the same bytes whether a call was replayed or made."""
    setup = probe_setup(workspace, request, clock)
    real = RealCalls.open(request.real) if request.real is not None else None
    try:
        return await _run_restored(setup, workspace, real)
    finally:
        if real is not None:
            if replayed is not None:
                replayed.extend(real.replayed())
            await real.aclose()


async def _run_restored(
    setup: ProbeSetup, workspace: Workspace, real: RealCalls | None
) -> SampleEvidence:
    """Restore the checkpoint, cross the boundary, ask, seal; close what was opened."""
    restored = restore(workspace)
    try:
        summarizer: Provider = (
            real.provider("summary", probe=f"{setup.request.arm}:{setup.request.probe_index}")
            if real is not None
            else ScriptedSummarizer(name=setup.reader_provider, model=setup.reader_model)
        )
        crossing = await cross_boundary(setup, restored, workspace, summarizer)
        reader = choose_reader(
            setup.request,
            real,
            history_tool=crossing.history_tool,
            name=setup.reader_provider,
            model=setup.reader_model,
        )
        binding = setup.request.lookup
        lookup = LookupProbe(setup, binding, reader) if binding is not None else None
        mid_run = MidRunCompaction(setup, restored.session, summarizer)
        asked = await _ask(setup, restored, crossing, reader, lookup, mid_run)
        reader.finish()
        witness = lookup.sealed_witness(asked.paths) if lookup is not None else None
        evidence = seal_evidence(
            setup, restored, crossing, reader, asked, mid_run, witness, workspace
        )
        return keep_context(setup.request.store_root, reader.seen, evidence)
    finally:
        restored.close()


async def _ask(
    setup: ProbeSetup,
    restored: Restored,
    crossing: Crossing,
    reader: ProbeReader,
    lookup: LookupProbe | None,
    mid_run: MidRunCompaction,
) -> Asked:
    """Offer the arm's tools and ask the probe in a new turn; every server and client is
    closed before this returns (within the lookup cleanup allowance)."""

    async def before_request() -> None:
        if lookup is not None:
            lookup.check_deadline()
        await mid_run()

    calls: list[HistoryCall] = []
    async with bounded_cleanup(
        lookup.binding.cleanup_seconds if lookup is not None else None,
        setup.clock,
        lookup.witness if lookup is not None else _no_witness,
        location=setup.request.arm,
    ) as stack:
        toolbox = await _offer_history(stack, restored, crossing, lookup, calls)
        loop = AgentLoop(
            session=restored.session,
            history=restored.history,
            tool_history=restored.tool_history,
            toolbox=toolbox,
            provider=reader.provider,
            model=setup.reader_model,
            injected=crossing.injected,
            before_request=before_request,
            tool_errors="report",
            system=setup.system,
            max_rounds=lookup.binding.call_budget + 2 if lookup is not None else 64,
        )
        if lookup is None:
            turn = probe_turn_text(setup.request.probe_text, setup.request.category)
            report = await loop.run_turn(turn, source="probe")
            paths: list[PathReceipt] = []
        else:
            report, paths = await lookup.ask(loop, toolbox, restored.store)
    return Asked(
        report=report,
        tools_offered=[d.name for d in toolbox.definitions] if toolbox else [],
        history_calls=calls,
        paths=paths,
        probe_input_tokens=lookup.reference_input_tokens()
        if lookup is not None and lookup.reference
        else None,
    )


def _no_witness() -> None:
    """Recall-only probes keep no witness (their cleanup is unbounded anyway)."""


async def _offer_history(
    stack: AsyncExitStack,
    restored: Restored,
    crossing: Crossing,
    lookup: LookupProbe | None,
    calls: list[HistoryCall],
) -> McpToolbox | None:
    """Serve ConversationHistory over the retained store when the arm offers it (behind
    the lookup meter in lookup mode) and connect the recording client; None otherwise."""
    store = restored.store
    if not crossing.history_tool or store is None:  # (store: for the type checker)
        return None
    from continuity.sampling.history_process import served_history

    url = await stack.enter_async_context(served_history(store))
    if lookup is not None:
        url = await lookup.metered(stack, url)
    after_call = lookup.absorb if lookup is not None else None
    return await stack.enter_async_context(recording_toolbox(url, calls, after_call))


def read_request(stream: BinaryIO) -> ProbeRequest:
    """The child's `ProbeRequest`, read to the end of `stream` (its stdin).

    Raises:
        HarnessError: ``probe_request_invalid`` when it cannot be read, does not decode,
            or names no known arm.
    """
    try:
        request = msgspec.json.decode(stream.read(), type=ProbeRequest)
    except (OSError, msgspec.MsgspecError) as exc:
        raise HarnessError(str(exc), code="probe_request_invalid", location="stdin") from None
    return _known_arm(request, "stdin")


def _known_arm(request: ProbeRequest, location: str) -> ProbeRequest:
    if request.arm not in ARMS:
        raise HarnessError(
            f"unknown arm {request.arm!r}", code="probe_request_invalid", location=location
        )
    return request


def probe_target(payload: bytes) -> bytes:
    """The probe child as a zygote target (module doc): a `ProbeCall` in, a `ProbeReply`
    out. A typed error, a request that does not decode included, is the reply's
    ``error`` line, as `main` prints it; anything else propagates (the zygote reports
    it as a child failure)."""
    try:
        try:
            call = msgspec.json.decode(payload, type=ProbeCall)
        except msgspec.MsgspecError as exc:
            raise HarnessError(str(exc), code="probe_request_invalid", location="pipe") from None
        request = _known_arm(call.request, "pipe")
        evidence = anyio.run(run_probe, Workspace(Path(call.workspace).absolute()), request)
    except (ContinuityError, BaseExceptionGroup) as exc:
        return msgspec.json.encode(ProbeReply(os.getpid(), error=_error_line(exc)))
    return msgspec.json.encode(ProbeReply(os.getpid(), evidence=evidence))


def _error_line(exc: ContinuityError | BaseExceptionGroup[BaseException]) -> str:
    """The one line a probe that failed with a typed error ends with (``error <code>:
    ...``); `exc` itself, raised again, when it holds no typed error (anyio's task
    groups wrap a task's error)."""
    typed = typed_error(exc)
    if typed is None:
        raise exc
    return f"error {typed}"


def main(argv: list[str] | None = None) -> int:
    """The child's entry point: the request on stdin, the evidence on stdout.

    Exit status 0 with the evidence; 3 with one ``error <code>: ...`` line when the
    request is invalid (``probe_request_invalid``) or the probe fails with a typed
    error. Anything else (an interrupt, a bug) propagates unchanged: the typed catch
    comes first and is narrow, so `continuity.interrupts` still sees a
    `KeyboardInterrupt` as one."""
    parser = argparse.ArgumentParser(prog="python -m continuity.sampling.child")
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="the requesting process's pid: the child is killed when it dies (Linux)",
    )
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
    try:
        request = read_request(sys.stdin.buffer)
        evidence = anyio.run(run_probe, Workspace(args.workspace.absolute()), request)
    except (ContinuityError, BaseExceptionGroup) as exc:  # anyio groups wrap task errors
        print(_error_line(exc))
        return 3
    sys.stdout.write(msgspec.json.encode(evidence).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
