"""The six comparison roles: which arm, which code and which frozen soul each runs.

A role is a fixed (arm, code, soul) triple, never a mix chosen at run time. ``code`` says
which checkout runs it: ``R0`` (this revision with the frozen guidance patch reversed)
or ``Rpack`` (this revision, whose pack renderer carries the retrieval guidance).
``soul`` names a row of `continuity.lookup.soul.KNOWN_SOULS`: S0 is the soul the frozen
sizing policy was measured with, S1 adds ConversationHistory routing guidance (its
feasibility is not re-measured: the frozen budget and reference classes are reused).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from continuity.errors import UsageError
from continuity.lookup.soul import SOUL_NAME

__all__ = ["ROLES", "SOULS", "Role", "role_named"]

# The soul names a role may bind, by their short label (S0 and S1).
SOULS: dict[str, str] = {"S0": SOUL_NAME, "S1": "continuity-soul-v2.md"}


class Role(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One role: its name, the lookup arm it runs, the checkout it runs in and its soul."""

    name: str
    arm: Literal["native-lookup", "continuity-pack-cold"]
    code: Literal["R0", "Rpack"]
    soul: Literal["S0", "S1"]

    @property
    def soul_file(self) -> str:
        """The frozen soul's file name in ``fixtures/lookup/``."""
        return SOULS[self.soul]


# Frozen, in the order: the contrasts pair pack-only, soul-only and shipping
# with pack, and native-soul with native.
ROLES: tuple[Role, ...] = (
    Role("native", "native-lookup", "R0", "S0"),
    Role("pack", "continuity-pack-cold", "R0", "S0"),
    Role("pack-only", "continuity-pack-cold", "Rpack", "S0"),
    Role("soul-only", "continuity-pack-cold", "R0", "S1"),
    Role("shipping", "continuity-pack-cold", "Rpack", "S1"),
    Role("native-soul", "native-lookup", "R0", "S1"),
)


def role_named(name: str) -> Role:
    """The role called `name`.

    Raises:
        UsageError: ``lookup_role_unknown`` (at ``--lookup-role``) for any other name.
    """
    for role in ROLES:
        if role.name == name:
            return role
    raise UsageError(
        f"unknown lookup role {name[:40]!r}; use one of {', '.join(r.name for r in ROLES)}",
        code="lookup_role_unknown",
        location="--lookup-role",
    )
