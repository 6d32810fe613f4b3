"""``doit agent_check``: the CAP/0 conformance suite for an outside agent's adapter
(`continuity.agents.check`), driven through one original trace."""

from __future__ import annotations

from continuity.errors import UsageError
from continuity.requests import Request

__all__ = ["AgentCheckRequest", "agent_check"]


class AgentCheckRequest(Request, frozen=True, kw_only=True):
    """`doit agent_check`: the adapter manifest (``agent``, required), the original
    trace to drive ("": ``brightline-return``) and whether to drive it without the
    bubblewrap sandbox."""

    agent: str = ""
    trace: str = ""
    no_sandbox: bool = False


def agent_check(request: AgentCheckRequest) -> str:
    """Check the adapter against the trace offline and write its report under
    ``<out>/agent-check/``; the summary says every check passed (and whether unsandboxed).

    Raises:
        UsageError: ``agent_required`` (no ``--agent``), ``trace_unknown`` (no such
            original trace).
        AdapterError: ``agent_manifest_invalid``; ``sandbox_unavailable`` (sandboxed).
        GateFailed: ``agent_check_failed`` (after the report is written).
    """
    from pathlib import Path

    from continuity.agents.check import check_agent
    from continuity.agents.manifest import load_manifest
    from continuity.agents.sandbox import require_sandbox
    from continuity.outputs import resolve_out_path
    from continuity.store import Store, resolve_store_path
    from continuity.traces.suites import build_suite
    from continuity.traces.validate import load_trace

    if not request.agent:
        raise UsageError(
            "--agent agent.toml is required", code="agent_required", location="--agent"
        )
    manifest = load_manifest(Path(request.agent))
    sandboxed = not request.no_sandbox
    if sandboxed:
        require_sandbox("--agent")
    out = Path(resolve_out_path(request.out or None))
    store = Store(resolve_store_path())
    suite = build_suite(store, "original", out_dir=out / "traces")
    wanted = request.trace or "brightline-return"
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
