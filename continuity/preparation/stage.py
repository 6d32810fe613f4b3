"""One preparation stage, in its own fresh process over the checkpoint's durable roots.

The stage (`run_stage`) reopens the workspace at its absolute path, crosses a
production model-change boundary to its answering model (a reseed: the session records
a ``session_boundary`` and a ``model_change``), checks the session file records exactly
that, and runs one upkeep pass (`continuity.memory.upkeep.run_upkeep`) with upkeep
enabled and the extractor bound: the scripted extractor offline, the plan's endpoint
behind the call cache in real mode (its calls gated by the invocation's admission, its
input observed conservatively). It returns a content-free `StageReceipt`.

`serve_stage` is the zygote target (`continuity.zygote`): every call is a new child
forked from the runner thread's zygote, so the three stages of a preparation run in
three distinct processes, none of them the parent.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import msgspec

from continuity.arms import ARMS, arm_config
from continuity.harness.reseed import reseed
from continuity.harness.session import recorded_operations
from continuity.harness.workspace import Workspace
from continuity.memory.upkeep import UpkeepContext, run_upkeep
from continuity.memory.upkeep_receipts import Capture, UpkeepReceipt
from continuity.memory.upkeep_selection import BOOTSTRAP_CAPS
from continuity.messages import Usage
from continuity.preparation.capture import write_capture
from continuity.preparation.extractor import ScriptedExtractor
from continuity.preparation.receipts import StageReceipt, StageReply, StageRequest
from continuity.providers.endpoint import CallReceipt
from continuity.providers.protocol import Provider
from continuity.store import utc_now

if TYPE_CHECKING:
    from continuity.providers.cache import CachedProvider, Ledger
    from continuity.providers.http import HttpProvider

__all__ = ["empty_receipt", "run_stage", "serve_stage"]

# Upkeep on, for the preparation only (the arm's probe config pins it off).
_UPKEEP_ON = {"runtime": {"session": {"continuity": {"upkeep_enabled": True}}}}


@dataclass
class _Extractor:
    """The stage's extractor and what real mode adds around it."""

    provider: Provider
    admission: Callable[[], None] | None = None
    observe: Callable[[Usage], None] | None = None
    cached: CachedProvider | None = None
    inner: HttpProvider | None = None
    ledger: Ledger | None = None

    def calls(self) -> list[CallReceipt]:
        return self.cached.receipts if self.cached is not None else []

    def replayed(self) -> list[str]:
        return list(self.cached.replayed) if self.cached is not None else []

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()
        if self.ledger is not None:
            self.ledger.close()


def _extractor(request: StageRequest) -> _Extractor:
    name, _, model = request.extractor.partition(":")
    real = request.real
    if real is None:
        return _Extractor(
            ScriptedExtractor(
                request.stage,
                fault=request.fault,
                name=name,
                model=model,
                reservation=BOOTSTRAP_CAPS.input_tokens,
                script=request.script,
                dump=request.dump_requests,
            )
        )
    from continuity.providers.cache import CachedProvider
    from continuity.providers.real import make_provider
    from continuity.providers.shared_ledger import open_ledger
    from continuity.store import Store

    ledger = open_ledger(real.ledger) if real.ledger else None
    inner = make_provider(real.endpoint)
    cached = CachedProvider(
        inner,
        real.endpoint,
        Store(real.store_root),
        repeat=real.repeat,
        role="upkeep",
        ledger=ledger,
        explain_log=real.explain_log,
        probe=f"upkeep:{request.tag}",  # each stage's extraction is its own call
        # Outside a live turn: upkeep asks the invocation's admission before it marks the
        # row dispatched (`admission`), never after (a refusal then would be a phantom
        # call); a stop rule that fires in between still lets this one call through, as
        # an admitted turn may finish.
        gate=False,
    )
    return _Extractor(
        cached,
        admission=ledger.check_open if ledger is not None else None,
        observe=ledger.observe if ledger is not None else None,
        cached=cached,
        inner=inner,
        ledger=ledger,
    )


def _capture(request: StageRequest) -> Callable[[Capture], None] | None:
    path = request.capture
    if path is None:
        return None
    return lambda capture: write_capture(Path(path), capture)


async def run_stage(request: StageRequest, replayed: list[str] | None = None) -> StageReceipt:
    """Cross the stage's model-change boundary and run its upkeep; see the module doc.
    `replayed` (real mode) collects the keys of calls replayed from the call cache."""
    workspace = Workspace(Path(request.workspace))
    arm = ARMS[request.arm]
    config = arm_config(arm, [_UPKEEP_ON])
    continuity = config.runtime.session.continuity
    session, history, tools = workspace.open(clock=utc_now)
    extractor = _extractor(request)
    try:
        from_model = ":".join(session.current_model() or ("?", "?"))
        recorded_from = session.path.stat().st_size
        provider, _, model = request.answering_model.partition(":")
        event = reseed(session, history, tools, provider=provider, model=model)
        session.sync()
        operations = recorded_operations(session.path, recorded_from)
        upkeep = await run_upkeep(
            UpkeepContext(
                ledger_path=workspace.ledger_path,
                retained_path=workspace.retained_path,
                session_id=session.header.session_id,
                stage=request.stage,
                tag=request.tag,
                extractor=extractor.provider,
                extractor_model=request.extractor,
                enforcement=request.enforcement,
                enabled=continuity.ledger_enabled and continuity.upkeep_enabled,
                require_request_cap=request.require_request_cap,
                context_window=request.context_window,
                admission=extractor.admission,
                observe=extractor.observe,
                capture=_capture(request),
                calls=extractor.calls,
            )
        )
    finally:
        if replayed is not None:
            replayed.extend(extractor.replayed())
        await extractor.aclose()
        session.close()
        history.close()
    return StageReceipt(
        stage=request.stage,
        tag=request.tag,
        answering_model=request.answering_model,
        from_model=from_model,
        to_model=event.to_model,
        operations=operations,
        fresh_process=os.getpid() != request.parent_pid,
        upkeep=upkeep,
    )


def serve_stage(payload: bytes) -> bytes:
    """A zygote target: the stage of `payload` (a `StageRequest`) in this fresh child;
    returns its `StageReply` (JSON)."""
    request = msgspec.json.decode(payload, type=StageRequest)
    replayed: list[str] = []
    receipt = anyio.run(run_stage, request, replayed)
    return msgspec.json.encode(StageReply(receipt=receipt, pid=os.getpid(), replayed=replayed))


def empty_receipt(request: StageRequest, failure: str, upkeep: UpkeepReceipt) -> StageReceipt:
    """The receipt of a stage whose child reported none (it died, hung or failed):
    what its parent reads of the journal stands in for its upkeep."""
    return StageReceipt(
        stage=request.stage,
        tag=request.tag,
        answering_model=request.answering_model,
        from_model="?",
        to_model="?",
        operations=[],
        fresh_process=False,
        upkeep=upkeep,
        failure=failure,
    )
