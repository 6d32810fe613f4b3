"""A preparation child for the crash-recovery tests (``python -m
tests.spend.sleepy_preparer``): it reads its request like the real one, starts one
descendant in its own process group, writes both PIDs and start identities to
``<root>/sleepy.json`` and sleeps (120 s at most, so nothing outlives a failed test
for long)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from continuity.spend.lease import process_start
from continuity.spend.preparation import PreparationRequest


def main() -> int:
    request = msgspec.json.decode(sys.stdin.buffer.read(), type=PreparationRequest)
    descendant = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    marker = Path(request.root) / "sleepy.json"
    found = {
        "leader": [os.getpid(), process_start(os.getpid())],
        "descendant": [descendant.pid, process_start(descendant.pid)],
    }
    marker.with_suffix(".tmp").write_text(json.dumps(found))
    marker.with_suffix(".tmp").rename(marker)  # whole, once
    time.sleep(120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
