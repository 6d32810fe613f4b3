"""Launching a preflight slot's preparation child, and containing it.

`private_root` makes the slot's private root (``tempfile.mkdtemp``: mode 0700) and
refuses a temporary directory inside the checkout or the user's store.
`launch_preparation` runs the slot's code there (``-m continuity.runner.preflight.child``)
with the request on stdin, in a session of its own, with an environment it is given,
not one it inherits: PATH, a HOME inside the private root, the private store and output
(no ``CI``, no credential, no ``PYTHON*`` variable). Whatever happens (a reply, a
failure, the watchdog, an interrupt), it returns only once nothing of the child's
process group runs: the zygote and the replay the child forked die with it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from continuity.errors import UsageError
from continuity.processes import ANY_OS_ERROR, ZOMBIE, group_alive, kill_group
from continuity.runner.preflight.child import PreparationReply, PreparationRequest
from continuity.runner.preflight.records import PreflightSlot, SlotFailure

__all__ = ["PRIVATE_PREFIX", "launch_preparation", "private_root"]

PRIVATE_PREFIX = "continuity-preflight-"
_GROUP_GRACE = 5.0  # seconds a finished child's group may take to go


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def private_root(forbidden: Sequence[Path]) -> Path:
    """A new private directory (mode 0700) under the system's temporary directory.

    Raises:
        UsageError: ``lookup_preflight_root_invalid`` (nothing is created) when that
            directory resolves inside one of `forbidden` (the checkout, the user's
            store): set ``TMPDIR`` elsewhere.
    """
    base = Path(os.path.realpath(tempfile.gettempdir()))
    for root in forbidden:
        resolved = Path(os.path.realpath(root))
        if _inside(base, resolved):
            raise UsageError(
                f"the temporary directory {base} lies inside {resolved}; preflight's private "
                "roots must be outside the checkout and the store (set TMPDIR elsewhere)",
                code="lookup_preflight_root_invalid",
                location=str(base),
            )
    return Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX, dir=base))


def _contain(child: subprocess.Popen[bytes]) -> None:
    """Kill the child's process group if it still runs, reap the child and wait until
    nothing of its group runs (the zygote and replay it started die with it): a grace
    period, then SIGKILL to the group and a second one (a process stuck in the kernel
    is left to it)."""
    if child.poll() is None:
        kill_group(child.pid, tolerate=ANY_OS_ERROR)
    child.wait()
    for last in (False, True):
        deadline = time.monotonic() + _GROUP_GRACE
        while group_alive(child.pid, gone=ZOMBIE) and time.monotonic() < deadline:
            time.sleep(0.02)
        if last or not group_alive(child.pid, gone=ZOMBIE):
            return
        kill_group(child.pid, tolerate=ANY_OS_ERROR)


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1][:300] if lines else "no output"


def launch_preparation(
    slot: PreflightSlot, root: Path, watchdog: float
) -> PreparationReply | SlotFailure:
    """Run the slot's preparation child in `root`; its reply, or the failure that
    stopped it (``preparation_watchdog``, ``preparation_failed``). Returns only once
    the child's process group is gone."""
    request = PreparationRequest(
        root=str(root),
        arm=slot.arm,
        reader_binding=slot.reader_binding,
        soul=slot.soul,
        suite=slot.suite,
        trace_id=slot.trace_id,
        trace=slot.trace,
        timeout=watchdog,
    )
    (root / "home").mkdir(mode=0o700)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(root / "home"),
        "CONTINUITY_STORE": str(root / "store"),
        "CONTINUITY_OUT": str(root / "out"),
        "PYTHONDONTWRITEBYTECODE": "1",
        **slot.code.env,
    }
    command = [*slot.code.command, "-m", slot.code.module, "--parent-pid", str(os.getpid())]
    try:  # its own session: the watchdog and the containment stop its whole group
        child = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=root,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:  # the registered interpreter is gone, say
        return SlotFailure(
            kind="preparation_failed",
            message=f"cannot start {command[0]}: {exc.strerror or type(exc).__name__}",
        )
    with child:
        try:
            out, err = child.communicate(msgspec.json.encode(request), timeout=watchdog)
        except subprocess.TimeoutExpired:
            return SlotFailure(
                kind="preparation_watchdog",
                message=f"the preparation ran past its {watchdog:g} s watchdog and was killed",
            )
        finally:
            _contain(child)
    try:
        return msgspec.json.decode(out, type=PreparationReply)
    except msgspec.MsgspecError:
        return SlotFailure(
            kind="preparation_failed",
            message=f"the preparation child exited {child.returncode} without a reply: "
            + _last_line(err),
        )
