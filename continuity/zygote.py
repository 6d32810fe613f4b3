"""Zygotes: pre-imported Python processes that fork a fresh child for every call.

Starting an interpreter that imports MCP, uvicorn, pydantic and the harness costs about
160 ms (570 ms with the tool-arm stacks); forking a process that already has them costs
about a millisecond. So the runner keeps one zygote per runner thread (`ZygotePool`),
started once, and every call it makes (one unit's worker, one checkpoint replay, one
arm sample's probe) runs in a new child forked from that zygote. The child is a new
process with no state from any earlier call: the zygote itself never runs one. It dies
with the zygote, which dies with the thread that started it (`die_with_parent`: the
pool's own thread, which lives until the pool closes), so a SIGKILLed run leaves none.

``python -m continuity.zygote --parent-pid PID --preload a,b`` is the zygote. It talks
over its stdin and stdout in length-prefixed frames (never a file: a request can hold
evaluator-only values):

- request: ``>II`` (target and payload lengths), the target (``package.module:function``,
  a function taking the payload bytes and returning bytes), the payload;
- reply: ``>BI`` (status, body length), the body. Status 0: the target's bytes; 1: the
  target raised (a `ChildFailure`); 2: the child died without replying (its wait status).

The first reply, status 0 with the zygote's pid, says it has imported `--preload` (a
comma list of ``module`` or ``module:function``, the function called once imported;
status 1 when that failed). Anything a child prints goes to stderr, never into a
reply.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gc
import importlib
import os
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

import msgspec

from continuity import errors
from continuity.errors import CheckpointError, ContinuityError, typed_error
from continuity.parent_death import die_with_parent

__all__ = [
    "ChildFailure",
    "Zygote",
    "ZygoteCall",
    "ZygotePool",
    "call_in_child",
    "main",
    "serve",
]

_REQUEST = struct.Struct(">II")
_REPLY = struct.Struct(">BI")
OK, RAISED, DIED = 0, 1, 2

# What a caller needs to run a target in a fresh child: (target, payload, timeout, what).
ZygoteCall = Callable[[str, bytes, float, str], bytes]


class ChildFailure(msgspec.Struct, frozen=True):
    """What a target raised in the child: its class name, and for a `ContinuityError`
    its code, message and location (re-raised as that class in the caller)."""

    kind: str
    message: str
    code: str | None = None
    location: str = "-"

    def error(self) -> ContinuityError:
        """The error to raise in the caller: the same `continuity.errors` class, code and
        location when the child raised a typed error, else ``child_failed``."""
        if self.code is None:
            return CheckpointError(f"{self.kind}: {self.message}", code="child_failed")
        cls = getattr(errors, self.kind, None)
        if isinstance(cls, type) and issubclass(cls, ContinuityError):
            try:
                return cls(self.message, code=self.code, location=self.location)
            except TypeError:  # a class with its own constructor (TraceInvalid)
                pass
        return ContinuityError(self.message, code=self.code, location=self.location)


def _failure_error(body: bytes, what: str) -> ContinuityError:
    """The error a `ChildFailure` body describes; ``child_failed`` when it does not
    decode (a reply cut short)."""
    try:
        return msgspec.json.decode(body, type=ChildFailure).error()
    except msgspec.MsgspecError:
        return CheckpointError(f"{what}: its failure report does not decode", code="child_failed")


def _read_exact(fd: int, size: int) -> bytes | None:
    """`size` bytes from `fd`; None at end of file before the first byte."""
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            if chunks:
                raise EOFError(f"frame cut short: {size - left} of {size} bytes")
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _failure(exc: BaseException) -> bytes:
    typed = typed_error(exc)
    if typed is not None:
        failure = ChildFailure(type(typed).__name__, typed.message, typed.code, typed.location)
    else:
        failure = ChildFailure(type(exc).__name__, str(exc))
    return msgspec.json.encode(failure)


def _run_target(target: str, payload: bytes, write_fd: int, zygote: int) -> None:
    """In the forked child: run the target, write status + body to the pipe, and leave
    with ``os._exit`` (a forked child never unwinds into the zygote's loop)."""
    die_with_parent(zygote)
    try:
        module, _, name = target.partition(":")
        function = getattr(importlib.import_module(module), name)
        status, body = OK, function(payload)
    # Whatever it raises, even an interrupt, is reported and ends here.
    except BaseException as exc:
        status, body = RAISED, _failure(exc)
    try:
        _write_all(write_fd, bytes([status]) + body)
    finally:
        os._exit(0)


def _fork_call(target: str, payload: bytes, reply_fd: int) -> tuple[int, bytes]:
    """Fork a child for one call and wait for it: (status, body). A child that did not
    exit 0 after its reply (killed while writing it, say) died, whatever it wrote."""
    zygote = os.getpid()  # before the fork: the child's parent may be gone by the time
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.close(reply_fd)
        devnull = os.open(os.devnull, os.O_RDONLY)  # the next request is the zygote's
        os.dup2(devnull, 0)
        os.close(devnull)
        _run_target(target, payload, write_fd, zygote)
    os.close(write_fd)
    chunks: list[bytes] = []
    while chunk := os.read(read_fd, 1 << 20):
        chunks.append(chunk)
    os.close(read_fd)
    _, wait_status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    exited = os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == 0
    if not exited or not data or data[0] not in (OK, RAISED):
        return DIED, f"the child died without replying (wait status {wait_status})".encode()
    return data[0], data[1:]


def serve(preload: Sequence[str]) -> int:
    """The zygote's loop: import `preload`, say so, then one forked child per request
    until stdin closes."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # a stray print (here or in a child) never lands in a reply
    try:
        for name in preload:  # "module" or "module:function" (called once imported)
            module, _, function = name.partition(":")
            loaded = importlib.import_module(module)
            if function:
                getattr(loaded, function)()
        ready = OK, str(os.getpid()).encode()
    except Exception as exc:  # an import failed: say so, then stop
        ready = RAISED, _failure(exc)
    _write_all(reply_fd, _REPLY.pack(ready[0], len(ready[1])) + ready[1])
    if ready[0] != OK:
        return 1
    # What the imports made is never garbage: the children's collections skip it (and
    # so never touch, and copy, the pages it lives on).
    gc.freeze()
    while (request := _read_request()) is not None:
        status, body = _fork_call(*request, reply_fd)
        _write_all(reply_fd, _REPLY.pack(status, len(body)) + body)
    return 0


def _read_request() -> tuple[str, bytes] | None:
    """The next (target, payload) on stdin; None when stdin closed, even mid-request."""
    try:
        head = _read_exact(0, _REQUEST.size)
        if head is None:
            return None
        target_size, payload_size = _REQUEST.unpack(head)
        target = _read_exact(0, target_size) if target_size else b""
        payload = _read_exact(0, payload_size) if payload_size else b""
    except EOFError:
        return None
    if target is None or payload is None:
        return None
    return target.decode(), payload


class Zygote:
    """One zygote process, used by one thread at a time (the kernel kills it when the
    thread that started it ends)."""

    def __init__(self, preload: Sequence[str]) -> None:
        # What the zygote and its children write to stderr: an unnamed file (nothing of
        # it stays on disk), whose tail explains a child that died.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _close_pipes
        # Appended to, wherever this side has seeked to read it (the offset is shared).
        flags = fcntl.fcntl(self._stderr.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(self._stderr.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "continuity.zygote",
                "--parent-pid",
                str(os.getpid()),
                "--preload",
                ",".join(preload),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.ready = False
        self._since = 0  # where the call in flight's stderr starts
        self._timeout = 0.0  # the call in flight's timeout, for its message

    def alive(self) -> bool:
        return self.process.poll() is None

    def _last_words(self, since: int) -> str:
        """The last line written to stderr since offset `since` (empty when none)."""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(max(since, self._stderr.seek(0, os.SEEK_END) - 4096))
            lines = self._stderr.read().decode(errors="replace").strip().splitlines()
            if lines:
                return f" (its last line: {lines[-1].strip()})"
        return ""

    def _read(self, size: int, deadline: float, what: str, since: int) -> bytes:
        """`size` bytes of the reply, by `deadline`; a failure quotes the last line the
        zygote wrote to stderr after offset `since` (this call's, not an earlier one's)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks: list[bytes] = []
        left = size
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                self.kill()
                raise CheckpointError(
                    f"{what} ran past its {self._timeout:g} s timeout and was killed"
                    + self._last_words(since),
                    code="child_failed",
                )
            chunk = os.read(fd, left)
            if not chunk:
                self.kill()
                raise CheckpointError(
                    f"{what}: its zygote exited (status {self.process.returncode})"
                    + self._last_words(since),
                    code="child_failed",
                )
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _reply(self, deadline: float, what: str, since: int) -> tuple[int, bytes]:
        status, size = _REPLY.unpack(self._read(_REPLY.size, deadline, what, since))
        return status, self._read(size, deadline, what, since) if size else b""

    def call(self, target: str, payload: bytes, timeout: float, what: str) -> bytes:
        """Run `target` on `payload` in a fresh child; return what it returned.

        Raises:
            ContinuityError: what the target raised (same class, code and location).
            CheckpointError: ``child_failed`` when the child died, the zygote could not
                start, or the call ran past `timeout` (the zygote and child are killed).
        """
        deadline = time.monotonic() + timeout
        self._timeout = timeout
        try:
            status, body = self._exchange(target, payload, deadline, what)
        except CheckpointError:
            raise  # the zygote was killed where it was raised
        except BaseException:  # an interrupt mid-call: a reply may still come, unread
            self.kill()
            raise
        if status == RAISED:
            raise _failure_error(body, what)
        if status != OK:
            detail = body.decode(errors="replace") if status == DIED else f"status {status}"
            raise CheckpointError(
                f"{what}: {detail}{self._last_words(self._since)}", code="child_failed"
            )
        return body

    def _exchange(
        self, target: str, payload: bytes, deadline: float, what: str
    ) -> tuple[int, bytes]:
        """Wait for the zygote's readiness (its first call), send the request, and read
        the reply's status and body."""
        if not self.ready:
            status, body = self._reply(deadline, what, 0)
            if status != OK:
                self.kill()
                raise _failure_error(body, what)
            self.ready = True
        self._since = self._stderr.seek(0, os.SEEK_END)
        assert self.process.stdin is not None
        encoded = target.encode()
        try:
            self.process.stdin.write(_REQUEST.pack(len(encoded), len(payload)) + encoded + payload)
            self.process.stdin.flush()
        except OSError:
            self.kill()
            raise CheckpointError(f"{what}: its zygote is gone", code="child_failed") from None
        return self._reply(deadline, what, self._since)

    def kill(self) -> None:
        """SIGKILL it (its child dies with it) and close its pipes."""
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        self._close_pipes()

    def close(self) -> None:
        """Close its stdin (it exits after the call in flight, if any); kill it when it
        has not exited within a second, or at once when it never served a call (it may
        still be importing)."""
        if not self.ready:
            self.kill()
            return
        self._close_pipes(stdin_only=True)
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_pipes()

    def _close_pipes(self, *, stdin_only: bool = False) -> None:
        for pipe in (
            (self.process.stdin,) if stdin_only else (self.process.stdin, self.process.stdout)
        ):
            with contextlib.suppress(OSError):  # a flush into a dead zygote
                if pipe is not None:
                    pipe.close()
        if not stdin_only:
            self._stderr.close()


class ZygotePool:
    """Zygotes for calling threads; `close` stops them all.

    A calling thread keeps the zygote it first took for as long as it lives, so threads
    side by side never share one. A zygote whose thread has ended is free again: the
    next thread takes it (a pool passed from one stage of work to the next, each with
    threads of its own, starts its zygotes once). A new one is started when none is free
    (and again after a thread's zygote was killed).

    Every zygote is started by the pool's own thread, which lives until `close` (the
    kernel kills a zygote when the thread that started it ends: a calling thread may
    end first). `start` zygotes are started at once, so their imports overlap whatever
    the caller does next."""

    def __init__(self, preload: Sequence[str], *, start: int = 0) -> None:
        self.preload = tuple(preload)
        self._local = threading.local()
        self._lock = threading.Lock()
        # zygote -> the thread using it (None: free)
        self._owners: dict[Zygote, threading.Thread | None] = {}
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zygotes")
        self._closed = False
        for zygote in self._start(start):
            self._owners[zygote] = None

    def _start(self, count: int) -> list[Zygote]:
        """`count` new zygotes, started by the pool's thread.

        Raises:
            CheckpointError: ``child_failed`` once the pool is closed.
        """
        preload = self.preload
        try:
            return [self._starter.submit(Zygote, preload).result() for _ in range(count)]
        except RuntimeError:  # the starter was shut down: the pool closed meanwhile
            raise CheckpointError("the zygote pool is closed", code="child_failed") from None

    @property
    def free(self) -> list[Zygote]:
        """The running zygotes no live thread is using."""
        with self._lock:
            return self._free()

    def _free(self) -> list[Zygote]:
        """`free`, with the lock held."""
        return [
            z
            for z, owner in self._owners.items()
            if (owner is None or not owner.is_alive()) and z.alive()
        ]

    def zygote(self) -> Zygote:
        """This thread's zygote: the one it took, a free one, or a new one."""
        current: Zygote | None = getattr(self._local, "zygote", None)
        if current is not None and current.alive():
            return current
        me = threading.current_thread()
        with self._lock:
            if current is not None and self._owners.pop(current, None) is not None:
                current.kill()  # dead meanwhile: reap it and close its pipes
            taken = next(iter(self._free()), None)
            if taken is not None:
                self._owners[taken] = me
        if taken is None:
            (taken,) = self._start(1)
            with self._lock:
                closed = self._closed
                if not closed:
                    self._owners[taken] = me
            if closed:  # closed while it started: it is not the pool's to close
                taken.close()
                raise CheckpointError("the zygote pool is closed", code="child_failed")
        self._local.zygote = taken
        return taken

    def call(self, target: str, payload: bytes, timeout: float, what: str) -> bytes:
        """`Zygote.call` on this thread's zygote."""
        return self.zygote().call(target, payload, timeout, what)

    def close(self) -> None:
        """Stop every zygote; a later call is ``child_failed``."""
        with self._lock:
            self._closed = True
            started, self._owners = list(self._owners), {}
        for zygote in started:
            zygote.close()
        self._starter.shutdown(wait=True)

    def __enter__(self) -> ZygotePool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def call_in_child(
    preload: Sequence[str], target: str, payload: bytes, timeout: float, what: str
) -> bytes:
    """One call in a zygote of its own (started and stopped here): for a caller with no
    pool, at the price of one interpreter start."""
    with ZygotePool(preload) as pool:
        return pool.call(target, payload, timeout, what)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m continuity.zygote",
        description="A pre-imported process forking one child per request (stdin/stdout "
        "frames; see continuity.zygote).",
    )
    parser.add_argument("--parent-pid", type=int, default=None, help="die with this pid")
    parser.add_argument("--preload", default="", help="modules to import first (comma list)")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
    return serve([name for name in args.preload.split(",") if name])


if __name__ == "__main__":
    sys.exit(main())
