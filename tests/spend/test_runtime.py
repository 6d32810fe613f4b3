"""The pilot runtime proxy: the branded one-shot dispatch, the allowlisted surface, the
settings checks and the transcript snapshot, over a real guard and loopback SSE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.errors import HarnessError, SpendError
from continuity.harness.session import DurableSession
from continuity.lookup.pilot_settings import resolve_pilot_settings
from continuity.messages import AssistantMessage, Message, ModelRequest, UserMessage
from continuity.sampling.pilot_probe import ProbeRuntime, resolve_settings
from continuity.spend.assumptions import ASSUMED_V1
from continuity.spend.child_config import ChildConfig
from continuity.spend.pilot_child import check_child_settings, reader_model
from continuity.spend.preparation import Prepared
from continuity.spend.runtime import (
    LIFECYCLE,
    GuardedDispatch,
    RuntimeProxy,
    TranscriptSnapshot,
    check_dispatch,
    guarded_dispatch,
)
from tests.spend.conftest import Rig, request
from tests.spend.sse import text_reply

pytestmark = pytest.mark.anyio

CONFIG = ChildConfig(
    fd=0,
    run_id="run-1",
    epoch="e",
    slot_id="s",
    cache_key="run-1:s",
    assigned={"s": "run-1:s"},
    controller_pid=1,
    controller_start="x",
    root="/nonexistent",
    account="/nonexistent/account.sqlite3",
    base_url="http://127.0.0.1:9/v1",
    allowed=(("127.0.0.1", 9),),
    credentials="/nonexistent/credentials.json",
    question="q",
    history_url="http://127.0.0.1:9/mcp",
    prepared=Prepared(slot="s", pid=1, start="x", sha256="0" * 64),
    settings=resolve_pilot_settings("native-lookup", reader=ASSUMED_V1.model, judge=None),
)
SAFE = CONFIG.settings
MODEL = reader_model(CONFIG)


class Runtime:
    def __init__(self) -> None:
        self.disposed = 0

    def dispose(self) -> None:
        self.disposed += 1

    def prepare(self) -> None:  # pragma: no cover - the proxy must never forward it
        raise AssertionError("forwarded")


def request_for(messages: tuple[Message, ...]) -> ModelRequest:
    return msgspec.structs.replace(request(), messages=messages)


async def test_a_run_is_a_harness_turn_whose_requests_go_through_the_guard(
    rig: Rig, tmp_path: Path
) -> None:
    # The runtime is the project's harness (`continuity.sampling.pilot_probe`): the agent
    # loop over a workspace seeded with the boundary, the proxy as its only model.
    rig.script(text_reply())
    boundary: list[Message] = [UserMessage("Ana moved to Lisbon."), AssistantMessage(text="Noted.")]
    runtime = ProbeRuntime.seeded(tmp_path / "probe", session_id="s", messages=boundary)
    proxy = RuntimeProxy(runtime, guarded_dispatch(rig.guard()), SAFE, MODEL)
    report = await proxy.run("Where did Ana move?", system="Answer.", max_rounds=4)
    assert report.requests == 1 and runtime.answer() == "an answer"
    assert [op for op, _ in rig.permits.log] == ["admit", "consume", "settle"]
    sent = json.loads(rig.app.requests[0][1])["input"]
    assert "Ana moved to Lisbon." in json.dumps(sent[0])  # the seeded boundary comes first
    # the turn is in the workspace's durable session, as every probe's is
    on_disk = DurableSession.load(runtime.workspace.session_path)
    texts = [getattr(m, "text", None) for m in on_disk.context()]
    assert texts[-2:] == ["Where did Ana move?", "an answer"]
    runtime.reconcile()  # the session on disk is the one in memory
    proxy.dispose()
    with pytest.raises(HarnessError) as caught:
        await proxy.run("again?", system="Answer.", max_rounds=4)
    assert caught.value.code == "probe_runtime_retired"


async def test_a_request_that_rewrites_an_earlier_message_is_refused(rig: Rig) -> None:
    rig.script(text_reply())
    proxy = RuntimeProxy(Runtime(), guarded_dispatch(rig.guard()), SAFE, MODEL)
    first = (UserMessage("Where did Ana move?"),)
    _ = [e async for e in proxy.stream(request_for(first))]
    with pytest.raises(SpendError) as caught:
        _ = [e async for e in proxy.stream(request_for((UserMessage("Where really?"),)))]
    assert caught.value.code == "lookup_native_identity_forbidden"
    assert [op for op, _ in rig.permits.log] == ["admit", "consume", "settle"]  # no send


def test_snapshots_refuse_a_removed_or_rewritten_message() -> None:
    transcript: list[Message] = [UserMessage("a"), UserMessage("b")]
    snapshot = TranscriptSnapshot.take(transcript)
    for changed in ([UserMessage("a")], [UserMessage("a"), UserMessage("c")]):
        with pytest.raises(SpendError) as caught:
            snapshot.check(changed)
        assert caught.value.code == "lookup_native_identity_forbidden"


async def test_only_the_branded_one_shot_dispatch_may_dispatch(rig: Rig) -> None:
    guard = rig.guard()
    for fake in (lambda request: request, object(), None):
        with pytest.raises(SpendError) as caught:
            check_dispatch(fake)
        assert caught.value.code == "lookup_unguarded_dispatch"
    with pytest.raises(SpendError) as caught:
        GuardedDispatch(guard, object())  # a forged brand
    assert caught.value.code == "lookup_unguarded_dispatch"

    class Subclass(GuardedDispatch):
        pass

    forged = Subclass.__new__(Subclass)
    with pytest.raises(SpendError):
        check_dispatch(forged)
    dispatch = guarded_dispatch(guard)
    RuntimeProxy(Runtime(), dispatch, SAFE, MODEL)
    with pytest.raises(SpendError) as caught:
        RuntimeProxy(Runtime(), dispatch, SAFE, MODEL)  # one-shot
    assert caught.value.code == "lookup_unguarded_dispatch"


async def test_the_surface_is_run_and_the_lifecycle_operations_only(rig: Rig) -> None:
    runtime = Runtime()
    proxy: Any = RuntimeProxy(runtime, guarded_dispatch(rig.guard()), SAFE, MODEL)
    proxy.dispose()
    assert runtime.disposed == 1
    assert "dispose" in LIFECYCLE
    for name in ("prepare", "prepare_dispatch", "compact", "handoff", "capture"):
        with pytest.raises(SpendError) as caught:
            getattr(proxy, name)
        assert caught.value.code == "lookup_preparation_forbidden"
    for name in ("check_provider", "complete", "complete_simple", "models", "anything"):
        with pytest.raises(SpendError) as caught:
            getattr(proxy, name)
        assert caught.value.code == "lookup_method_forbidden"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"judge": "gpt-judge"}, "lookup_auxiliary_callers_forbidden"),
        ({"model_switch": True}, "lookup_model_switch_forbidden"),
        ({"arm": "restart"}, "lookup_pilot_boundary_required"),
        ({"max_retries": 2}, "lookup_route_mismatch"),
        ({"tools": ("ConversationHistory", "web")}, "lookup_tools_forbidden"),
        ({"decorator": None}, "lookup_unguarded_dispatch"),
    ],
)
async def test_unsafe_settings_refuse_at_construction(
    rig: Rig, change: dict[str, Any], code: str
) -> None:
    unsafe = msgspec.structs.replace(SAFE, **change)
    with pytest.raises(SpendError) as caught:
        RuntimeProxy(Runtime(), guarded_dispatch(rig.guard()), unsafe, MODEL)
    assert caught.value.code == code
    assert rig.app.requests == []


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"judge": "openai:gpt-5-judge"}, "lookup_auxiliary_callers_forbidden"),
        ({"arm": "continuity-pack-cold"}, "lookup_auxiliary_callers_forbidden"),  # not its arm
        ({"tools": ()}, "lookup_tools_forbidden"),
    ],
)
def test_the_child_refuses_unsafe_resolved_settings_before_ready(
    change: dict[str, Any], code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = msgspec.structs.replace(CONFIG, settings=msgspec.structs.replace(SAFE, **change))
    with pytest.raises(SystemExit) as exited:
        check_child_settings(config, config.settings)
    assert exited.value.code == 3
    assert capsys.readouterr().err.startswith(f"lookup_child_refused: {code}: ")


def test_the_child_resolves_its_own_harness_and_accepts_the_entrys_settings() -> None:
    own = resolve_settings(CONFIG)  # from the configuration of the harness it runs
    assert own == CONFIG.settings
    check_child_settings(CONFIG, own)


@pytest.mark.parametrize(
    "patch",
    [
        {"runtime": {"session": {"continuity": {"upkeep_enabled": True}}}},
        {"tools": {"allowed_tools": ["ConversationHistory", "fetch_page"]}},
    ],
)
def test_a_child_whose_harness_differs_from_the_entrys_is_refused(
    patch: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    sent = resolve_pilot_settings(
        "native-lookup", reader=ASSUMED_V1.model, judge=None, patches=[patch]
    )
    config = msgspec.structs.replace(CONFIG, settings=sent)
    with pytest.raises(SystemExit) as exited:
        check_child_settings(config, resolve_settings(config))
    assert exited.value.code == 3
    err = capsys.readouterr().err
    assert err.startswith("lookup_child_refused: lookup_auxiliary_callers_forbidden: ")
