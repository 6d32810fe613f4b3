"""The pilot's probe child, run in the project's harness.

``python -m continuity.sampling.pilot_probe`` is the probe child a pilot controller
launches (`continuity.spend.schedule.PilotConfig.prober`). Everything before the probe
is `continuity.spend.pilot_child.main`'s: the parent, lease, cache-key and resolved
settings checks, the prepared boundary (verified and used once), the minted send, the
egress denial and the IPC with the controller. The probe itself runs in the runtime this
module opens (`open_runtime`), the harness every other probe uses:

- **the workspace**: a fresh harness workspace at ``probes/<slot>/`` in the output root
  (private), whose durable session is seeded with the prepared boundary's messages, as a
  reseed writes them;
- **the tools**: the registered loopback ConversationHistory, through the harness's MCP
  client (`continuity.harness.toolbox.McpToolbox`); it must offer exactly that tool
  (``lookup_tools_forbidden``);
- **the loop**: `continuity.harness.loop.AgentLoop`, with tool errors reported to the
  model as in production, each tool call recorded in the session, the canonical history
  and the tool-history sidecar; every model request of the turn is built from the
  session's context at its leaf and dispatched through the runtime proxy
  (`continuity.spend.runtime.RuntimeProxy`), so through the guard.

`ProbeRuntime`'s lifecycle operations are the ones the proxy forwards
(`continuity.spend.runtime.LIFECYCLE`), each a real operation on that workspace:
``configure_tools`` (the toolbox offered), ``sync_session`` (flush and fsync the
session; its entry count), ``reconcile`` (reload the session from disk: its context
must be the one in memory, ``probe_session_diverged`` otherwise), ``recover`` (reopen
the durable roots from disk, as a restarted runtime would), ``refresh`` (list the
server's tools again: still exactly ConversationHistory), ``invalidate`` (offer no tools
until configured again), ``retire`` (no further turn: ``probe_runtime_retired``) and
``dispose`` (close the durable roots; idempotent).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from continuity.errors import HarnessError, SpendError
from continuity.harness.loop import AgentLoop, TurnReport
from continuity.harness.session import DurableSession
from continuity.harness.toolbox import McpToolbox
from continuity.harness.workspace import Workspace
from continuity.lookup.pilot_settings import Route, resolve_pilot_settings
from continuity.memory.history import CanonicalHistory
from continuity.messages import AssistantMessage, Message, UserMessage
from continuity.providers.protocol import Provider
from continuity.spend import pilot_child
from continuity.spend.child_config import ChildConfig
from continuity.spend.contract import contract_for
from continuity.spend.preparation import PreparedBoundary
from continuity.spend.safety import HISTORY_TOOL, ResolvedSettings

__all__ = ["PROBES_DIR", "ProbeRuntime", "main", "open_runtime", "resolve_settings"]

PROBES_DIR = "probes"  # in the output root: one harness workspace per probe


def _clock() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _seed(session: DurableSession, history: CanonicalHistory, messages: Sequence[Message]) -> None:
    """Write the boundary's messages into a fresh session and canonical history."""
    for message in messages:
        entry = session.append_message(message)
        if isinstance(message, UserMessage):
            history.append(
                "user",
                message.text,
                attribution=message.attribution,
                source=message.source,
                entry_id=entry.id,
            )
        elif isinstance(message, AssistantMessage):  # as the loop records a reply
            history.append(
                "assistant", message.text, attribution="host", source="model", entry_id=entry.id
            )
    session.sync()


class ProbeRuntime:
    """One probe's harness runtime over a seeded workspace (module doc)."""

    def __init__(self, workspace: Workspace, *, session_id: str) -> None:
        self.workspace = workspace
        self.session_id = session_id
        self.session, self.history, self.tool_history = workspace.open(clock=_clock)
        self.toolbox: McpToolbox | None = None
        self.retired = False
        self.disposed = False

    @classmethod
    def seeded(cls, root: Path, *, session_id: str, messages: Sequence[Message]) -> ProbeRuntime:
        """A fresh workspace at `root` whose session holds `messages`."""
        root.mkdir(mode=0o700, parents=True, exist_ok=False)
        workspace = Workspace(root.absolute())
        session, history, _ = workspace.create(session_id=session_id, clock=_clock)
        _seed(session, history, messages)
        session.close()
        history.close()
        return cls(workspace, session_id=session_id)

    def configure_tools(self, toolbox: McpToolbox | None) -> None:
        if toolbox is not None:
            _only_history(toolbox)
        self.toolbox = toolbox

    def sync_session(self) -> int:
        self.session.sync()
        return len(self.session.entries)

    def reconcile(self) -> None:
        self.session.sync()
        on_disk = DurableSession.load(self.workspace.session_path, clock=_clock)
        if on_disk.context() != self.session.context():
            raise HarnessError(
                "the session on disk is not the one in memory",
                code="probe_session_diverged",
                location=str(self.workspace.session_path),
            )

    def recover(self) -> None:
        self._close()
        self.session, self.history, self.tool_history = self.workspace.open(clock=_clock)
        self.disposed = False

    async def refresh(self) -> None:
        if self.toolbox is not None:
            _check_names([definition.name for definition in await self.toolbox.refresh()])

    def invalidate(self) -> None:
        self.toolbox = None

    def retire(self) -> None:
        self.retired = True

    def dispose(self) -> None:
        self._close()
        self.disposed = True

    def _close(self) -> None:
        self.session.close()
        self.history.close()

    async def run_turn(
        self, provider: Provider, *, model: str, system: str, text: str, max_rounds: int
    ) -> TurnReport:
        """One owner turn of `text` through the agent loop every probe uses."""
        if self.retired or self.disposed:
            raise HarnessError(
                "the probe runtime is retired", code="probe_runtime_retired", location="run"
            )
        loop = AgentLoop(
            session=self.session,
            history=self.history,
            tool_history=self.tool_history,
            toolbox=self.toolbox,
            provider=provider,
            model=model,
            system=system,
            tool_errors="report",
            max_rounds=max_rounds,
        )
        return await loop.run_turn(text, source="probe")

    def answer(self) -> str:
        """The text of the last reply in the session (empty when there is none)."""
        for message in reversed(self.session.context()):
            if isinstance(message, AssistantMessage):
                return message.text
        return ""


def _check_names(names: list[str]) -> None:
    if names != [HISTORY_TOOL]:
        raise SpendError(
            "the history endpoint offers other tools",
            code="lookup_tools_forbidden",
            location="history",
            outcome="refused_pre_send",
        )


def _only_history(toolbox: McpToolbox) -> None:
    _check_names([definition.name for definition in toolbox.definitions])


@contextlib.asynccontextmanager
async def open_runtime(
    config: ChildConfig, boundary: PreparedBoundary
) -> AsyncIterator[ProbeRuntime]:
    """The probe's runtime (module doc), its toolbox configured; disposed on the way out."""
    root = Path(config.root) / PROBES_DIR / config.slot_id
    runtime = ProbeRuntime.seeded(root, session_id=config.slot_id, messages=boundary.messages)
    try:
        async with McpToolbox(config.history_url) as toolbox:
            runtime.configure_tools(toolbox)
            yield runtime
    finally:
        runtime.dispose()


def resolve_settings(config: ChildConfig) -> ResolvedSettings:
    """The settings of the harness this child runs, resolved from its configuration:
    its arm's, the registered reader, the guard contract's route, and no judge (the
    runtime grades nothing: `ProbeRuntime` has no judge to configure)."""
    contract = contract_for(config.assumptions, effort=config.effort, base_url=config.base_url)
    return resolve_pilot_settings(
        config.arm, reader=config.assumptions.model, judge=None, route=Route.of(contract)
    )


def main(argv: Any = None) -> int:
    """The pilot probe child: `continuity.spend.pilot_child.main` over this runtime."""
    return pilot_child.main(open_runtime, resolve_settings)


if __name__ == "__main__":
    raise SystemExit(main())
