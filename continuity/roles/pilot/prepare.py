"""A registered pilot's preparation child: one slot's boundary crossed over its real
checkpoint, offline and credential-free.

``python -m continuity.roles.pilot.prepare`` is the preparer a registered pilot names
(`continuity.spend.schedule.PilotConfig.preparer`). The controller launches it for
every slot in a session of its own, with every secret-looking variable removed from its
environment and no credentials path, and hands it a
`continuity.spend.preparation.PreparationRequest` on stdin whose ``source`` is a
`CheckpointSource`. It:

1. restores the slot's checkpoint (built before the pilot by
   `continuity.harness.checkpoints.build_checkpoint` into the pilot's private
   preparation store) at its original path, exclusively
   (`continuity.harness.checkpoints.fork`);
2. installs the role's frozen soul and crosses the arm's boundary exactly as a lookup
   probe does (`continuity.sampling.boundary`): ``native-lookup`` keeps the native
   session, ``continuity-pack-cold`` reseeds on a model change and injects the
   continuity pack built from the retained records. A compaction the arm's policy
   would make uses the scripted summarizer: no model is ever called;
3. writes the `PreparedBoundary` (the role's system prompt and the messages the
   reader sees before the probe's question) with
   `continuity.spend.preparation.write_boundary`.

It exits 0 once the boundary is written; anything else (exit 3, the code on stderr)
stops the pilot before the slot's probe child starts (``lookup_preparation_invalid``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import msgspec

from continuity.errors import ContinuityError
from continuity.spend.preparation import PreparationRequest, PreparedBoundary, write_boundary

__all__ = ["CheckpointSource", "crossed_boundary", "main"]


class CheckpointSource(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A slot's boundary source: the preparation store and checkpoint key, the arm, the
    role's soul pins, the reader binding's models and the lookup budget."""

    store: str
    checkpoint: str
    arm: str
    soul_sha256: str
    soul_core_sha256: str
    models: tuple[str, str]
    call_budget: int
    byte_budget: int


def crossed_boundary(source: CheckpointSource) -> PreparedBoundary:
    """Cross `source`'s boundary over its restored checkpoint (module doc, 1-2).

    Raises:
        ContinuityError: the checkpoint's (``checkpoint_missing``, ``checkpoint_busy``),
            the soul's and the crossing's codes.
    """
    from continuity.harness.checkpoints import fork
    from continuity.harness.workspace import Workspace
    from continuity.lookup.receipts import LookupBinding
    from continuity.providers.scripted import ScriptedSummarizer
    from continuity.sampling.boundary import cross_boundary, probe_setup, restore
    from continuity.sampling.receipts import ProbeRequest
    from continuity.store import Store

    lookup = LookupBinding(
        call_budget=source.call_budget,
        byte_budget=source.byte_budget,
        soul_sha256=source.soul_sha256,
        soul_core_sha256=source.soul_core_sha256,
        models=source.models,
    )
    request = ProbeRequest(arm=source.arm, probe_text="", parent_pid=os.getpid(), lookup=lookup)
    with fork(Store(Path(source.store)), source.checkpoint) as root:
        workspace = Workspace(root)
        setup = probe_setup(workspace, request, None)
        restored = restore(workspace)
        try:
            summarizer = ScriptedSummarizer(name=setup.reader_provider, model=setup.reader_model)
            crossing = anyio.run(cross_boundary, setup, restored, workspace, summarizer)
            messages = [*crossing.injected, *restored.session.context()]
        finally:
            restored.close()
    return PreparedBoundary(system=setup.system, messages=messages)


def main() -> int:
    try:
        request = msgspec.json.decode(sys.stdin.buffer.read(), type=PreparationRequest)
        source = msgspec.json.decode(request.source, type=CheckpointSource)
        if source.arm != request.arm:
            print("lookup_preparation_invalid: the source is another arm's", file=sys.stderr)
            return 3
        write_boundary(Path(request.root), request.slot_id, crossed_boundary(source))
    except msgspec.MsgspecError as exc:
        print(f"lookup_preparation_invalid: {exc}", file=sys.stderr)
        return 3
    except ContinuityError as error:
        print(f"{error.code}: {error.location}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
