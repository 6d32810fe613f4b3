"""The documented limits of the plan options, shared by the command line and `build_plan`.

Light on purpose: doit reads them while it parses the command line.
"""

from __future__ import annotations

__all__ = ["MAX_PROBE_LIMIT", "MAX_REPEATS"]

# Repeats per trace and arm: two give a variance signal; a hundred is far past any plan.
MAX_REPEATS = 100
# Probes per trace: a suite has a few dozen at most; the limit only bounds the number.
MAX_PROBE_LIMIT = 10_000
