"""Outside agents (CAP/0): `doit agent_check`, the conformance suite for an adapter
(`continuity.commands.agent_check`). What `doit units --agent` runs is
`continuity.commands.agent_units`."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import OUT, TaskSpec, param

__all__ = ["task_agent_check"]


def _agent_check(**options: Any) -> str:
    from continuity.commands.agent_check import AgentCheckRequest, agent_check

    return agent_check(AgentCheckRequest.of(options))


def task_agent_check() -> TaskSpec:
    """Check an outside agent's CAP/0 adapter: replay, steer, copies, boundaries.

    Drives the adapter (--agent agent.toml) through one original trace offline with the
    model proxy and the fixture MCP server, and reports what it supports; a failed check
    exits 3 (agent_check_failed) after <out>/agent-check/<name>-<digest16>/report.json."""
    return {
        "actions": [task_action(_agent_check)],
        "params": [
            param("agent", str, "", "the adapter manifest (agent.toml)"),
            param("trace", str, "", "the original trace to drive (default brightline-return)"),
            param(
                "no_sandbox",
                bool,
                False,
                "drive the adapter without the bubblewrap sandbox (the report says so)",
            ),
            OUT,
        ],
        "verbosity": 2,
    }
