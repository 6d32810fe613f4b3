"""The offline preparation child of one preflight slot (``doit compare_preflight``).

``python -m continuity.runner.preflight.child --parent-pid PID`` reads one
`PreparationRequest` on stdin and prepares the workspace a lookup probe of the slot
would fork from, with the production code of whatever checkout runs it (a registered
build's venv, or this checkout): it builds the slot's trace (its suite's, or the frozen
trace the request carries), replays it into a lookup checkpoint for the slot's arm and
reader binding (`continuity.arms.replay_config_for` in lookup mode, the replay in a
child forked from a zygote: `continuity.harness.checkpoints.build_checkpoint`), records
the modes of the snapshot's entries, and installs the slot's frozen soul in the
workspace as a probe would (`continuity.lookup.soul.install_soul`). The store and the
workspace live in the private root the request names; the parent removes it.

It writes one `PreparationReply` (JSON) on stdout: `Prepared`, or `PreparationFailed`
with the code, message and location of what stopped it. It never runs a probe or a
model, and reads no credential.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import msgspec

from continuity.errors import CheckpointError, ContinuityError, UsageError, typed_error
from continuity.parent_death import die_with_parent
from continuity.runner.preflight.tree import tree_modes
from continuity.store import Store

__all__ = [
    "REQUEST_SCHEMA",
    "PreparationFailed",
    "PreparationReply",
    "PreparationRequest",
    "Prepared",
    "TraceInput",
    "main",
    "prepare",
]

REQUEST_SCHEMA = "continuity-lookup-preflight-request-v1"


class TraceInput(msgspec.Struct, frozen=True, kw_only=True):
    """A trace handed to the preparation (a frozen holdout trace): its key, its digest
    (blake3 of `data`) and its bytes."""

    key: str
    digest: str
    data: bytes


class PreparationRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One slot's preparation.

    Attributes:
        root: the private root (``store/`` and ``out/`` are made below it).
        arm: a lookup arm; reader_binding: a scripted reader binding's name.
        soul: the frozen soul's file name (`continuity.lookup.soul.KNOWN_SOULS`).
        suite, trace_id: the slot's trace; built from the suite by this child's code
            unless `trace` carries it.
        timeout: the replay child's watchdog, in seconds.
    """

    schema: str = REQUEST_SCHEMA
    root: str
    arm: str
    reader_binding: str
    soul: str
    suite: str
    trace_id: str
    trace: TraceInput | None = None
    timeout: float


class Prepared(msgspec.Struct, frozen=True, kw_only=True, tag="prepared"):
    """A prepared workspace: the checkpoint (key, stored tree, workspace path), the
    trace it replayed, the soul installed, the snapshot's modes and the replay time."""

    checkpoint: str
    tree: str
    root: str
    trace_key: str
    trace_digest: str
    soul_sha256: str
    soul_core_sha256: str
    modes: dict[str, int]
    replay_seconds: float


class PreparationFailed(msgspec.Struct, frozen=True, kw_only=True, tag="failed"):
    """What stopped the preparation: its code, message and location."""

    code: str
    message: str
    location: str = "-"


PreparationReply = Prepared | PreparationFailed


def _trace(store: Store, request: PreparationRequest, out: Path) -> tuple[str, str, bytes]:
    """The slot's trace: its key, digest and bytes (stored in `store`).

    Raises:
        UsageError: ``trace_unknown`` when the suite has no such trace.
        CheckpointError: ``lookup_preparation_invalid`` when a given trace's bytes are
            not its digest.
    """
    from continuity.digest import digest_bytes
    from continuity.traces.suites import build_suite

    if request.trace is not None:
        given = request.trace
        if digest_bytes(given.data) != given.digest:
            raise CheckpointError(
                "the trace's bytes do not hash to its digest",
                code="lookup_preparation_invalid",
                location=request.trace_id,
            )
        store.put_blob(given.data)
        return given.key, given.digest, given.data
    suite = build_suite(store, request.suite, out_dir=out)
    for item in suite.items:
        if item.trace_id == request.trace_id:
            return item.key, item.digest, store.get_blob(item.digest)
    raise UsageError(
        f"suite {request.suite} has no trace {request.trace_id!r}",
        code="trace_unknown",
        location=f"{request.suite} {request.trace_id}",
    )


def prepare(request: PreparationRequest) -> Prepared:
    """Replay the slot's trace into its lookup checkpoint and install its soul.

    Raises:
        ContinuityError: what stopped it (an unknown arm, binding, trace or soul, a
            replay failure, a soul that does not match its pins).
    """
    from continuity.arms import replay_config_for, resolve_arms
    from continuity.harness.checkpoints import build_checkpoint
    from continuity.lookup.reader import binding_models
    from continuity.lookup.soul import install_soul, read_known_soul
    from continuity.runner.children import ZYGOTE_PRELOAD
    from continuity.traces.validate import load_trace
    from continuity.zygote import ZygotePool

    root = Path(request.root)
    store = Store(root / "store")
    (arm,) = resolve_arms([request.arm], probe_mode="lookup-allowed-v1")
    models = binding_models(request.reader_binding)
    pinned = read_known_soul(request.soul)
    key, digest, data = _trace(store, request, root / "out")
    trace = load_trace(data, source=request.trace_id)
    config = replay_config_for(arm, "lookup-allowed-v1", models)
    started = time.monotonic()
    with ZygotePool(ZYGOTE_PRELOAD) as zygotes:
        checkpoint = build_checkpoint(
            store,
            trace,
            trace_key=key,
            trace_digest=digest,
            config=config,
            zygotes=zygotes,
            timeout=request.timeout,
        )
    seconds = time.monotonic() - started
    workspace = Path(checkpoint.root)
    modes = tree_modes(workspace)  # the snapshot's, before the probe's soul is added
    soul = install_soul(workspace, pinned.sha256, pinned.core_sha256)
    return Prepared(
        checkpoint=checkpoint.key,
        tree=checkpoint.tree.digest,
        root=checkpoint.root,
        trace_key=key,
        trace_digest=digest,
        soul_sha256=soul.sha256,
        soul_core_sha256=soul.core_sha256,
        modes=modes,
        replay_seconds=round(seconds, 3),
    )


def _decode(data: bytes) -> PreparationRequest:
    """Raises: CheckpointError ``lookup_preparation_invalid`` for anything but a request of
    `REQUEST_SCHEMA`."""
    try:
        request = msgspec.json.decode(data, type=PreparationRequest)
    except msgspec.MsgspecError as exc:
        raise CheckpointError(
            f"the preparation request does not decode: {exc}",
            code="lookup_preparation_invalid",
            location="stdin",
        ) from None
    if request.schema != REQUEST_SCHEMA:
        raise CheckpointError(
            f"preparation request schema {request.schema[:60]!r}, not {REQUEST_SCHEMA}",
            code="lookup_preparation_invalid",
            location="stdin",
        )
    return request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m continuity.runner.preflight.child",
        description="Prepare one preflight slot; the request (JSON) is read on stdin.",
    )
    parser.add_argument("--parent-pid", type=int, default=None, help="die with this pid")
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # whatever the preparation prints never lands in the reply
    reply: PreparationReply
    try:
        reply = prepare(_decode(sys.stdin.buffer.read()))
    except Exception as exc:  # reported to the parent, whatever it was
        typed: ContinuityError | None = typed_error(exc)
        reply = (
            PreparationFailed(code=typed.code, message=typed.message, location=typed.location)
            if typed is not None
            else PreparationFailed(code="child_failed", message=f"{type(exc).__name__}: {exc}")
        )
    with os.fdopen(reply_fd, "wb") as out:
        out.write(msgspec.json.encode(reply))
    return 0 if isinstance(reply, Prepared) else 1


if __name__ == "__main__":
    sys.exit(main())
