"""The pilot's probe child: one slot, one guarded probe run, in its own process group.

The child (``python -m continuity.sampling.pilot_probe``, whose `main` is this module's)
reads its `ChildConfig` (JSON) from stdin
and inherits one end of the controller's socket pair. Before it reports ``ready`` it
verifies, and refuses (exit 3, ``lookup_child_refused: <code>`` on stderr) otherwise:

- its parent is the controller it was told of: the live parent PID and its process
  start identity (``lookup_parent_mismatch``);
- the controller holds the writer lease on the output root, read with ``lstat`` and a
  separate reader connection only (`continuity.spend.lease.check_lease`);
- its assigned transport cache key is its slot's in the run's assignment, plain ASCII
  of at most 64 characters and unique (`continuity.spend.safety.check_assignment`);
- the settings it resolves from the configuration of the harness it will run (the
  caller's `resolve`: `continuity.sampling.pilot_probe.resolve_settings`) are the ones
  the pilot's entry resolved (`ChildConfig.settings`), and pass the safety rules and the
  auxiliary-caller check (`check_child_settings`).

It then denies every socket destination but the registered endpoint and its
ConversationHistory (the addresses their hosts resolve to, at their ports) and its
inherited socket pair: any other ``connect`` raises
``PermissionError`` and is recorded, content-free, in ``egress/<slot>.jsonl``. Each child
also writes a canary, ``canaries/<slot>-<pid>.json`` (its PID, parent and process
group), and deliberately tries one forbidden destination so the record proves the
denial is live in this very process.

Still before ``ready`` it mints its one send: in a real-domain pilot (`ChildConfig.real`)
the real-send factory (`continuity.spend.real_send`) re-validates the authorization
bytes, the consumption claim and marker, the registered plan, role, build and code, the
epoch and cache key, the readiness blockers, its parent and the preparation record, and
refuses under a CI or debug variable; a faux pilot gets the faux domain's PID-bound
send. A refusal is exit 3 with its code, before any request.

The probe runs in the project's harness, in the runtime the caller of `main` opens
(``python -m continuity.sampling.pilot_probe``: a harness workspace seeded with the
prepared boundary, the registered loopback ConversationHistory as its MCP toolbox, which
must offer exactly that tool, and the agent loop every probe uses). It dispatches only
through the runtime proxy (`continuity.spend.runtime`), which is the loop's model: its
resolved settings are checked at construction and at every request, the guard's
branded dispatch is the only route, and each request must extend the previous one.
Each request is one `GuardedProvider` request over the `IpcPermitSource` (admission,
consumption, settlement and stops are exchanges with the controller, each persisted
before it is acknowledged). The child reports ``done`` with what it saw (the terminal
it claims, a fixed code, the answer's sha256, never the answer) and waits for the
controller's ``done-ack`` before it exits.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from continuity.errors import ContinuityError, ProviderError, SpendError
from continuity.spend.arrivals import witnessed
from continuity.spend.assumptions import CATALOG_BOUNDED_VERSION
from continuity.spend.child_config import ChildConfig
from continuity.spend.contract import callers_of, check_auxiliary_callers, contract_for
from continuity.spend.guard import GuardedProvider
from continuity.spend.ipc import Channel
from continuity.spend.ipc_permits import IpcPermitSource
from continuity.spend.lease import check_lease, process_start
from continuity.spend.preparation import (
    PreparedBoundary,
    still_prepared,
    verify_prepared,
)
from continuity.spend.real_grant import RealSlot
from continuity.spend.real_send import mint_granted
from continuity.spend.runtime import RuntimeProxy, guarded_dispatch
from continuity.spend.safety import ResolvedSettings, check_assignment, settings_for
from continuity.spend.transport import Send

__all__ = [
    "DEFAULT_SYSTEM",
    "FORBIDDEN_PROBE",
    "MAX_ROUNDS",
    "SOL_OUTPUT_TOKENS",
    "RuntimeOpener",
    "check_child_settings",
    "deny_egress",
    "main",
    "minted_send",
    "reader_model",
]

FORBIDDEN_PROBE = ("127.0.0.1", 9)  # the deliberate attempt every child records
DEFAULT_SYSTEM = "Answer from the conversation."  # when the boundary brings none
# A Sol request sends no output-cap field (its backend refuses one: `spend.output_caps`);
# the client still stops a stream that outgrows this many text pieces.
SOL_OUTPUT_TOKENS = 4096
# The loop's tool-round guard: the guard's request limit (10 per run) refuses first.
MAX_ROUNDS = 64
# What gives a probe its runtime: the project's harness (`continuity.sampling.pilot_probe`).
RuntimeOpener = Callable[["ChildConfig", PreparedBoundary], AbstractAsyncContextManager[Any]]


def _exit_refused(code: str, message: str) -> None:
    print(f"lookup_child_refused: {code}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(3)


def _verify(config: ChildConfig, own: ResolvedSettings) -> None:
    parent = os.getppid()
    if parent != config.controller_pid or process_start(parent) != config.controller_start:
        _exit_refused("lookup_parent_mismatch", "the parent is not the recorded live controller")
    try:
        holder = check_lease(Path(config.root))
    except SpendError as error:
        _exit_refused(error.code, "the writer lease is not held")
    if (holder.pid, holder.start) != (config.controller_pid, config.controller_start):
        _exit_refused("lookup_lease_foreign", "the writer lease is held by another process")
    try:
        check_assignment(config.cache_key, config.slot_id, config.assigned)
    except SpendError as error:
        _exit_refused(error.code, "the assigned cache key is invalid")
    check_child_settings(config, own)


def check_child_settings(config: ChildConfig, own: ResolvedSettings) -> None:
    """Before any model is prepared: the settings this child resolved from the harness it
    will run (`own`) must be the ones the entry resolved and sent (`ChildConfig.settings`),
    and pass the safety rules and the auxiliary-caller check (exit 3 with the code
    otherwise; a mismatch is ``lookup_auxiliary_callers_forbidden``)."""
    try:
        if own != config.settings:
            raise SpendError(
                "the harness this child runs is not the one the entry resolved",
                code="lookup_auxiliary_callers_forbidden",
                location="child.settings",
                outcome="refused_pre_send",
            )
        settings = settings_for((own,), config.arm, reader_model(config), where="child")
        check_auxiliary_callers(callers_of(settings), where="child")
    except SpendError as error:
        _exit_refused(error.code, "the resolved settings are unsafe")


def _addresses(allowed: tuple[tuple[str, int], ...]) -> set[tuple[str, int]]:
    """Every (address, port) the allowed (host, port) pairs resolve to now."""
    found: set[tuple[str, int]] = set()
    for host, port in allowed:
        with contextlib.suppress(OSError):
            for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
                found.add((str(info[4][0]), port))
    return found


def deny_egress(allowed: tuple[tuple[str, int], ...], record: Path) -> None:
    """Refuse every ``connect`` (and every datagram ``sendto``) but Unix sockets and the
    addresses the `allowed` (host, port) pairs resolve to (re-resolved once before a
    refusal: an endpoint's addresses may rotate), recording each refusal (family and
    port only) in `record`. It guards this process's Python sockets; the child starts
    no subprocess."""
    original = socket.socket.connect
    original_ex = socket.socket.connect_ex
    permitted = _addresses(allowed)

    def ok(sock: socket.socket, address: Any) -> bool:
        if sock.family == socket.AF_UNIX:
            return True
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return False
        if not isinstance(address, tuple) or len(address) < 2:
            return False
        target = (str(address[0]), address[1])
        if target not in permitted:
            permitted.update(_addresses(allowed))
        return target in permitted

    def refuse(sock: socket.socket, address: Any) -> None:
        port = address[1] if isinstance(address, tuple) and len(address) > 1 else None
        with open(record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"family": int(sock.family), "port": port}) + "\n")
        raise PermissionError(f"egress denied to port {port}")

    def connect(sock: socket.socket, address: Any) -> None:
        if not ok(sock, address):
            refuse(sock, address)
        original(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        if not ok(sock, address):
            refuse(sock, address)
        return original_ex(sock, address)

    original_sendto = socket.socket.sendto

    def sendto(sock: socket.socket, data: Any, *args: Any) -> int:
        address = args[-1]  # sendto(data, address) or sendto(data, flags, address)
        if not ok(sock, address):
            refuse(sock, address)
        return original_sendto(sock, data, *args)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.socket.sendto = sendto  # type: ignore[method-assign,assignment]


def _canary(config: ChildConfig) -> None:
    folder = Path(config.root) / "canaries"
    folder.mkdir(mode=0o700, exist_ok=True)
    canary = {"pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0)}
    (folder / f"{config.slot_id}-{os.getpid()}.json").write_text(json.dumps(canary))


def minted_send(config: ChildConfig) -> tuple[Send, httpx.AsyncHTTPTransport]:
    """The send this child mints once its preparation verifies: bound to this PID (a
    forked copy cannot use it), re-checking the preparation record before every send,
    one request through a retry-free transport (which never follows a redirect)."""
    pid = os.getpid()
    transport = httpx.AsyncHTTPTransport(retries=0)

    async def send(request: httpx.Request) -> httpx.Response:
        if os.getpid() != pid:
            raise SpendError(
                "the send was minted for another process",
                code="lookup_unguarded_dispatch",
                location=config.slot_id,
                outcome="refused_pre_send",
            )
        still_prepared(Path(config.root), config.prepared)
        return await transport.handle_async_request(request)

    return send, transport


def _mint(config: ChildConfig) -> tuple[Send, httpx.AsyncHTTPTransport]:
    """The slot's one send: the real-send factory's for a real-domain pilot (every check
    of `continuity.spend.real_send`, over what this child was told of its slot), else the
    faux domain's PID-bound send; either way each request is witnessed on disk before it
    leaves (`continuity.spend.arrivals`)."""
    if config.real is None:
        send, transport = minted_send(config)
    else:
        slot = RealSlot(
            slot_id=config.slot_id,
            role=config.role,
            arm=config.arm,
            epoch=config.epoch,
            cache_key=config.cache_key,
            assigned=config.assigned,
            assumptions=config.assumptions,
            effort=config.effort,
        )
        send, transport = mint_granted(config.real, config.prepared, slot)
    return witnessed(send, Path(config.root), config.slot_id), transport


async def _probe(
    config: ChildConfig,
    permits: IpcPermitSource,
    boundary: PreparedBoundary,
    minted: tuple[Send, httpx.AsyncHTTPTransport],
    open_runtime: RuntimeOpener,
) -> dict[str, Any]:
    """One guarded probe turn in the runtime `open_runtime` gives (the project's harness:
    `continuity.sampling.pilot_probe`); what the child reports (fixed codes, a hash,
    numbers)."""
    send, transport = minted
    contract = msgspec.structs.replace(
        contract_for(config.assumptions, effort=config.effort, base_url=config.base_url),
        prompt_cache_key=config.cache_key,
    )
    vendor = config.assumptions.version == CATALOG_BOUNDED_VERSION
    guard = GuardedProvider(
        contract=contract,
        permits=permits,
        run_id=config.run_id,
        slot_id=config.slot_id,
        credentials_path=config.credentials,
        callers=callers_of(config.settings),
        send=send,
        assumptions=config.assumptions,
        # a vendor enforces the registered output cap; Sol's backend takes none
        max_output_tokens=config.assumptions.max_output if vendor else SOL_OUTPUT_TOKENS,
        timeout=config.timeout,
    )
    try:
        async with open_runtime(config, boundary) as runtime:
            proxy = RuntimeProxy(runtime, guarded_dispatch(guard), config.settings, contract.model)
            system = boundary.system or DEFAULT_SYSTEM
            report = await proxy.run(config.question, system=system, max_rounds=MAX_ROUNDS)
            text = runtime.answer()
        return {
            "terminal": "completed",
            "code": None,
            "answer_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "history_calls": report.tool_calls,
        }
    except (SpendError, ProviderError) as error:
        return {"terminal": "incomplete", "code": error.code, "answer_sha256": None}
    finally:
        await guard.aclose()
        await transport.aclose()


def reader_model(config: ChildConfig) -> str:
    """The model the pilot's registry registers (the one its guard contract binds)."""
    return config.assumptions.model.partition(":")[2]


def main(open_runtime: RuntimeOpener, resolve: Callable[[ChildConfig], ResolvedSettings]) -> int:
    """The child (module doc); its probe runs in the runtime `open_runtime` gives, whose
    settings `resolve` reads from that harness's configuration."""
    config = msgspec.json.decode(sys.stdin.buffer.read(), type=ChildConfig)
    try:
        own = resolve(config)
    except ContinuityError as error:
        _exit_refused(error.code, "the harness configuration does not resolve")
    _verify(config, own)
    try:  # before ready: the prepared boundary, exactly as journaled, used once
        boundary = verify_prepared(Path(config.root), config.prepared)
    except SpendError as error:
        _exit_refused(error.code, "the prepared boundary does not verify")
    try:  # minted once, before ready: a refusal here never reaches the endpoint
        minted = _mint(config)
    except SpendError as error:
        _exit_refused(error.code, "the send cannot be minted")
    egress = Path(config.root) / "egress"
    egress.mkdir(mode=0o700, exist_ok=True)
    deny_egress(config.allowed, egress / f"{config.slot_id}.jsonl")
    _canary(config)
    with contextlib.suppress(OSError):  # denied and recorded: the guard is live here
        socket.create_connection(FORBIDDEN_PROBE, timeout=1).close()
    sock = socket.socket(fileno=config.fd)
    channel = Channel(sock, epoch=config.epoch, slot=config.slot_id, worker=os.getpid())
    try:
        channel.send("ready", pid=os.getpid(), start=process_start(os.getpid()))
        permits = IpcPermitSource(channel, Path(config.account), timeout=config.timeout)
        report = anyio.run(_probe, config, permits, boundary, minted, open_runtime)
        channel.send("done", **report)
        channel.expect("done-ack", timeout=config.timeout)
    except ContinuityError as error:
        print(f"lookup_child_stopped: {error.code}", file=sys.stderr, flush=True)
        return 4
    finally:
        channel.close()
    return 0
