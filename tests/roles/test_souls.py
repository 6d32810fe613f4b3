"""The two frozen souls: pinned raw and normalised-core digests, and failing closed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from continuity.errors import SoulError
from continuity.lookup.soul import (
    KNOWN_SOULS,
    check_soul,
    install_soul,
    known_soul_name,
    read_known_soul,
    read_soul,
    soul_path,
)

V1 = "continuity-soul-v1.md"
V2 = "continuity-soul-v2.md"
# Pinned here and in continuity.lookup.soul: a moved soul fails both.
PINS = {
    V1: (
        "642237f9be4efa1f254adefb143171f11ba18eb1b749c3516289d893536ac96f",
        "126f4e218e9cf8c9998eebe94e9e84a752a992d5abece2cae5cfc8baa5e6f4c2",
    ),
    V2: (
        "1de9d74ef224d3025a8a3e6dcb729793fea9f0ac44b507d14a506655b8a798db",
        "efeedf02a9482a40636ed0c783ef46b74d0653a10676be67680f8df7bb20229e",
    ),
}


@pytest.mark.parametrize("name", [V1, V2])
def test_the_frozen_souls_have_their_pinned_digests(name: str) -> None:
    data = soul_path(name).read_bytes()
    soul = read_known_soul(name)
    assert hashlib.sha256(data).hexdigest() == soul.sha256 == PINS[name][0]
    assert hashlib.sha256(soul.core.encode()).hexdigest() == soul.core_sha256 == PINS[name][1]
    assert KNOWN_SOULS[name] == PINS[name]
    assert known_soul_name(*PINS[name]) == name


def test_s1_is_the_s0_core_plus_history_routing_without_a_final_newline() -> None:
    raw = soul_path(V2).read_bytes()
    assert not raw.endswith(b"\n") and b"<!--" not in raw
    s0, s1 = read_soul(soul_path(V1)), read_soul(soul_path(V2))
    added = [line for line in s1.core.splitlines() if line not in s0.core.splitlines()]
    assert [line for line in s0.core.splitlines() if line not in s1.core.splitlines()] == []
    assert len(added) == 2 and "ConversationHistory" in added[0]
    assert "[c31]" in added[1]


def test_a_tampered_s1_fails_closed(tmp_path: Path) -> None:
    tampered = tmp_path / "source" / V2
    tampered.parent.mkdir()
    tampered.write_bytes(soul_path(V2).read_bytes() + b"\n")  # one cosmetic byte
    with pytest.raises(SoulError) as caught:
        check_soul(read_soul(tampered), *KNOWN_SOULS[V2], where="test")
    assert caught.value.code == "lookup_soul_mismatch" and "raw bytes" in str(caught.value)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with pytest.raises(SoulError) as caught:
        install_soul(workspace, *KNOWN_SOULS[V2], source=tampered)
    assert caught.value.code == "lookup_soul_mismatch"
    substantive = tmp_path / "source" / "edited.md"
    substantive.write_bytes(soul_path(V2).read_bytes().replace(b"search", b"guess"))
    with pytest.raises(SoulError) as caught:
        install_soul(workspace, *KNOWN_SOULS[V2], source=substantive)
    assert caught.value.code == "lookup_soul_mismatch" and "core" in str(caught.value)


def test_a_missing_soul_fails_closed(tmp_path: Path) -> None:
    with pytest.raises(SoulError) as caught:
        read_known_soul("continuity-soul-v3.md")
    assert caught.value.code == "lookup_soul_missing"
    with pytest.raises(SoulError) as caught:
        install_soul(tmp_path, *KNOWN_SOULS[V2], source=tmp_path / "absent.md")
    assert caught.value.code == "lookup_soul_missing"


def test_install_finds_the_soul_its_digests_bind(tmp_path: Path) -> None:
    soul = install_soul(tmp_path, *KNOWN_SOULS[V2])
    assert (tmp_path / V2).read_bytes() == soul_path(V2).read_bytes()
    assert soul.sha256 == PINS[V2][0]
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copyfile(soul_path(V1), copy / "any-name.md")
    assert (
        install_soul(tmp_path, *KNOWN_SOULS[V1], source=copy / "any-name.md").sha256
        == (PINS[V1][0])
    )
    with pytest.raises(SoulError) as caught:  # unknown digests: S0 is copied and refused
        install_soul(tmp_path, "0" * 64, PINS[V2][1])
    assert caught.value.code == "lookup_soul_mismatch"
