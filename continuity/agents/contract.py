"""The offline contract's outside-agent pass (CAP/0 v0).

The toy reference adapter (``examples/agents/toy``, beside the package in a checkout)
is driven over the four original traces under the arms ``native``, ``restart`` and
``new_session``, one probe each, offline (a reader that answers ``UNKNOWN``, no
credentials). Every sample must be ``valid``: its replay clean, its boundary
``verified`` from observations, and its copy proven (every sample of a trace has the
trace's first replay signature); and the summary must open with the black-box banner.
Anything else is ``agent_contract_failed``, naming the samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from continuity.agents.drive import ARMS
from continuity.agents.manifest import load_manifest
from continuity.agents.units import run_agent_units
from continuity.errors import ContinuityError
from continuity.traces.schema import Trace

__all__ = ["TOY_MANIFEST", "check_outside_agent"]

TOY_MANIFEST = Path(__file__).resolve().parents[2] / "examples" / "agents" / "toy" / "agent.toml"


def check_outside_agent(traces: Sequence[Trace], folder: Path) -> str:
    """Run the pass (module doc); the contract's sentence for it.

    Raises:
        ContinuityError: ``agent_contract_failed``.
    """
    if not TOY_MANIFEST.is_file():
        return "skipped: no examples/agents/toy beside the package (not a checkout)"
    manifest = load_manifest(TOY_MANIFEST)
    samples = run_agent_units(manifest, traces, ARMS, 1, folder)
    bad = [f"{s.trace_id}/{s.arm}/{s.probe_id} {s.status}" for s in samples if s.status != "valid"]
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    if bad or "**External agent.**" not in summary or not samples:
        raise ContinuityError(
            f"{len(bad)} of {len(samples)} outside-agent samples not valid: {', '.join(bad[:6])}",
            code="agent_contract_failed",
            location=str(folder / "summary.md"),
        )
    signatures = len({s.signature for s in samples})
    return (
        f"the toy outside agent over CAP/0: {len(samples)} samples ({len(traces)} originals x "
        f"{', '.join(ARMS)}), each a fresh re-replay through the model proxy and the fixture "
        f"MCP server: every boundary verified by traffic, every copy proven ({signatures} "
        f"replay signatures, one per trace), the summary under its black-box banner"
    )
