"""The probe child: cross an arm's boundary in a fresh process and ask one probe.

``python -m continuity.probe.child --workspace PATH`` reads its `ProbeRequest` (JSON)
on stdin, never from a file: the request holds evaluator-only values (``needles``) that
must not be left on disk by a killed run. It runs over a checkpoint restored at its
original path. It applies the arm's boundary operations in
order (restart marker, model-change reseed, pre-turn compaction under the arm's policy),
offers the arm's tools (ConversationHistory only, for the store and pack arms, served
by a real MCP server over the retained store), injects the continuity pack for the pack
arm, and asks the probe on the reader in a new, otherwise tool-free turn. The reader is
scripted: it answers ``UNKNOWN`` and, when ConversationHistory is offered, first searches
and gets one record, so the retrieval path runs. Its accuracy means nothing.

In real mode (`ProbeRequest.real`) the invocation's ledger admits the live turn first,
and the reader and the compaction summarizer are the plan's endpoint behind the call
cache; the evidence then carries one receipt per call (key, the model the server
returned, usage), the same bytes whether the call was made or replayed from the cache
(the replayed keys go to the caller beside the evidence: `run_probe`'s ``replayed``).

It prints a content-free `SampleEvidence` as JSON. With ``dump_requests`` it also writes
every reader request's wire payload to that file, for inspection and tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
import msgspec

from continuity.arms import ARMS, Arm, arm_config, models_patch
from continuity.errors import HarnessError, SessionCorrupt, ToolError, typed_error
from continuity.harness.compaction import CompactionEvent, compact_conversation, should_compact
from continuity.harness.config import HarnessConfig
from continuity.harness.loop import SYSTEM_PROMPT, AgentLoop, TurnReport
from continuity.harness.reseed import ReseedEvent, reseed
from continuity.harness.session import recorded_operations
from continuity.harness.workspace import Workspace
from continuity.lookup.probe import PageTracker, bounded_cleanup, reference_path
from continuity.lookup.reader import LookupReader
from continuity.lookup.receipts import LookupBinding, LookupWitness, PathReceipt
from continuity.memory.pack import PackReceipt, build_pack, is_pack
from continuity.memory.retained import HistoryError, RetainedStore
from continuity.messages import (
    Message,
    ModelRequest,
    ToolCallRequest,
    ToolResultMessage,
    Usage,
    UserMessage,
    wire_payload,
)
from continuity.parent_death import die_with_parent
from continuity.probe.evidence import needle_states
from continuity.probe.receipts import HistoryCall, ProbeRequest, SampleEvidence
from continuity.probes.protocol import probe_turn_text
from continuity.providers.endpoint import CallReceipt, RealBinding
from continuity.providers.protocol import Provider
from continuity.providers.scripted import (
    ScriptedProvider,
    ScriptedStep,
    ScriptedSummarizer,
    Step,
)
from continuity.store import utc_now

if TYPE_CHECKING:
    from continuity.harness.toolbox import McpToolbox
    from continuity.lookup.meter import Meter
    from continuity.providers.cache import CachedProvider

__all__ = [
    "HISTORY_TOOL",
    "UNKNOWN_ANSWER",
    "main",
    "run_probe",
]

UNKNOWN_ANSWER = "UNKNOWN"


def _model(binding: str) -> tuple[str, str]:
    provider, _, model = binding.partition(":")
    return provider, model


def _reader_steps(
    probe_text: str, history_tool: bool, seen: list[ModelRequest], dump: Path | None
) -> list[Step]:
    """The scripted reader: search, get the first hit, then answer UNKNOWN."""

    def record(request: ModelRequest) -> None:
        seen.append(request)
        if dump is not None:
            with open(dump, "ab") as handle:
                handle.write(wire_payload(request) + b"\n")

    def answer(request: ModelRequest) -> ScriptedStep:
        record(request)
        return ScriptedStep(text=UNKNOWN_ANSWER)

    if not history_tool:
        return [answer]
    words = " ".join(probe_text.replace(":", " ").split()[-8:])

    def search(request: ModelRequest) -> ScriptedStep:
        record(request)
        call = ToolCallRequest(
            "probe-1", HISTORY_TOOL, {"action": "search", "query": words, "limit": 5}
        )
        return ScriptedStep(text="", tool_calls=(call,))

    def get_first(request: ModelRequest) -> ScriptedStep:
        last = request.messages[-1]
        hits = []
        if isinstance(last, ToolResultMessage) and not last.is_error:
            with contextlib.suppress(ValueError):
                hits = json.loads(last.text).get("hits", [])
        if not hits:
            return answer(request)
        record(request)
        call = ToolCallRequest(
            "probe-2", HISTORY_TOOL, {"action": "get", "id": hits[0]["packed_id"]}
        )
        return ScriptedStep(text="", tool_calls=(call,))

    def after_get(request: ModelRequest) -> ScriptedStep:
        return answer(request)

    return [search, get_first, after_get]


HISTORY_TOOL = "ConversationHistory"  # continuity.servers.history.HISTORY_TOOL, unimported


def _witness(
    lookup: LookupBinding,
    meter: Meter | None,
    reader: LookupReader | None,
    tracker: PageTracker,
    paths: list[PathReceipt],
    seen: list[ModelRequest],
    soul_sha256: str,
    *,
    deadline: bool = False,
) -> LookupWitness:
    """The probe's content-free lookup witness, also written to its witness file so a
    failing or killed child leaves it behind."""
    from continuity.lookup.probe import write_witness
    from continuity.lookup.state import MeterState

    witness = LookupWitness(
        meter=meter.state()
        if meter is not None
        else MeterState(lookup.call_budget, lookup.byte_budget, 0, 0, 0, 0, [], None),
        reader_stopped=reader.stopped if reader is not None else None,
        records_returned=sorted(tracker.whole()),
        sources_returned=tracker.sources_returned(lookup.sources),
        first_request_bytes=len(wire_payload(seen[0])) if seen else 0,
        deadline_exceeded=deadline,
        soul_sha256=soul_sha256,
        paths=paths,
        sources=len(lookup.sources),
    )
    write_witness(lookup.witness_path, witness)
    return witness


def _recording_toolbox(
    url: str, calls: list[HistoryCall], after_call: Callable[[str], None] | None = None
) -> McpToolbox:
    """An MCP client that records every ConversationHistory call: action, outcome, bytes.
    The MCP SDK is imported here, so tool-free probe children never pay for it."""
    from continuity.harness.toolbox import McpToolbox

    class RecordingToolbox(McpToolbox):
        async def call(self, call: ToolCallRequest) -> str:
            action = str(call.arguments.get("action", "?"))
            try:
                text = await super().call(call)
            except ToolError as error:
                status: Literal["unavailable", "invalid"] = (
                    "unavailable" if error.code == "tool_server_unavailable" else "invalid"
                )
                calls.append(HistoryCall(action, status, 0))
                raise
            calls.append(HistoryCall(action, "succeeded", len(text.encode("utf-8"))))
            if after_call is not None:
                after_call(text)
            return text

    return RecordingToolbox(url)


class _RealCalls:
    """Real mode: one HTTP client shared by the reader and the summarizer, each behind
    the call cache; the invocation's ledger admits the live turn first."""

    def __init__(self, binding: RealBinding) -> None:
        from continuity.providers.cache import Ledger
        from continuity.providers.real import make_provider
        from continuity.store import Store

        self.binding = binding
        self.ledger = Ledger(binding.ledger) if binding.ledger else None
        self.store = Store(binding.store_root)
        self.inner = make_provider(binding.endpoint)
        self.wrapped: list[CachedProvider] = []

    @classmethod
    def open(cls, binding: RealBinding) -> _RealCalls:
        calls = cls(binding)
        if calls.ledger is not None:
            try:
                calls.ledger.admit()  # raises admission_stopped: nothing else happens
            except BaseException:
                calls.ledger.close()
                raise
        return calls

    def provider(
        self, role: Literal["answer", "summary"], probe: str | None = None
    ) -> CachedProvider:
        from continuity.providers.cache import CachedProvider

        wrapped = CachedProvider(
            self.inner,
            self.binding.endpoint,
            self.store,
            repeat=self.binding.repeat,
            role=role,
            ledger=self.ledger,
            explain_log=self.binding.explain_log,
            probe=probe,  # a probe's own summaries: once per probe, never shared
        )
        self.wrapped.append(wrapped)
        return wrapped

    def receipts(self) -> list[CallReceipt]:
        return [r for w in self.wrapped for r in w.receipts]

    def replayed(self) -> list[str]:
        """The keys of the calls replayed from the call cache, in call order per role."""
        return [k for w in self.wrapped for k in w.replayed]

    async def aclose(self) -> None:
        await self.inner.aclose()
        if self.ledger is not None:
            self.ledger.close()


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
    arm: Arm = ARMS[request.arm]
    config: HarnessConfig = arm_config(
        arm, models_patch(request.lookup.models if request.lookup is not None else None)
    )
    policy = config.runtime.compaction
    lookup = request.lookup
    reader_provider, reader_model = _model(config.models.reader)
    now = clock or time.monotonic
    started = now()
    system = SYSTEM_PROMPT
    soul_sha256 = ""
    if lookup is not None:
        from continuity.lookup.soul import install_soul

        soul = install_soul(workspace.root, lookup.soul_sha256, lookup.soul_core_sha256)
        system, soul_sha256 = SYSTEM_PROMPT + "\n\n" + soul.core, soul.sha256
    real = _RealCalls.open(request.real) if request.real is not None else None
    session, history, tool_history = workspace.open(clock=utc_now)
    try:
        receipt = msgspec.json.decode(workspace.receipt_path.read_bytes())
    except (OSError, msgspec.MsgspecError) as exc:
        session.close()
        history.close()
        raise SessionCorrupt(
            f"no readable replay receipt: {exc}", location=str(workspace.receipt_path)
        ) from None
    # Lookup's native arm runs on the reader's native session and never compacts.
    never_compact = lookup is not None and arm.boundary == "none"
    summarizer: Provider = (
        real.provider("summary", probe=f"{request.arm}:{request.probe_index}")
        if real is not None
        else ScriptedSummarizer(name=reader_provider, model=reader_model)
    )
    operations: list[str] = []
    history_model = ":".join(session.current_model() or ("?", "?"))
    reseed_event: ReseedEvent | None = None
    compaction: CompactionEvent | None = None
    mid_run: list[CompactionEvent] = []
    store: RetainedStore | None = None
    store_error: str | None = None
    compaction_usage = Usage()
    try:
        if arm.retained:
            try:
                store = RetainedStore(workspace.retained_path, readonly=True)
            except HistoryError as exc:
                store_error = exc.code
        allowed = config.tools.allowed_tools
        # Offered only when the arm offers it, the config allows it and a store exists.
        history_tool = (
            arm.history_tool and (allowed is None or HISTORY_TOOL in allowed) and store is not None
        )
        recorded_from = session.path.stat().st_size  # the checkpoint's own entries end here
        if arm.boundary == "restart_switch_compact":
            session.append_boundary(
                "restart", {"parent_pid": request.parent_pid, "child_pid": os.getpid()}
            )
            operations.append("restart")
        switches = arm.boundary in ("model_change", "restart_switch_compact")
        if switches and history_model != config.models.reader:
            reseed_event = reseed(
                session,
                history,
                tool_history,
                provider=reader_provider,
                model=reader_model,
                history_tool=history_tool,
            )
            operations.append("model_change")
        reason = None if never_compact else should_compact(session, policy)
        if reason is not None:
            compaction = await compact_conversation(
                session, summarizer, policy=policy, reason=reason, model=reader_model
            )
            if compaction is not None:
                operations.append("compaction")
                compaction_usage = compaction_usage + compaction.usage
        # The evidence is what the durable session recorded, read back from disk.
        session.sync()
        recorded = recorded_operations(session.path, recorded_from)
        if recorded != operations:
            raise HarnessError(
                f"the session file records {recorded}, the probe performed {operations}",
                code="boundary_record_mismatch",
                location=str(session.path),
            )
        operations = recorded
        pack_receipt: PackReceipt | None = None
        injected: tuple[Message, ...] = ()
        if arm.pack and config.runtime.session.continuity.pack_enabled:
            from continuity.harness.compaction import context_tokens

            pack = build_pack(
                store,
                history,
                context=session.context(),
                window_tokens=policy.window,
                context_tokens=context_tokens(session.context()),
            )
            pack_receipt = pack.receipt
            if pack.receipt.status != "invalid":
                injected = (pack.message(),)

        tracker = PageTracker()

        def witness_now(
            paths: list[PathReceipt] | None = None, *, deadline: bool = False
        ) -> LookupWitness:
            """The lookup witness as of now, also written to its file (lookup mode)."""
            assert lookup is not None
            return _witness(
                lookup,
                meter,
                lookup_reader,
                tracker,
                paths or [],
                seen,
                soul_sha256,
                deadline=deadline,
            )

        async def mid_run_compaction() -> None:
            nonlocal compaction_usage
            if lookup is not None and now() - started > lookup.probe_deadline:
                witness_now(deadline=True)
                raise HarnessError(
                    f"the lookup probe passed its {lookup.probe_deadline:.0f} s deadline",
                    code="lookup_deadline_exceeded",
                    location=request.arm,
                )
            if never_compact:
                return
            if should_compact(session, policy) is not None:
                event = await compact_conversation(
                    session, summarizer, policy=policy, reason="mid_run", model=reader_model
                )
                if event is not None:
                    mid_run.append(event)
                    compaction_usage = compaction_usage + event.usage

        seen: list[ModelRequest] = []
        dump = Path(request.dump_requests) if request.dump_requests else None
        provider: Provider
        lookup_reader: LookupReader | None = None
        meter: Meter | None = None
        if lookup is not None and real is None:
            lookup_reader = LookupReader(request.probe_text, call_budget=lookup.call_budget)

            def lookup_step(step_request: ModelRequest) -> ScriptedStep:
                assert lookup_reader is not None
                seen.append(step_request)
                if dump is not None:
                    with open(dump, "ab") as handle:
                        handle.write(wire_payload(step_request) + b"\n")
                return lookup_reader(step_request)

            provider = ScriptedProvider(
                [lookup_step] * (lookup.call_budget + 3), name=reader_provider, model=reader_model
            )
        elif real is not None:
            reader = real.provider("answer")
            seen = reader.requests
            provider = reader
        else:
            provider = ScriptedProvider(
                _reader_steps(request.probe_text, history_tool, seen, dump),
                name=reader_provider,
                model=reader_model,
            )
        calls: list[HistoryCall] = []

        async with bounded_cleanup(
            lookup.cleanup_seconds if lookup is not None else None,
            now,
            witness_now,
            location=request.arm,
        ) as stack:
            toolbox: McpToolbox | None = None
            if history_tool and store is not None:  # (store is not None: for the type checker)
                from continuity.servers.history import serve_history

                url = await stack.enter_async_context(serve_history(store))
                if lookup is not None:
                    from continuity.lookup.meter import metered_history
                    from continuity.lookup.policy import BYTE_CAP, CALL_CAP

                    reference = lookup.mode == "reference"
                    url, meter = await stack.enter_async_context(
                        metered_history(
                            url,
                            calls=CALL_CAP if reference else lookup.call_budget,
                            budget_bytes=BYTE_CAP if reference else lookup.byte_budget,
                        )
                    )

                def after_call(text: str) -> None:
                    if lookup is not None:
                        tracker.absorb(text)
                        witness_now()

                toolbox = await stack.enter_async_context(
                    _recording_toolbox(url, calls, after_call)
                )
            loop = AgentLoop(
                session=session,
                history=history,
                tool_history=tool_history,
                toolbox=toolbox,
                provider=provider,
                model=reader_model,
                injected=injected,
                before_request=mid_run_compaction,
                tool_errors="report",
                system=system,
                max_rounds=lookup.call_budget + 2 if lookup is not None else 64,
            )
            paths: list[PathReceipt] = []
            if lookup is not None and lookup.mode == "reference":
                # The evaluator's reference path, not the reader: the first request the
                # reader would get, then one path per source through the metered proxy.
                loop.add_user(UserMessage(text=probe_turn_text(request.probe_text), source="probe"))
                seen.append(loop.request())
                if toolbox is not None and meter is not None:
                    context_text = "\n".join(getattr(m, "text", "") for m in seen[0].messages)
                    assert store is not None
                    paths.extend(
                        [
                            await reference_path(
                                toolbox, meter, s, context_text, store.find_by_digest(s.digest)
                            )
                            for s in lookup.sources
                        ]
                    )
                report = TurnReport(0, 0, 0, Usage())
            elif lookup is not None:
                try:
                    with anyio.fail_after(lookup.turn_safety_seconds):
                        report = await loop.run_turn(
                            probe_turn_text(request.probe_text), source="probe"
                        )
                except TimeoutError:
                    witness_now()
                    raise HarnessError(
                        f"the probe turn passed its {lookup.turn_safety_seconds:.0f} s "
                        "safety timeout",
                        code="lookup_turn_timeout",
                        location=request.arm,
                    ) from None
            else:
                report = await loop.run_turn(probe_turn_text(request.probe_text), source="probe")
        if real is not None:
            answers = [c for c in real.receipts() if c.role == "answer"]
            first_input = answers[0].usage.total_input if answers else 0
            if dump is not None:
                with open(dump, "ab") as handle:
                    handle.writelines(wire_payload(r) + b"\n" for r in seen)
        elif lookup is not None and lookup.mode == "reference":
            first_input = -(-len(wire_payload(seen[0])) // 4) if seen else 0
        else:
            assert isinstance(provider, ScriptedProvider)
            first_input = provider.requests[0].usage.total_input if provider.requests else 0
        witness = witness_now(paths) if lookup is not None else None
        states = needle_states(
            request.needles, seen[0] if seen else None, store if arm.history_tool else None
        )
        answer = session.context()[-1]
        return SampleEvidence(
            arm=arm.id,
            probe_index=request.probe_index,
            trace_id=str(receipt.get("trace_id", "")),
            # The pids themselves differ between two runs of one sample: the parent
            # keeps them in the sample's ProcessReceipt, outside the sealed evidence.
            fresh_process=os.getpid() != request.parent_pid,
            history_model=history_model,
            reader_model=config.models.reader,
            operations=operations,
            reseed=reseed_event,
            compaction=compaction,
            mid_trace_compaction=msgspec.convert(receipt["mid_trace_compaction"], CompactionEvent)
            if receipt.get("mid_trace_compaction")
            else None,
            mid_run_compactions=mid_run,
            tools_offered=[d.name for d in toolbox.definitions] if toolbox else [],
            history_calls=calls,
            store=store.stats() if store is not None else None,
            store_error=store_error,
            tool_history_status=tool_history.status,
            tool_history_warnings=list(tool_history.warnings),
            pack=pack_receipt,
            packs_per_request=[sum(is_pack(m) for m in r.messages) for r in seen],
            requests=report.requests,
            probe_input_tokens=first_input,
            usage=report.usage,
            compaction_usage=compaction_usage,
            answer=getattr(answer, "text", ""),
            needle_states=states,
            calls=real.receipts() if real is not None else [],
            lookup=witness,
        )
    finally:
        session.close()
        history.close()
        if store is not None:
            store.close()
        if real is not None:
            if replayed is not None:
                replayed.extend(real.replayed())
            await real.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m continuity.probe.child")
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
        request = msgspec.json.decode(sys.stdin.buffer.read(), type=ProbeRequest)
    except (OSError, msgspec.MsgspecError) as exc:
        print(f"error probe_request_invalid: {exc} (at stdin)")
        return 3
    try:
        evidence = anyio.run(run_probe, Workspace(args.workspace.absolute()), request)
    except BaseException as exc:
        typed = typed_error(exc)
        if typed is None:
            raise
        print(f"error {typed}")
        return 3
    sys.stdout.write(msgspec.json.encode(evidence).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
