"""Lookup mode in the probe child (``lookup-allowed-v1``): the metered history, the
deadlines, the evaluator's reference path and the probe's content-free witness.

A `LookupProbe` exists only when the request carries a `LookupBinding`. It serves the
reader a metered proxy of ConversationHistory under the probe's call and byte budget
(the reference path gets the policy's caps instead), fails the probe past its deadline
or its turn's safety timeout, and writes its `LookupWitness` to the witness file on
every history call and on every failure, so a failing or killed child leaves its last
witness behind.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import anyio

from continuity.errors import HarnessError
from continuity.harness.loop import AgentLoop, TurnReport
from continuity.lookup.probe import PageTracker, reference_path, write_witness
from continuity.lookup.receipts import LookupBinding, LookupWitness, PathReceipt
from continuity.lookup.state import MeterState
from continuity.memory.retained import RetainedStore
from continuity.messages import Usage, UserMessage, wire_payload
from continuity.probes.protocol import probe_turn_text
from continuity.sampling.boundary import ProbeSetup
from continuity.sampling.reader import ProbeReader

if TYPE_CHECKING:
    from continuity.harness.toolbox import McpToolbox
    from continuity.lookup.meter import Meter

__all__ = ["LookupProbe"]


class LookupProbe:
    """One probe's lookup: its binding, its reader, the pages returned and the meter."""

    def __init__(self, setup: ProbeSetup, binding: LookupBinding, reader: ProbeReader) -> None:
        self.setup = setup
        self.binding = binding
        self.reader = reader
        self.tracker = PageTracker()
        self.meter: Meter | None = None  # set once the metered proxy serves
        self.location = setup.request.arm

    @property
    def reference(self) -> bool:
        """The evaluator's reference path runs instead of the reader."""
        return self.binding.mode == "reference"

    def witness(self, paths: list[PathReceipt] | None = None, *, deadline: bool = False) -> None:
        """Write the witness as of now to its file (see `sealed_witness`)."""
        self.sealed_witness(paths, deadline=deadline)

    def sealed_witness(
        self, paths: list[PathReceipt] | None = None, *, deadline: bool = False
    ) -> LookupWitness:
        """The probe's content-free lookup witness as of now, also written to its file."""
        lookup, seen = self.binding, self.reader.seen
        witness = LookupWitness(
            meter=self.meter.state()
            if self.meter is not None
            else MeterState(lookup.call_budget, lookup.byte_budget, 0, 0, 0, 0, [], None),
            reader_stopped=self.reader.stopped,
            records_returned=sorted(self.tracker.whole()),
            sources_returned=self.tracker.sources_returned(lookup.sources),
            first_request_bytes=len(wire_payload(seen[0])) if seen else 0,
            deadline_exceeded=deadline,
            soul_sha256=self.setup.soul_sha256,
            paths=paths or [],
            sources=len(lookup.sources),
        )
        write_witness(lookup.witness_path, witness)
        return witness

    def check_deadline(self) -> None:
        """Before every reader request.

        Raises:
            HarnessError: ``lookup_deadline_exceeded`` (after writing the witness).
        """
        deadline = self.binding.probe_deadline
        if self.setup.clock() - self.setup.started > deadline:
            self.witness(deadline=True)
            raise HarnessError(
                f"the lookup probe passed its {deadline:.0f} s deadline",
                code="lookup_deadline_exceeded",
                location=self.location,
            )

    async def metered(self, stack: contextlib.AsyncExitStack, url: str) -> str:
        """Serve the metered proxy of the history server at `url`; return its URL."""
        from continuity.lookup.meter import metered_history
        from continuity.lookup.policy import BYTE_CAP, CALL_CAP

        url, self.meter = await stack.enter_async_context(
            metered_history(
                url,
                calls=CALL_CAP if self.reference else self.binding.call_budget,
                budget_bytes=BYTE_CAP if self.reference else self.binding.byte_budget,
            )
        )
        return url

    def absorb(self, text: str) -> None:
        """After every history call: track the returned pages, rewrite the witness."""
        self.tracker.absorb(text)
        self.witness()

    async def ask(
        self, loop: AgentLoop, toolbox: McpToolbox | None, store: RetainedStore | None
    ) -> tuple[TurnReport, list[PathReceipt]]:
        """The reader's turn under the safety timeout, or the reference path."""
        if self.reference:
            return TurnReport(0, 0, 0, Usage()), await self._reference(loop, toolbox, store)
        seconds = self.binding.turn_safety_seconds
        try:
            with anyio.fail_after(seconds):
                text = probe_turn_text(self.setup.request.probe_text, self.setup.request.category)
                return await loop.run_turn(text, source="probe"), []
        except TimeoutError:
            self.witness()
            raise HarnessError(
                f"the probe turn passed its {seconds:.0f} s safety timeout",
                code="lookup_turn_timeout",
                location=self.location,
            ) from None

    async def _reference(
        self, loop: AgentLoop, toolbox: McpToolbox | None, store: RetainedStore | None
    ) -> list[PathReceipt]:
        """The evaluator's reference path, not the reader: the first request the reader
        would get, then one path per source through the metered proxy."""
        seen = self.reader.seen
        loop.add_user(
            UserMessage(
                text=probe_turn_text(self.setup.request.probe_text, self.setup.request.category),
                source="probe",
            )
        )
        seen.append(loop.request())
        if toolbox is None or self.meter is None:
            return []
        context_text = "\n".join(getattr(m, "text", "") for m in seen[0].messages)
        assert store is not None
        return [
            await reference_path(
                toolbox, self.meter, s, context_text, store.find_by_digest(s.digest)
            )
            for s in self.binding.sources
        ]

    def reference_input_tokens(self) -> int:
        """The reference path's estimate of the first request's input tokens."""
        seen = self.reader.seen
        return -(-len(wire_payload(seen[0])) // 4) if seen else 0
