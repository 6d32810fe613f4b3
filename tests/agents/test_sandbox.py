"""The outside agent's sandbox, against a real bubblewrap and a hostile adapter.

The adapter (`hostile_adapter.py`) tries what a modified toy adapter did to an
unsandboxed runner: read the checkout's fixtures, the output directory's traces, the
store, the credentials and the runner's ``/proc`` entries, reach another loopback port,
and leave a ``setsid`` double-forked daemon behind. Sandboxed, every attempt fails and
no process outlives the unit; unsandboxed (the same test, ``--no-sandbox``), the
attempts succeed, so the test can fail. Without a working bwrap, a sandboxed spawn is
``sandbox_unavailable``; an agent folder holding a protected path is
``sandbox_path_refused``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from continuity.agents import sandbox
from continuity.agents.client import spawn_adapter
from continuity.agents.manifest import Manifest, load_manifest
from continuity.agents.protocol import InitParams, ModelEndpoint
from continuity.agents.sandbox import Confinement, require_sandbox, sandbox_argv
from continuity.errors import AdapterError

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).with_name("hostile_adapter.py")
needs_bwrap = pytest.mark.skipif(
    sandbox.sandbox_problem() is not None and "CI" not in os.environ,
    reason=f"no sandbox here: {sandbox.sandbox_problem()}",
)  # under CI a missing bwrap fails these tests (.ci/run installs bubblewrap)


def _agent(tmp_path: Path) -> Manifest:
    folder = tmp_path / "agent"
    folder.mkdir()
    shutil.copy(HOSTILE, folder / "hostile_adapter.py")
    (folder / "agent.toml").write_text(
        'name = "hostile"\nversion = "1"\ncommand = ["{python}", "hostile_adapter.py"]\n'
        'env = ["PYTHONPATH", "HOSTILE", "HOSTILE_STREAM"]\n'
    )
    return load_manifest(folder / "agent.toml")


def _params(workspace: str) -> InitParams:
    model = ModelEndpoint(base_url="http://127.0.0.1:9/v1", api_key="dummy")
    return InitParams(workspace=workspace, model=model)


def _daemons(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def _attack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandboxed: bool) -> dict[str, Any]:
    out, store = tmp_path / "out", tmp_path / "store"
    (out / "traces").mkdir(parents=True)
    (out / "traces" / "answer-key.json").write_text('{"expected": "PP-4471"}')
    (store / "objects").mkdir(parents=True)
    (store / "objects" / "blob").write_text("stored")
    credentials = tmp_path / "credentials.env"
    credentials.write_text("OPENAI_API_KEY=sk-not-for-agents\n")
    monkeypatch.setenv("CONTINUITY_OUT", str(out))
    monkeypatch.setenv("CONTINUITY_STORE", str(store))
    monkeypatch.setenv("RUNNER_SECRET", "hunter2")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    marker = f"continuity-daemon-{os.getpid()}-{time.monotonic_ns()}"
    fixture = next((ROOT / "fixtures" / "original").iterdir())
    plan = {
        "read": [str(fixture), str(out / "traces" / "answer-key.json"),
                 str(store / "objects" / "blob"), str(credentials),
                 f"/proc/{os.getpid()}/environ", f"/proc/{os.getpid()}/cmdline"],
        "list": [str(ROOT), str(out), str(store)],
        "port": listener.getsockname()[1],
        "daemon": marker,
    }  # fmt: skip
    manifest = _agent(tmp_path)
    sockets = tmp_path / "sock"
    sockets.mkdir()
    confinement = Confinement(sockets=sockets, forwards=(), protected=(credentials,))
    workspace = tmp_path / "ws"
    env = {"PYTHONPATH": str(ROOT), "HOSTILE": json.dumps(plan)}

    async def main() -> None:
        async with spawn_adapter(
            manifest, workspace=workspace, log=tmp_path / "log", env=env,
            confinement=confinement if sandboxed else None,
        ) as adapter:  # fmt: skip
            seen = sandbox.WORKSPACE if sandboxed else str(workspace)
            await adapter.initialize(_params(seen), timeout=60)

    try:
        anyio.run(main)
        found: dict[str, Any] = json.loads((workspace / "attacks.json").read_text())
        time.sleep(0.5)  # the kernel tears the namespace down
        found["survivors"] = _daemons(marker)
    finally:
        listener.close()
        for pid in _daemons(marker):  # an unsandboxed run leaves it: clean up
            os.kill(pid, 9)
    return found


@needs_bwrap
def test_a_hostile_adapter_sees_and_reaches_nothing_and_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _attack(tmp_path, monkeypatch, sandboxed=True)
    assert all(v.startswith("err:") for v in found["read"].values()), found["read"]
    assert all(v.startswith("err:") for v in found["list"].values()), found["list"]
    assert found["port"].startswith("err:")
    assert "RUNNER_SECRET" not in found["env"] and "CONTINUITY_OUT" not in found["env"]
    assert found["workspace"] == "/workspace"
    assert found["survivors"] == []


def test_the_same_attacks_succeed_unsandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What --no-sandbox gives up (and proof that the test above can fail)."""
    found = _attack(tmp_path, monkeypatch, sandboxed=False)
    assert all(v.startswith("ok:") for v in found["read"].values()), found["read"]
    assert found["port"] == "ok:connected"
    assert found["survivors"] != []


def _stream(tmp_path: Path, how: str, *, sandboxed: bool = False) -> Any:
    manifest = _agent(tmp_path)
    sockets = tmp_path / "sock"
    sockets.mkdir(exist_ok=True)
    confinement = Confinement(sockets=sockets, forwards=())
    env = {"PYTHONPATH": str(ROOT), "HOSTILE_STREAM": how}

    async def main() -> Any:
        async with spawn_adapter(
            manifest, workspace=tmp_path / "ws", log=tmp_path / "log", env=env,
            confinement=confinement if sandboxed else None,
        ) as adapter:  # fmt: skip
            seen = sandbox.WORKSPACE if sandboxed else str(tmp_path / "ws")
            await adapter.initialize(_params(seen), timeout=60)
            return adapter

    return anyio.run(main)


@pytest.mark.parametrize("sandboxed", [False, pytest.param(True, marks=needs_bwrap)])
@pytest.mark.parametrize("how", ["deep", "huge"])
def test_a_deep_or_huge_line_is_a_protocol_error_not_a_crash(
    tmp_path: Path, how: str, sandboxed: bool
) -> None:
    with pytest.raises(AdapterError) as caught:
        _stream(tmp_path, how, sandboxed=sandboxed)
    assert caught.value.code == "adapter_protocol_error"
    assert caught.value.location == "initialize"
    assert ("deeper than 64" if how == "deep" else "byte limit") in caught.value.message


@pytest.mark.parametrize("sandboxed", [False, pytest.param(True, marks=needs_bwrap)])
def test_a_flood_of_notifications_is_counted_not_held(tmp_path: Path, sandboxed: bool) -> None:
    """20 MB of notifications, 4 KB each (and 8 MiB lines would be no different): the
    runner counts them and holds none."""
    adapter = _stream(tmp_path, "flood", sandboxed=sandboxed)
    assert adapter.event_count == 5000
    assert not hasattr(adapter, "events")


def test_no_bwrap_is_sandbox_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CONTINUITY_BWRAP", str(fake))
    sandbox.sandbox_problem.cache_clear()
    try:
        with pytest.raises(AdapterError) as caught:
            require_sandbox("--agent")
        assert caught.value.code == "sandbox_unavailable"
        assert "uid map" in caught.value.message and "--no-sandbox" in caught.value.message
        monkeypatch.setenv("CONTINUITY_BWRAP", str(tmp_path / "missing"))
        sandbox.sandbox_problem.cache_clear()
        with pytest.raises(AdapterError) as caught:
            require_sandbox("--agent")
        assert "not installed" in caught.value.message
    finally:
        monkeypatch.delenv("CONTINUITY_BWRAP")
        sandbox.sandbox_problem.cache_clear()


@needs_bwrap
def test_an_agent_folder_holding_the_output_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = _agent(tmp_path)
    monkeypatch.setenv("CONTINUITY_OUT", str(tmp_path / "agent" / "out"))
    confinement = Confinement(sockets=tmp_path, forwards=())
    with pytest.raises(AdapterError) as caught:
        sandbox_argv([sys.executable, "hostile_adapter.py"], folder=Path(manifest.folder),
                     workspace=tmp_path / "ws", confinement=confinement, env={})  # fmt: skip
    assert caught.value.code == "sandbox_path_refused"
