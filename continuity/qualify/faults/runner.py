"""The kill-runner case (`continuity.qualify.faults`)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from continuity.qualify.cases import Knobs
from continuity.qualify.faults.common import (
    _REPO,
    _RUNNER_UNITS,
    FaultRun,
    _doit,
    _kill_group,
    _sha256,
    _start,
    _stored_units,
    _unexercised,
    _units,
    _units_command,
    write_after,
)
from continuity.qualify.receipts import (
    FINAL,
    Delivery,
    FaultFinal,
    Loss,
    write_receipt,
)

__all__ = ["kill_runner"]


def kill_runner(work: Path, knobs: Knobs, case_id: str) -> FaultRun:
    """The kill-runner case (module doc)."""
    run = FaultRun()
    env = {
        **os.environ,
        "CONTINUITY_STORE": str(work / "store"),
        "CONTINUITY_OUT": str(work / "out"),
    }
    started = time.monotonic()
    process, target = _start(_units_command(), env)
    assert process.stdout is not None
    aimed = False
    marker = f"[{knobs.at_unit}/{_RUNNER_UNITS}]"  # that unit is built, the next under way
    for line in process.stdout:
        if marker in line:
            aimed = True
            break
    if not aimed:  # it ended before the fault could be aimed: unexercised
        process.wait(60)
        process.stdout.close()
        _unexercised(work, process.returncode == 0)
        return run
    confirmed = _kill_group(work, knobs, case_id, run, (process.pid, target), started, "runner")
    process.wait(10)
    process.stdout.close()
    first = _stored_units(work)  # what the killed run delivered (units are keyed)
    time.sleep(knobs.interval_s)
    again, restarted = _start(_units_command(), env)
    hold = time.monotonic() - confirmed
    loss = Loss(kind="group_gone", observed="runner group")
    write_after(work, knobs, target, loss, hold, "rerun the same command", restarted)
    again.communicate(timeout=600)
    run.timings["hold"] = hold
    run.timings["recovery"] = time.monotonic() - confirmed - hold
    units = _units(work)
    deliveries = [Delivery(kind="unit", id=k, sha256=d) for k, d in first.items()]
    deliveries += [Delivery(kind="unit", id=k, sha256=d) for k, d in _stored_units(work).items()]
    completed = again.returncode == 0 and len(units) == _RUNNER_UNITS
    verify = subprocess.run(
        _doit("verify"),
        cwd=_REPO,
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )
    final = FaultFinal(
        completed=completed,
        code=None,
        affected={n: _sha256(p) for n, p in units.items()},
        deliveries=deliveries,
        store_verified=verify.returncode == 0,  # nothing corrupt or half-written
    )
    write_receipt(work, FINAL, final)
    run.affected = units
    return run
