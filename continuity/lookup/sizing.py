"""A lookup plan's sizing: the frozen policy of the built-in suites, or a holdout's
fixed-budget sizing, read from one file by its schema.

`load_sizing` reads a policy given by path and sha256 (``--policy PATH --policy-sha256
SHA``) as whichever it is: a `LookupPolicy` (``continuity-lookup-budget-v2``, measured
reference paths of the built-in corpus; `continuity.lookup.policy.load_policy`) or a
`FixedBudget` (``continuity-lookup-fixed-budget-v1``, ``budget.json`` of
``doit lookup_budget --fixed-budget-sha256``; `continuity.lookup.fixed_budget`). Each
keeps every check of its own loader. `Sizing.disposition` is a planned slot's class:

- a policy: ``unannotated`` for a probe without a source (it runs with unknown
  provenance), the slot's class for an annotated one, ``unknown`` when never measured;
- a fixed-budget sizing: every slot of the sizing has a class whatever its provenance
  (an identifier's measured reference path, or the full-budget envelope), taken from
  the slot of the run's role, or, without a role, of the first role the sizing binds
  for the arm (``native`` for native-lookup, ``pack`` for continuity-pack-cold); a slot
  the sizing does not list is ``unknown``.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from continuity.inputs import DOCUMENT_MAX_BYTES, read_user_bytes
from continuity.lookup.fixed_budget import (
    FIXED_BUDGET_SCHEMA,
    FixedBudget,
    load_fixed_budget,
    slot_classes,
)
from continuity.lookup.policy import LookupPolicy, default_policy_path, load_policy

__all__ = ["Sizing", "load_sizing", "sizing_file"]


class _Schema(msgspec.Struct):
    schema: str = ""


class Sizing:
    """A loaded sizing and what a run asks of it (see the module doc)."""

    def __init__(self, policy: LookupPolicy | FixedBudget, role: str | None = None) -> None:
        self.policy = policy
        self.role = role
        self._classes = slot_classes(policy) if isinstance(policy, FixedBudget) else {}

    @property
    def fixed(self) -> FixedBudget | None:
        return self.policy if isinstance(self.policy, FixedBudget) else None

    @property
    def calls(self) -> int:
        return self.policy.calls

    @property
    def bytes(self) -> int:
        return self.policy.bytes

    def role_for(self, arm: str) -> str | None:
        """The role whose slots a run of `arm` takes (fixed budgets only)."""
        if self.role is not None or self.fixed is None:
            return self.role
        return next((r.name for r in self.fixed.roles if r.arm == arm), None)

    def disposition(self, trace_id: str, arm: str, probe_id: str, annotated: bool) -> str:
        if isinstance(self.policy, LookupPolicy):
            return self.policy.disposition(trace_id, arm, probe_id, annotated)
        role = self.role_for(arm)
        return self._classes.get((role or "", trace_id, probe_id), "unknown")


def load_sizing(path: Path | None, sha256: str | None, *, role: str | None = None) -> Sizing:
    """The sizing at `path` (None: the frozen policy of the current probe protocol),
    whose raw bytes must hash to `sha256`.

    Raises:
        LookupError_: every code of `load_policy` or `load_fixed_budget`.
    """
    if path is None:
        return Sizing(load_policy(None, None), role)
    try:
        data = read_user_bytes(path, limit=DOCUMENT_MAX_BYTES, what="the sizing")
        head = msgspec.json.decode(data, type=_Schema)
    except (OSError, msgspec.MsgspecError):
        head = _Schema()  # the loader reads it again and says what is wrong
    if head.schema == FIXED_BUDGET_SCHEMA:
        return Sizing(load_fixed_budget(path, sha256), role)
    return Sizing(load_policy(path, sha256), role)


def sizing_file(path: Path | None) -> Path:
    """The file a sizing was read from (the frozen policy's when `path` is None)."""
    return path or default_policy_path()
