"""Where a probe's ConversationHistory is served: in the probe child, or, for fault
qualification, in a process of its own.

By default `served_history` is `continuity.servers.history.serve_history`: an MCP
server over the retained store on an ephemeral 127.0.0.1 port, in the probe child's
event loop. When ``CONTINUITY_HISTORY_PROCESS`` names a directory, the same server runs
in a child process instead, one that witnesses its calls (``python -m
continuity.sampling.history_witness``), and its PID, URL and call log are written to
``<dir>/<probe pid>-<server pid>.json`` so that ``doit qualify --case
kill-history-server`` can kill it while a history call is in flight: on the first call
the log shows started (``CONTINUITY_HISTORY_DELAY_MS`` makes each call take that long,
so the kill lands before the answer). Either way the probe's client is the same
recording toolbox: a call the server cannot answer is recorded ``unavailable`` (the
sample ``store_degraded``, `continuity.evidence`), and a probe whose server died under a
call fails with ``tool_server_unavailable``, which a retrieving arm's unit also records
as ``store_degraded`` (`continuity.runner.units.store.failed_result`). The process is
killed when the probe ends.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from continuity.errors import HistoryError
from continuity.memory.retained import RetainedStore

__all__ = ["HISTORY_DELAY_ENV", "HISTORY_PROCESS_ENV", "served_history"]

HISTORY_PROCESS_ENV = "CONTINUITY_HISTORY_PROCESS"
HISTORY_DELAY_ENV = "CONTINUITY_HISTORY_DELAY_MS"  # with it: each call answered that late


@asynccontextmanager
async def served_history(store: RetainedStore) -> AsyncIterator[str]:
    """The MCP URL of ConversationHistory over `store` (module doc).

    Raises:
        HistoryError: ``history_unavailable`` (the store is gone, or the server process
            never listened).
    """
    from continuity.servers.history import ensure_available, serve_history

    folder = os.environ.get(HISTORY_PROCESS_ENV)
    if not folder:
        async with serve_history(store) as url:
            yield url
        return
    ensure_available(store)
    calls = Path(folder) / f"{os.getpid()}-{secrets.token_hex(4)}.calls.jsonl"
    command = [sys.executable, "-m", "continuity.sampling.history_witness"]
    command += ["--store", str(store.path), "--calls", str(calls)]
    delay = os.environ.get(HISTORY_DELAY_ENV, "")
    if delay.isdigit():
        command += ["--delay-ms", delay]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    try:
        line = await anyio.to_thread.run_sync(process.stdout.readline)
        if not line.startswith("listening "):
            raise HistoryError(
                "the ConversationHistory process never listened",
                code="history_unavailable",
                location=str(store.path),
            )
        witness = Path(folder) / f"{os.getpid()}-{process.pid}.json"
        url = line.split()[-1]
        found = {"pid": process.pid, "probe_pid": os.getpid(), "url": url, "calls": str(calls)}
        witness.write_text(json.dumps(found))
        yield url
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
