"""What the reader had before the probe question, and the evaluator's needle states
over it: availability facts sealed into the sample's evidence."""

from __future__ import annotations

from continuity.memory.retained import RetainedStore
from continuity.messages import ModelRequest, UserMessage
from continuity.probes.availability import ContextText, NeedleState, reference_lookup

__all__ = ["before_probe", "needle_states"]


def before_probe(first: ModelRequest | None) -> list[str]:
    """The texts the reader had before the probe question: the first probe request's
    messages up to the last one before the probe turn (never the question itself)."""
    if first is None:
        return []
    messages = list(first.messages)
    probe_at = max(
        (i for i, m in enumerate(messages) if isinstance(m, UserMessage) and m.source == "probe"),
        default=len(messages),
    )
    return [getattr(m, "text", "") for m in messages[:probe_at]]


def needle_states(
    needles: list[str], first: ModelRequest | None, store: RetainedStore | None
) -> list[NeedleState]:
    """Availability facts for the evaluator's needles: in the reader's context before the
    probe question (after the boundary, before any retrieval; normalised once, matched
    whole-token), and, where a retained store is offered, found by the reference lookup
    path within the lookup budget."""
    if not needles:
        return []
    context = ContextText(before_probe(first))
    states = []
    for needle in needles:
        found = reference_lookup(store, needle) if store is not None else None
        states.append(
            NeedleState(
                in_context=context.holds(needle),
                retrievable=found.retrievable if found is not None else None,
                calls=found.calls if found is not None else 0,
                bytes=found.bytes if found is not None else 0,
            )
        )
    return states
