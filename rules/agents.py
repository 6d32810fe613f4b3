"""Outside agents (CAP/0): `doit agent_check`, the conformance suite for an adapter
(`continuity.agents.check`). What `doit units --agent` runs is
`continuity.commands.agent_units`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from continuity.graph import task_action
from rules.params import OUT, TaskSpec, param

__all__ = ["task_agent_check"]


def _agent_check(**options: Any) -> str:

    from continuity.agents.check import check_agent
    from continuity.agents.manifest import load_manifest
    from continuity.agents.sandbox import require_sandbox
    from continuity.errors import UsageError
    from continuity.outputs import resolve_out_path
    from continuity.store import Store, resolve_store_path
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    if not options.get("agent"):
        raise UsageError(
            "--agent agent.toml is required", code="agent_required", location="--agent"
        )
    manifest = load_manifest(Path(options["agent"]))
    sandboxed = not options.get("no_sandbox")
    if sandboxed:
        require_sandbox("--agent")
    out = Path(resolve_out_path(options.get("out") or None))
    store = Store(resolve_store_path())
    suite = build_suite(store, "original", out_dir=out / "traces")
    wanted = options.get("trace") or "brightline-return"
    found = [i for i in suite.items if i.trace_id == wanted]
    if not found:
        raise UsageError(f"no original trace {wanted}", code="trace_unknown", location="--trace")
    trace = load_trace(store.get_blob(found[0].digest), source=wanted)
    report = check_agent(manifest, trace, out, sandboxed=sandboxed)
    isolation = "" if sandboxed else " (UNSANDBOXED: --no-sandbox)"
    return (
        f"agent_check: {report.agent}: every check passed{isolation}; report under "
        f"{out / 'agent-check'}"
    )


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
