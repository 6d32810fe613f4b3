"""``python -m continuity.harness.child --workspace PATH``: reopen a workspace in a fresh
process and print what it sees as JSON (the probe child's first duty)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import msgspec

from continuity.digest import value_digest
from continuity.errors import ContinuityError
from continuity.harness.workspace import Workspace
from continuity.store import utc_now

__all__ = ["ChildReport", "main"]


class ChildReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a fresh child process saw in a restored workspace (content-free)."""

    pid: int
    workspace: str
    session_id: str
    entries: int
    context_messages: int
    context_digest: str
    current_model: list[str] | None
    history_records: int
    tool_history_status: str
    tool_history_warnings: list[str]
    tool_records_visible: int
    tool_records_on_disk: int
    trace_id: str


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m continuity.harness.child")
    parser.add_argument("--workspace", type=Path, required=True)
    args = parser.parse_args(argv)
    workspace = Workspace(args.workspace.absolute())
    try:
        session, history, tools = workspace.open(clock=utc_now)
    except ContinuityError as exc:
        print(f"error {exc}")
        return 3
    try:
        receipt = msgspec.json.decode(workspace.receipt_path.read_bytes())
        context = session.context()
        model = session.current_model()
        report = ChildReport(
            pid=os.getpid(),
            workspace=str(workspace.root),
            session_id=session.header.session_id,
            entries=len(session.entries),
            context_messages=len(context),
            context_digest=value_digest(context),
            current_model=list(model) if model else None,
            history_records=len(history.records),
            tool_history_status=tools.status,
            tool_history_warnings=tools.warnings,
            tool_records_visible=len(tools.records()),
            tool_records_on_disk=tools.record_count,
            trace_id=str(receipt.get("trace_id", "")),
        )
    finally:
        session.close()
        history.close()
    sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
