"""The CAP/0 runner side: spawn an adapter from its manifest, talk to it, restart it.

`spawn_adapter(manifest, workspace=...)` starts the manifest's command (``{python}``
in it is the interpreter running continuity) in a process
group of its own (continuity owns it: a restart is something continuity did, and can
prove by the new PID and start identity), with the manifest's environment allowlist
only, and the adapter's stderr in a log file. `AdapterProcess.request` sends one
JSON-RPC request and waits for its answer under a deadline; requests may overlap (a
``turn/steer`` while ``turn/run`` is pending). `AdapterProcess.kill` takes the whole
group with SIGKILL; `spawn_adapter` then waits (up to 10 s) for the adapter to be reaped.

Codes (`AdapterError`):
- ``adapter_start_failed``: the command cannot be started, or the adapter exits or
  closes stdout before it answered ``initialize``;
- ``adapter_protocol_error``: a line that is not JSON-RPC 2.0, an answer to no pending
  request, an error answer, a result of the wrong shape, or the adapter gone mid-call
  (an answer to a request that already timed out is dropped);
- ``adapter_timeout``: no answer within the deadline;
- ``adapter_capability_missing:<cap>`` (`require_capabilities`): an arm needs a
  capability the adapter did not declare in ``initialize``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.buffered import BufferedByteReceiveStream

from continuity.agents.manifest import Manifest
from continuity.agents.protocol import (
    AgentInfo,
    Capabilities,
    CompactResult,
    InitParams,
    McpServer,
    SteerResult,
    TurnResult,
    decode_line,
    encode,
    result_as,
)
from continuity.agents.sandbox import Confinement, sandbox_argv
from continuity.errors import AdapterError, first_coded
from continuity.processes import GONE_OR_DENIED, kill_group

__all__ = [
    "ARM_NEEDS",
    "MAX_LINE",
    "AdapterProcess",
    "check_declared",
    "require_capabilities",
    "spawn_adapter",
]

# The longest CAP/0 line read from an adapter (a turn's reply and its events fit many
# times over); a longer one is adapter_protocol_error, never buffered further.
MAX_LINE = 8 * 1024 * 1024
# what each outside-agent arm needs the adapter to have declared
ARM_NEEDS: dict[str, tuple[str, ...]] = {
    "native": (),
    "restart": ("resume_after_restart",),
    "new_session": ("new_session",),
    "compact": ("compaction",),
    "switch": ("model_switch",),
    "continuity-store": ("new_session", "session_tools"),
    "continuity-pack-cold": ("new_session", "context_inject"),
}


def _has(capabilities: Capabilities, cap: str) -> bool:
    """Whether a capability is declared (``compaction: none`` is not)."""
    value = getattr(capabilities, cap)
    return bool(value) and value != "none"


def require_capabilities(capabilities: Capabilities, arms: Sequence[str]) -> None:
    """Refuse an arm the adapter cannot serve (never run as a silent degradation).

    Raises:
        AdapterError: ``adapter_capability_missing:<cap>`` at the arm.
    """
    for arm in arms:
        for cap in ARM_NEEDS.get(arm, ()):
            if not _has(capabilities, cap):
                raise AdapterError(
                    f"arm {arm} needs the adapter capability {cap}",
                    code=f"adapter_capability_missing:{cap}",
                    location=arm,
                )


def check_declared(manifest: Manifest, reported: Capabilities) -> None:
    """The capabilities `initialize` reported must be the ones the manifest declares
    (when it declares any): a plan was checked against the manifest's.

    Raises:
        AdapterError: ``adapter_protocol_error`` naming the first that differs.
    """
    if manifest.capabilities is None:
        return
    for name, declared in manifest.capabilities.model_dump().items():
        if getattr(reported, name) != declared:
            raise AdapterError(
                f"initialize reported {name} = {getattr(reported, name)!r}; the manifest "
                f"declares {declared!r}",
                code="adapter_protocol_error",
                location=f"initialize:capabilities.{name}",
            )


class _Pending:
    def __init__(self) -> None:
        self.event = anyio.Event()
        self.message: dict[str, Any] | None = None


class AdapterProcess:
    """One running adapter (see the module doc). Use through `spawn_adapter`."""

    def __init__(self, process: anyio.abc.Process, manifest: Manifest) -> None:
        self.process = process
        self.manifest = manifest
        self.pid = process.pid
        # agent/event notifications are counted and dropped: nothing reads their
        # contents, and holding them let a flood grow the runner without bound
        self.event_count = 0
        self._pending: dict[int, _Pending] = {}
        self._abandoned: set[int] = set()  # requests that timed out: late answers dropped
        self._next = 0
        self._closed = False
        self._initialized = False
        self._failure: AdapterError | None = None
        self._lock = anyio.Lock()

    async def _read(self) -> None:
        assert self.process.stdout is not None
        stream = BufferedByteReceiveStream(self.process.stdout)
        try:
            while True:
                line = await stream.receive_until(b"\n", MAX_LINE)
                if not line.strip():
                    continue
                message = decode_line(line)
                if "id" not in message or message.get("id") is None:
                    if message.get("method") == "agent/event":
                        self.event_count += 1
                    continue
                ident = message["id"]
                if isinstance(ident, int) and ident in self._abandoned:
                    self._abandoned.discard(ident)  # the answer came after its deadline
                    continue
                slot = self._pending.pop(ident, None) if isinstance(ident, int) else None
                if slot is None:
                    raise AdapterError(
                        f"an answer to no pending request (id {message['id']!r})",
                        code="adapter_protocol_error",
                        location="stdout",
                    )
                slot.message = message
                slot.event.set()
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
            pass
        except AdapterError as error:
            self._fail(error)
            return
        except anyio.DelimiterNotFound:
            self._fail(AdapterError(f"a line over the {MAX_LINE:,}-byte limit"))
            return
        self._closed = True
        for slot in self._pending.values():
            slot.event.set()  # each waiter sees the adapter gone

    def _fail(self, error: AdapterError) -> None:
        """The adapter broke the protocol: every pending request raises `error`."""
        self._closed = True
        self._failure = error
        for slot in self._pending.values():
            slot.message = {"failed": True}
            slot.event.set()

    async def request(self, method: str, params: dict[str, Any], *, timeout: float) -> Any:
        """Send one request; its result (raises `AdapterError`, module doc)."""
        if self._closed:
            raise AdapterError("the adapter is gone", code=self._gone_code(method), location=method)
        self._next += 1
        ident, slot = self._next, _Pending()
        self._pending[ident] = slot
        assert self.process.stdin is not None
        message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        with anyio.move_on_after(timeout) as scope:  # the send too: a full pipe blocks
            try:
                async with self._lock:
                    await self.process.stdin.send(encode(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._pending.pop(ident, None)
                raise AdapterError(
                    "the adapter closed its stdin", code=self._gone_code(method), location=method
                ) from None
            await slot.event.wait()
        if scope.cancelled_caught:
            self._pending.pop(ident, None)
            self._abandoned.add(ident)
            raise AdapterError(
                f"no answer within {timeout:g} s", code="adapter_timeout", location=method
            )
        answer = slot.message
        if answer is None:
            raise AdapterError(
                "the adapter exited before it answered",
                code=self._gone_code(method),
                location=method,
            )
        if "failed" in answer and self._failure is not None:
            failure = self._failure  # where it broke is the request it was waiting for
            raise AdapterError(failure.message, code=failure.code, location=method)
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise AdapterError(
                f"the adapter answered with an error: {error.get('message', answer['error'])}",
                code="adapter_protocol_error",
                location=method,
            )
        return answer.get("result")

    def _gone_code(self, method: str) -> str:
        starting = method == "initialize" and not self._initialized
        return "adapter_start_failed" if starting else "adapter_protocol_error"

    async def initialize(self, params: InitParams, *, timeout: float = 60) -> AgentInfo:
        raw = await self.request("initialize", msgspec.to_builtins(params), timeout=timeout)
        info: AgentInfo = result_as(raw, AgentInfo, "initialize")
        self._initialized = True
        return info

    async def open_session(
        self, key: str, *, mcp_servers: Sequence[McpServer] = (), timeout: float = 60
    ) -> str:
        params: dict[str, Any] = {"key": key}
        if mcp_servers:  # session_tools: the new session's extra servers
            params["mcp_servers"] = msgspec.to_builtins(list(mcp_servers))
        raw = await self.request("session/open", params, timeout=timeout)
        opened: dict[str, str] = result_as(raw, dict[str, str], "session/open")
        if not opened.get("session_id"):
            raise AdapterError(
                "session/open gave no session_id",
                code="adapter_protocol_error",
                location="session/open",
            )
        return opened["session_id"]

    async def run_turn(
        self, session_id: str, turn_id: str, text: str, at: str = "", *, timeout: float = 600
    ) -> TurnResult:
        params = {"session_id": session_id, "turn_id": turn_id, "text": text, "at": at}
        raw = await self.request("turn/run", params, timeout=timeout)
        result: TurnResult = result_as(raw, TurnResult, "turn/run")
        return result

    async def steer(
        self, session_id: str, turn_id: str, steer_id: str, text: str, *, timeout: float = 60
    ) -> SteerResult:
        params = {"session_id": session_id, "turn_id": turn_id, "steer_id": steer_id, "text": text}
        raw = await self.request("turn/steer", params, timeout=timeout)
        result: SteerResult = result_as(raw, SteerResult, "turn/steer")
        return result

    async def compact(self, session_id: str, *, timeout: float = 600) -> CompactResult:
        """Ask the agent to compact the session's context with its own mechanism."""
        raw = await self.request("session/compact", {"session_id": session_id}, timeout=timeout)
        result: CompactResult = result_as(raw, CompactResult, "session/compact")
        return result

    async def switch_model(self, session_id: str, model: str, *, timeout: float = 60) -> None:
        """Tell the agent that the session's later requests name `model`."""
        params = {"session_id": session_id, "model": model}
        await self.request("session/switch_model", params, timeout=timeout)

    async def inject(self, session_id: str, text: str, *, timeout: float = 60) -> None:
        """Add `text` to the session's context the way the agent documents."""
        await self.request("context/inject", {"session_id": session_id, "text": text},
                           timeout=timeout)  # fmt: skip

    async def shutdown(self, *, timeout: float = 30) -> None:
        """Ask the adapter to persist and exit; the group is killed if it does not in time."""
        try:
            await self.request("shutdown", {}, timeout=timeout)
            if self.process.stdin is not None:
                await self.process.stdin.aclose()  # end of input: the adapter's loop ends
            with anyio.move_on_after(timeout):
                await self.process.wait()
        finally:
            self.kill()

    def kill(self) -> None:
        """SIGKILL the adapter's whole process group (a restart, or the end of a unit)."""
        kill_group(self.pid, tolerate=GONE_OR_DENIED)
        self._closed = True


def _environment(manifest: Manifest, extra: dict[str, str]) -> dict[str, str]:
    passed = {name: os.environ[name] for name in manifest.env if name in os.environ}
    return {**passed, **extra}


@contextlib.asynccontextmanager
async def spawn_adapter(
    manifest: Manifest,
    *,
    workspace: Path,
    log: Path,
    env: dict[str, str] | None = None,
    confinement: Confinement | None = None,
) -> AsyncIterator[AdapterProcess]:
    """Start the adapter (cwd: the manifest's folder); kill its group when done. With
    `confinement`, inside the sandbox (`continuity.agents.sandbox`): its workspace is
    `workspace` seen at ``/workspace``, and its ways out are the confinement's."""
    log.parent.mkdir(parents=True, exist_ok=True)
    workspace.mkdir(parents=True, exist_ok=True)
    environment = _environment(manifest, env or {})
    command = [sys.executable if part == "{python}" else part for part in manifest.command]
    if confinement is not None:
        folder = Path(manifest.folder or ".")
        command = sandbox_argv(
            command, folder=folder, workspace=workspace, confinement=confinement, env=environment
        )
        environment = {}  # bwrap sets the adapter's own (--clearenv, --setenv)
    with open(log, "ab") as stderr:
        try:
            process = await anyio.open_process(
                command,
                cwd=manifest.folder or None,
                env=environment,
                stderr=stderr,
                start_new_session=True,
            )
        except OSError as exc:
            raise AdapterError(
                f"cannot start {command[0]}: {exc.strerror or exc}",
                code="adapter_start_failed",
                location=manifest.name,
            ) from None
    adapter = AdapterProcess(process, manifest)
    try:
        with first_coded():
            async with anyio.create_task_group() as group:
                group.start_soon(adapter._read)
                try:
                    yield adapter
                finally:
                    adapter.kill()
                    with anyio.move_on_after(10, shield=True):
                        await process.wait()
                    group.cancel_scope.cancel()
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            await process.aclose()
