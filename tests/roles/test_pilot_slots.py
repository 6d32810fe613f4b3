"""A registered pilot's slots and boundaries (`continuity.roles.pilot.slots`) and the
real preparation child (`continuity.roles.pilot.prepare`), over the toy pilot's frozen
holdout and checkpoints replayed offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import msgspec
import pytest

from continuity.errors import ContinuityError
from continuity.lookup.reader import binding_models
from continuity.messages import UserMessage
from continuity.roles.pilot.prepare import CheckpointSource, crossed_boundary
from continuity.roles.pilot.registration import VerifiedPilot, read_pilot
from continuity.roles.pilot.slots import lookup_checkpoint, prepare_pilot, selected_traces
from continuity.spend.preparation import PreparationRequest, PreparedBoundary
from continuity.store import Store
from continuity.traces.validate import load_trace
from tests.roles.pilot_toy import PilotToy, pilot_toy, registered  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def verified(pilot_toy: PilotToy) -> VerifiedPilot:  # noqa: F811
    done = registered(pilot_toy)
    return read_pilot(done.path, done.sha256, pricing=pilot_toy.catalog)


def test_the_slots_are_the_sizings_feasible_ones_with_a_history_per_conversation(
    pilot_toy: PilotToy,  # noqa: F811
    verified: VerifiedPilot,
    tmp_path: Path,
) -> None:
    with prepare_pilot(pilot_toy.store, verified, tmp_path / "scratch") as prepared:
        slots = prepared.slots
        assert [s.slot_id for s in slots] == ["s000-pack", "s001-pack", "s002-pack"]
        assert all(s.arm == "continuity-pack-cold" and s.role == "pack" for s in slots)
        # two conversations: the first two slots share one ConversationHistory
        urls = [s.history_url for s in slots]
        assert urls[0] == urls[1] != urls[2]
        assert all(url and url.startswith("http://127.0.0.1:") for url in urls)
        listing = httpx.post(
            str(urls[0]),
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _init()},
            headers={"accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert listing.status_code == 200  # served while the pilot is prepared
        sources = [msgspec.json.decode(s.source, type=CheckpointSource) for s in slots]
        assert sources[0].checkpoint == sources[1].checkpoint != sources[2].checkpoint
        assert all("never came up" in s.question for s in slots)  # the probe turn's form
    with pytest.raises(httpx.TransportError):  # the endpoints end with the context
        httpx.post(str(urls[0]), json={}, timeout=2)


def _init() -> dict[str, object]:
    return {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }


def _native_source(toy: PilotToy, verified: VerifiedPilot, scratch: Path) -> CheckpointSource:
    selected = selected_traces(toy.store, verified)
    trace_id = sorted(selected)[0]
    private = Store(scratch / "private-store")
    data = toy.store.get_blob(selected[trace_id][1])
    private.put_blob(data)
    trace = load_trace(data, source=trace_id)
    models = binding_models(verified.registration.workload.reader_binding)
    key = lookup_checkpoint(private, trace, selected[trace_id], "native-lookup", models)
    role = verified.budget.roles[0]  # the toy sizes one role; its soul serves here
    return CheckpointSource(
        store=str(private.root),
        checkpoint=key,
        arm="native-lookup",
        soul_sha256=role.soul_sha256,
        soul_core_sha256=role.soul_core_sha256,
        models=models,
        call_budget=verified.budget.budget.calls,
        byte_budget=verified.budget.budget.bytes,
    )


def test_native_lookup_keeps_the_native_session_and_no_pack(
    pilot_toy: PilotToy,  # noqa: F811
    verified: VerifiedPilot,
    tmp_path: Path,
) -> None:
    boundary = crossed_boundary(_native_source(pilot_toy, verified, tmp_path))
    texts = [getattr(m, "text", "") for m in boundary.messages]
    assert texts and not any("<continuity-pack" in t for t in texts)
    assert isinstance(boundary.messages[0], UserMessage)
    assert boundary.system and "UNKNOWN" in boundary.system  # the role's soul


def _prepare(root: Path, source: str, arm: str) -> subprocess.CompletedProcess[bytes]:
    request = PreparationRequest(
        root=str(root), slot_id="s000-native", arm=arm, context=(), source=source
    )
    return subprocess.run(
        [sys.executable, "-m", "continuity.roles.pilot.prepare"],
        input=msgspec.json.encode(request),
        capture_output=True,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if "KEY" not in k},
        timeout=120,
        check=False,
    )


def test_the_preparation_child_writes_the_boundary_or_exits_3_with_its_code(
    pilot_toy: PilotToy,  # noqa: F811
    verified: VerifiedPilot,
    tmp_path: Path,
) -> None:
    source = _native_source(pilot_toy, verified, tmp_path)
    root = tmp_path / "out"
    root.mkdir(mode=0o700)
    encoded = msgspec.json.encode(source).decode()
    done = _prepare(root, encoded, "native-lookup")
    assert done.returncode == 0, done.stderr
    written = (root / "prepared" / "s000-native.json").read_bytes()
    assert msgspec.json.decode(written, type=PreparedBoundary).messages
    assert oct((root / "prepared" / "s000-native.json").stat().st_mode & 0o777) == "0o600"
    refused = [
        (_prepare(root, encoded, "continuity-pack-cold"), "lookup_preparation_invalid"),
        (_prepare(root, "not json", "native-lookup"), "lookup_preparation_invalid"),
        (
            _prepare(
                root,
                msgspec.json.encode(msgspec.structs.replace(source, checkpoint="0" * 64)).decode(),
                "native-lookup",
            ),
            "checkpoint_missing",
        ),
    ]
    for done, code in refused:
        assert done.returncode == 3 and done.stderr.decode().startswith(code), done.stderr


def test_a_store_without_the_registered_holdout_is_refused(
    verified: VerifiedPilot, tmp_path: Path
) -> None:
    with (
        pytest.raises(ContinuityError) as caught,
        prepare_pilot(Store(tmp_path / "empty"), verified, tmp_path / "scratch"),
    ):
        pass
    assert caught.value.code == "holdout_not_frozen"
