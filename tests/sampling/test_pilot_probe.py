"""The pilot probe's runtime is the project's harness: a seeded workspace, the harness's
MCP client over the registered ConversationHistory, and lifecycle operations that act on
that workspace (the runtime proxy forwards exactly these)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from continuity.errors import HarnessError, SpendError
from continuity.harness.session import DurableSession
from continuity.harness.toolbox import McpToolbox
from continuity.messages import AssistantMessage, Message, UserMessage
from continuity.roles.pilot.smoke import fictional_history
from continuity.sampling.pilot_probe import ProbeRuntime
from continuity.servers.fixture import FixtureToolServer
from continuity.servers.history import history_in_thread

pytestmark = pytest.mark.anyio

BOUNDARY: list[Message] = [UserMessage("Ana moved to Lisbon."), AssistantMessage(text="Noted.")]


@pytest.fixture
def history_url(tmp_path: Path) -> Iterator[str]:
    store = fictional_history(tmp_path / "history")
    try:
        with history_in_thread(store) as url:
            yield url
    finally:
        store.close()


def _runtime(tmp_path: Path) -> ProbeRuntime:
    return ProbeRuntime.seeded(tmp_path / "probe", session_id="s", messages=BOUNDARY)


def test_the_workspace_is_seeded_with_the_boundary(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    on_disk = DurableSession.load(runtime.workspace.session_path)
    assert on_disk.context() == BOUNDARY
    assert runtime.sync_session() == 2
    assert (tmp_path / "probe").stat().st_mode & 0o777 == 0o700
    runtime.dispose()
    runtime.dispose()  # idempotent


async def test_tools_are_the_registered_history_and_refresh_lists_them_again(
    tmp_path: Path, history_url: str
) -> None:
    runtime = _runtime(tmp_path)
    async with McpToolbox(history_url) as toolbox:
        runtime.configure_tools(toolbox)
        await runtime.refresh()
        assert [d.name for d in toolbox.definitions] == ["ConversationHistory"]
        runtime.invalidate()
        assert runtime.toolbox is None
    runtime.dispose()


async def test_a_server_offering_other_tools_is_refused(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    async with FixtureToolServer([]).running() as url, McpToolbox(url) as toolbox:
        with pytest.raises(SpendError) as caught:
            runtime.configure_tools(toolbox)
    assert caught.value.code == "lookup_tools_forbidden"
    assert runtime.toolbox is None
    runtime.dispose()


def test_reconcile_sees_a_session_changed_on_disk_and_recover_reloads_it(
    tmp_path: Path,
) -> None:
    runtime = _runtime(tmp_path)
    runtime.reconcile()  # disk and memory agree
    other = DurableSession.load(runtime.workspace.session_path)
    other.append_message(UserMessage("written by someone else"))
    other.close()
    with pytest.raises(HarnessError) as caught:
        runtime.reconcile()
    assert caught.value.code == "probe_session_diverged"
    runtime.recover()  # what a restarted runtime sees
    runtime.reconcile()
    assert runtime.sync_session() == 3
    runtime.dispose()


async def test_a_retired_runtime_runs_no_turn(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    runtime.retire()
    with pytest.raises(HarnessError) as caught:
        await runtime.run_turn(object(), model="m", system="s", text="q", max_rounds=1)  # type: ignore[arg-type]
    assert caught.value.code == "probe_runtime_retired"
    runtime.dispose()
