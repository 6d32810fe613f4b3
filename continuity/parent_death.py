"""Child processes that die with their parent, so a SIGKILLed run leaves none behind.

A process killed with SIGKILL cannot stop its children: the unit worker it started,
and the probe child the worker forked, would run on as orphans (holding evaluator-only
values in memory, and working for nobody). `die_with_parent` asks the Linux kernel
(``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to SIGKILL the calling process when its parent
dies, then closes the race with a parent that died before the request: if the process
has already been handed to another parent, it kills itself at once, as the kernel
would have. Elsewhere (no ``prctl``) it does nothing.

The kernel's "parent" is the *thread* that started the process, so start such a child
from a thread that outlives it (the runner's unit threads wait for their worker).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["PR_SET_PDEATHSIG", "die_with_parent"]

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> bool:
    """Have the kernel SIGKILL this process when its parent, `parent` (a pid), dies.

    Returns True when the kernel will, False where it cannot (not Linux, or ``prctl``
    refused). When `parent` is no longer this process's parent (it died before the
    request took effect), SIGKILLs this process: it never returns."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return True
