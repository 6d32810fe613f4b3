"""Checkpoints: a replayed workspace, snapshotted as a content-addressed tree.

A checkpoint's key covers the trace key, the replay configuration and the digest of the
harness code, so a harness change rebuilds checkpoints and a report change does not.
Its workspace lives at a fixed absolute path under the store (``checkpoints/``); the
tool-history sidecar pins that path. A fork restores the pristine snapshot at that same
path and runs its probe in a fresh child process, so the pinned root matches and the
artifact-root guard is never bypassed. Forks of one checkpoint never overlap: each holds
an exclusive lock on the checkpoint for as long as it uses the workspace.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio
import msgspec

from continuity.errors import CheckpointError
from continuity.harness.child import ChildReport
from continuity.harness.keys import ReplayConfig, checkpoint_key, checkpoint_root
from continuity.harness.receipt import ReplayReceipt
from continuity.harness.template import remove_template
from continuity.interrupts import scratch
from continuity.providers.endpoint import RealBinding
from continuity.store import ObjectRef, Store
from continuity.traces.schema import ReplayTrace

if TYPE_CHECKING:
    from continuity.zygote import ZygotePool

__all__ = [
    "CheckpointResult",
    "ChildReport",
    "ReplayDone",
    "ReplayJob",
    "build_checkpoint",
    "checkpoint_lock",
    "clear_workspace",
    "decode_reply",
    "fork",
    "replay_job",
    "run_child",
]


class CheckpointResult(msgspec.Struct, frozen=True):
    trace_id: str
    key: str
    tree: ObjectRef
    root: str
    status: str  # built | cached
    receipt: ReplayReceipt
    # Built here in real mode: the keys of its mid-trace calls replayed from the call
    # cache (its receipt, sealed in the tree, does not say). Also in the checkpoint's
    # action-entry meta; empty when the checkpoint was reused.
    replayed_calls: list[str] = msgspec.field(default_factory=list)
    # The key whose lock guards `root` ("" = this checkpoint's own): a prepared ledger
    # checkpoint lives at its base checkpoint's path, under the base's lock.
    lock: str = ""

    @property
    def lock_key(self) -> str:
        return self.lock or self.key


_Reply = TypeVar("_Reply", bound=msgspec.Struct)


class ReplayJob(msgspec.Struct, frozen=True, kw_only=True):
    """One replay for a zygote's child (`replay_job`)."""

    trace: ReplayTrace
    root: str
    config: ReplayConfig
    trace_digest: str
    tool_server_url: str | None
    read_timeout: float
    real: RealBinding | None


class ReplayDone(msgspec.Struct, frozen=True):
    receipt: ReplayReceipt
    replayed: list[str]


def _replay(job: ReplayJob) -> ReplayDone:
    # Imported here: a process that only reuses checkpoints never loads the replay's
    # MCP, HTTP and server stacks.
    from continuity.harness.replay import replay_trace

    replayed: list[str] = []
    receipt = anyio.run(
        lambda: replay_trace(
            job.trace,
            Path(job.root),
            config=job.config,
            trace_digest=job.trace_digest,
            tool_server_url=job.tool_server_url,
            read_timeout=job.read_timeout,
            summarizer=job.real,
            replayed=replayed,
        )
    )
    return ReplayDone(receipt, replayed)


def replay_job(payload: bytes) -> bytes:
    """A zygote target: the replay of `payload` (a `ReplayJob`), in this forked process,
    so replays in different runner threads never share an interpreter lock."""
    return msgspec.json.encode(_replay(msgspec.json.decode(payload, type=ReplayJob)))


def decode_reply(data: bytes | str, kind: type[_Reply], message: str, location: Path) -> _Reply:
    """A child's reply (or what it printed) decoded into `kind`.

    Raises:
        CheckpointError: ``child_failed`` (``<message>: <why>``, at `location`) when it
            does not decode.
    """
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError as exc:
        raise CheckpointError(
            f"{message}: {exc}", code="child_failed", location=str(location)
        ) from None


def _projection(trace: ReplayTrace) -> ReplayTrace:
    """The replay projection of `trace` (a full `Trace` carries its probes too)."""
    return ReplayTrace(**{name: getattr(trace, name) for name in ReplayTrace.__struct_fields__})


@contextmanager
def checkpoint_lock(store: Store, key: str, *, timeout: float = 600.0) -> Iterator[float]:
    """Hold the checkpoint's exclusive lock; yield how long it took to get it.

    Raises:
        CheckpointError: ``checkpoint_busy`` when the lock is not free within `timeout`.
    """
    folder = store.root / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"checkpoint-{key}.lock"
    started = time.monotonic()
    with open(path, "a+b") as handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() - started > timeout:
                    raise CheckpointError(
                        f"checkpoint {key[:16]} stayed locked for {timeout:.0f}s",
                        code="checkpoint_busy",
                        location=str(path),
                    ) from None
                time.sleep(0.01)
        try:
            yield time.monotonic() - started
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def clear_workspace(root: Path) -> None:
    """Remove the workspace at `root`, and the template a killed unit worker left."""
    if root.exists():
        shutil.rmtree(root)
    remove_template(root)


def build_checkpoint(
    store: Store,
    trace: ReplayTrace,
    *,
    trace_key: str,
    trace_digest: str,
    config: ReplayConfig | None = None,
    tool_server_url: str | None = None,
    read_timeout: float = 30.0,
    real: RealBinding | None = None,
    zygotes: ZygotePool | None = None,
    timeout: float = 3600.0,
) -> CheckpointResult:
    """Replay `trace` and store the pristine workspace, unless the checkpoint exists.

    `real` (real mode, arm (d) only) makes the mid-trace compaction a real summarizer
    call; the checkpoint's key then binds the repeat and the summarizer binding, so each
    repeat has its own checkpoint and its own summary. With `zygotes`, the replay runs
    in a child forked from this thread's zygote (killed after `timeout` seconds), so
    replays in different threads run side by side.

    Raises:
        HarnessError (and subclasses): the replay failed. Nothing is stored and the
            half-written workspace is removed.
    """
    config = config or ReplayConfig()
    key = checkpoint_key(trace_key, config, real)
    entry = store.get_action(key)
    if entry is not None:
        return CheckpointResult(
            trace.trace_id,
            key,
            entry.output,
            str(entry.meta["root"]),
            "cached",
            msgspec.convert(entry.meta["receipt"], ReplayReceipt),
        )
    root = checkpoint_root(store, trace.trace_id, key)
    with checkpoint_lock(store, key):
        clear_workspace(root)  # left behind by a killed build
        started = time.monotonic()
        job = ReplayJob(
            trace=_projection(trace),
            root=str(root),
            config=config,
            trace_digest=trace_digest,
            tool_server_url=tool_server_url,
            read_timeout=read_timeout,
            real=real,
        )
        # An interrupt that ends the process removes the workspace even when this
        # thread never unwinds (`scratch`).
        with scratch(root):
            done = _replayed(job, root, zygotes, timeout)
            seconds = time.monotonic() - started
            tree = store.put_dir(root)
        store.record_action(
            key,
            kind="checkpoint",
            output=tree,
            inputs={"trace": trace_key},
            meta={
                "trace_id": trace.trace_id,
                "root": str(root),
                "receipt": msgspec.to_builtins(done.receipt),
                "replay_seconds": round(seconds, 3),
                # Beside the tree, never in it: differs between two builds of one key.
                "replayed_calls": done.replayed,
            },
        )
    return CheckpointResult(
        trace.trace_id, key, tree, str(root), "built", done.receipt, done.replayed
    )


def _replayed(job: ReplayJob, root: Path, zygotes: ZygotePool | None, timeout: float) -> ReplayDone:
    """Run `job` here or in a zygote's child; any failure, an interrupt too, removes the
    half-written workspace before it propagates."""
    try:
        if zygotes is None:
            return _replay(job)
        reply = zygotes.call(f"{__name__}:replay_job", msgspec.json.encode(job), timeout, "replay")
        return decode_reply(reply, ReplayDone, "the replay child's reply does not decode", root)
    except BaseException:
        clear_workspace(root)
        raise


@contextmanager
def fork(store: Store, key: str, *, timeout: float = 600.0) -> Iterator[Path]:
    """Restore checkpoint `key` (a replayed or a prepared ledger checkpoint) at its
    original path and hold it exclusively (a prepared one under its base's lock).

    Raises:
        CheckpointError: ``checkpoint_missing`` (no verified checkpoint, or a prepared
            one whose preparation was invalid and kept no workspace) or
            ``checkpoint_busy``.
    """
    entry = store.get_action(key)
    usable = entry is not None and (
        entry.kind == "checkpoint"
        or (entry.kind == "ledger-checkpoint" and bool(entry.meta.get("valid")))
    )
    if entry is None or not usable:
        raise CheckpointError(
            f"no verified checkpoint {key[:16]}",
            code="checkpoint_missing",
            location=str(store.action_path(key)),
        )
    root = Path(str(entry.meta["root"]))
    with (
        checkpoint_lock(store, str(entry.meta.get("lock") or key), timeout=timeout),
        scratch(root),  # a restore cut short by an interrupt does not stay
    ):
        clear_workspace(root)
        store.restore_tree(entry.output.digest, root)
        yield root


def run_child(workspace: Path, *, timeout: float = 120.0) -> ChildReport:
    """Open `workspace` in a fresh Python process and return what it saw.

    Raises:
        CheckpointError: ``child_failed`` with the child's exit code and error line.
    """
    command = [sys.executable, "-m", "continuity.harness.child", "--workspace", str(workspace)]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    if result.returncode != 0:
        last = (
            result.stdout.strip().splitlines()
            or result.stderr.strip().splitlines()
            or ["no output"]
        )[-1]
        raise CheckpointError(
            f"child exited {result.returncode}: {last}",
            code="child_failed",
            location=str(workspace),
        )
    return decode_reply(result.stdout, ChildReport, "the child's report does not decode", workspace)
