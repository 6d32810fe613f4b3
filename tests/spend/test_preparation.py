"""The preparation tuple, the one-use proof and the restored boundary (real files, a
real exited process)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from continuity.errors import SpendError
from continuity.messages import AssistantMessage, UserMessage
from continuity.spend.lease import process_start
from continuity.spend.preparation import (
    PreparationRequest,
    Prepared,
    boundary_messages,
    credential_free_environment,
    still_prepared,
    verify_prepared,
)
from continuity.spend.private import write_new
from tests.conftest import REPO


def prepare(root: Path, slot: str = "s1", arm: str = "native-lookup") -> Prepared:
    """What the controller does: the real preparation child, then the tuple and proof."""
    process = subprocess.Popen(
        [sys.executable, "-m", "continuity.spend.preparation"],
        stdin=subprocess.PIPE,
        cwd=REPO,
        env=credential_free_environment(os.environ),
    )
    start = process_start(process.pid)
    request = PreparationRequest(root=str(root), slot_id=slot, arm=arm, context=("hi", "hello"))
    process.communicate(msgspec.json.encode(request), timeout=60)
    assert process.returncode == 0 and start is not None
    data = (root / "prepared" / f"{slot}.json").read_bytes()
    prepared = Prepared(
        slot=slot, pid=process.pid, start=start, sha256=hashlib.sha256(data).hexdigest()
    )
    journal = root / "controller-journal.jsonl"
    with open(journal, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"event": "prepared", **msgspec.to_builtins(prepared)}) + "\n")
    journal.chmod(0o600)
    write_new(root / "prepared" / f"{slot}.proof", msgspec.json.encode(prepared))
    return prepared


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = tmp_path / "out"
    made.mkdir(mode=0o700)
    return made


def test_the_boundary_is_restored_exactly_and_its_proof_serves_once(root: Path) -> None:
    prepared = prepare(root)
    boundary = verify_prepared(root, prepared)
    assert boundary.messages == [UserMessage("hi"), AssistantMessage("hello")]
    assert boundary.system is None  # this preparer brings no system prompt
    still_prepared(root, prepared)
    with pytest.raises(SpendError) as caught:
        verify_prepared(root, prepared)  # the proof is spent
    assert caught.value.code == "lookup_preparation_invalid"


def test_changed_bytes_another_tuple_or_a_changed_journal_are_refused(root: Path) -> None:
    prepared = prepare(root)
    other = msgspec.structs.replace(prepared, start="another-start")
    with pytest.raises(SpendError) as caught:
        verify_prepared(root, other)
    assert caught.value.code == "lookup_preparation_invalid"
    boundary = root / "prepared" / "s1.json"
    data = boundary.read_bytes().replace(b"hello", b"hullo")
    boundary.unlink()
    write_new(boundary, data)
    with pytest.raises(SpendError) as caught:
        verify_prepared(root, prepared)
    assert "restored bytes" in caught.value.message
    prepare(root, slot="s2")
    second = root / "controller-journal.jsonl"
    second.write_text(
        second.read_text()
        + json.dumps(
            {"event": "prepared", "slot": "s1", "pid": 1, "start": "x", "sha256": "0" * 64}
        )
        + "\n"
    )
    with pytest.raises(SpendError) as caught:
        still_prepared(root, prepared)  # the record changed after the mint
    assert caught.value.code == "lookup_preparation_invalid"


def test_a_live_preparation_process_is_not_a_finished_one(root: Path) -> None:
    prepared = prepare(root)
    alive = msgspec.structs.replace(
        prepared, pid=os.getpid(), start=process_start(os.getpid()) or ""
    )
    journal = root / "controller-journal.jsonl"
    journal.write_text(json.dumps({"event": "prepared", **msgspec.to_builtins(alive)}) + "\n")
    with pytest.raises(SpendError) as caught:
        verify_prepared(root, alive)
    assert "still alive" in caught.value.message


def test_boundaries_by_arm_and_the_credential_free_environment() -> None:
    assert boundary_messages("native-lookup", ("a", "b", "c")) == [
        UserMessage("a"),
        AssistantMessage("b"),
        UserMessage("c"),
    ]
    (pack,) = boundary_messages("continuity-pack-cold", ("a", "b"))
    assert isinstance(pack, UserMessage) and pack.text.endswith("- a\n- b")
    with pytest.raises(SpendError) as caught:
        boundary_messages("restart", ("a",))
    assert caught.value.code == "lookup_pilot_boundary_required"
    env = credential_free_environment(
        {"PATH": "/bin", "OPENAI_API_KEY": "k", "GH_TOKEN": "t", "MY_SECRET": "s", "HOME": "/h"}
    )
    assert env == {"PATH": "/bin", "HOME": "/h"}
