"""The six roles, frozen as the issue's table, and the role options' refusals."""

from __future__ import annotations

import msgspec
import pytest

from continuity.errors import UsageError
from continuity.lookup.soul import KNOWN_SOULS
from continuity.roles.receipt import role_arms
from continuity.roles.table import ROLES, SOULS, Role, role_named

# Issue 15's table, copied by hand: role -> (arm, code, soul).
TABLE = {
    "native": ("native-lookup", "R0", "S0"),
    "pack": ("continuity-pack-cold", "R0", "S0"),
    "pack-only": ("continuity-pack-cold", "Rpack", "S0"),
    "soul-only": ("continuity-pack-cold", "R0", "S1"),
    "shipping": ("continuity-pack-cold", "Rpack", "S1"),
    "native-soul": ("native-lookup", "R0", "S1"),
}


def test_the_six_roles_are_the_issue_table() -> None:
    assert {r.name: (r.arm, r.code, r.soul) for r in ROLES} == TABLE
    assert [r.name for r in ROLES] == list(TABLE)
    assert SOULS == {"S0": "continuity-soul-v1.md", "S1": "continuity-soul-v2.md"}
    assert all(r.soul_file in KNOWN_SOULS for r in ROLES)
    assert role_named("shipping") == Role("shipping", "continuity-pack-cold", "Rpack", "S1")


def test_roles_are_frozen_and_typed() -> None:
    with pytest.raises(AttributeError):
        ROLES[0].arm = "native"  # type: ignore[misc,assignment]
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"name": "x", "arm": "native", "code": "R0", "soul": "S0"}, Role)


@pytest.mark.parametrize("name", ["", "Pack", "pack-cold", "shipping ", "x" * 200])
def test_an_unknown_role_is_refused_with_its_code(name: str) -> None:
    with pytest.raises(UsageError) as caught:
        role_named(name)
    assert caught.value.code == "lookup_role_unknown"
    assert caught.value.location == "--lookup-role"


def test_an_explicit_arms_must_be_the_roles_arm() -> None:
    pack = role_named("pack")
    assert role_arms(pack, None) == role_arms(pack, "all") == "continuity-pack-cold"
    assert role_arms(pack, "continuity-pack-cold") == "continuity-pack-cold"
    for arms in ("native-lookup", "native-lookup,continuity-pack-cold"):
        with pytest.raises(UsageError) as caught:
            role_arms(pack, arms)
        assert caught.value.code == "lookup_role_arms_conflict"
        assert caught.value.location == "--arms"
