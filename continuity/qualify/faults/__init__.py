"""The fault cases: each runs a real offline workload and injects one fault.

Every case writes its receipts into the attempt's ``work/`` as it goes
(`continuity.qualify.receipts`): ``fault-before.json`` once the fault is aimed at a live
process, ``fault-after.json`` once the loss is confirmed, the hold held and the
recovery started, ``fault-final.json`` when the recovery ends. The configured interval
is a minimum hold after the loss is confirmed. Nothing retries automatically: the
recovery is the one action the case names.

- `kill_runner`: ``doit units`` over four original traces and four arms, in a private
  store and output, in a process group of its own; once the knobs' ``at_unit``-th unit
  (default the fourth) is built the whole group is killed with the configured signal,
  the loss is confirmed when the group has no member left, and after the hold the same
  command runs again. Every unit is attributed by its key in the run's store: a unit
  the killed run finished must come back as the same bytes (an identical redelivery);
  ``doit verify`` then checks the store holds nothing corrupt or half-written.
- `kill_tool_server`: the checkpoint replay of one original trace against the MCP
  fixture tool server in a process of its own, slowed so that a call is in flight; the
  server is killed once its log shows the call, the loss is confirmed by a refused
  connection to its port, the replay must fail with ``tool_server_unavailable``, and
  after the hold a new server is started and the replay run again.
- `kill_history_server`: a store arm probe's ConversationHistory process is killed; its
  sample must be ``store_degraded`` and the unit finishes.
- `drop_endpoint` (``endpoint.py``): a real-mode run's loopback endpoint stops
  mid-stream; the run stops with ``run_incomplete`` and a rerun sends only the lost call.
- `steer_across_restart` (``steer.py``): a live session's harness is killed while a
  steer is queued; a second steer is queued while it is down; the restarted harness
  delivers both exactly once.
- `upgrade_aba` (``upgrade.py``): builds A, B, A fill one run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from continuity.qualify.cases import Knobs
from continuity.qualify.faults.common import FaultRun
from continuity.qualify.faults.endpoint import drop_endpoint
from continuity.qualify.faults.runner import kill_runner
from continuity.qualify.faults.servers import kill_history_server, kill_tool_server
from continuity.qualify.faults.steer import steer_across_restart
from continuity.qualify.faults.upgrade import upgrade_aba

__all__ = [
    "FAULTS",
    "FaultRun",
    "drop_endpoint",
    "kill_history_server",
    "kill_runner",
    "kill_tool_server",
    "steer_across_restart",
    "upgrade_aba",
]

FAULTS: dict[str, Callable[[Path, Knobs, str], FaultRun]] = {
    "kill-runner": kill_runner,
    "kill-runner-long-hold": kill_runner,
    "kill-tool-server": kill_tool_server,
    "upgrade-aba": upgrade_aba,
    "kill-history-server": kill_history_server,
    "drop-endpoint": drop_endpoint,
    "steer-across-restart": steer_across_restart,
}
