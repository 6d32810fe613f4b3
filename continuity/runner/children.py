"""Child processes that take their request on stdin: the unit worker and the probe child
(forked from a zygote, whose preload is named here), and the checkpoint sample's child.

A request can hold evaluator-only values (the probe's needles), so it never goes
through a file: a killed run leaves nothing of it on disk.
"""

from __future__ import annotations

import subprocess

from continuity.errors import CheckpointError

__all__ = ["PROBE_TARGET", "ZYGOTE_PRELOAD", "run_child"]

# What a runner thread's zygote (`continuity.zygote`) imports: every module a unit's
# worker, its probe children and a checkpoint replay use
# (`continuity.sampling.worker.warm_zygote`). Named here, so the runner never imports them.
ZYGOTE_PRELOAD = ("continuity.sampling.worker:warm_zygote",)
# The probe child as a zygote's target (`continuity.sampling.child.probe_target`): an
# arm sample's probe, forked from a zygote of that preload.
PROBE_TARGET = "continuity.sampling.child:probe_target"


def run_child(
    argv: list[str], payload: bytes, timeout: float, what: str, location: str = "-"
) -> tuple[int, bytes]:
    """Run `argv` with `payload` on its stdin (never through a file: it can hold
    evaluator-only values, and a killed run must leave nothing of it on disk); return
    its pid and stdout.

    Raises:
        CheckpointError: ``child_failed`` when it exits non-zero (with the last line it
            printed) or runs past `timeout` (it is killed).
    """
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as child:
        try:
            out, err = child.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise CheckpointError(
                f"{what} ran past its {timeout:.0f} s timeout and was killed",
                code="child_failed",
                location=location,
            ) from None
    if child.returncode != 0:
        lines = (
            out.decode(errors="replace").strip().splitlines()
            or err.decode(errors="replace").strip().splitlines()
            or ["no output"]
        )
        raise CheckpointError(
            f"{what} exited {child.returncode}: {lines[-1]}", code="child_failed", location=location
        )
    return child.pid, out
