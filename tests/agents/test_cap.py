"""CAP/0 end to end with a real adapter process: turns, a steer while a turn is pending,
a restart continuity causes (group killed, relaunched with resume), and every failure
with its code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from continuity.agents.client import AdapterProcess, require_capabilities, spawn_adapter
from continuity.agents.manifest import MANIFEST_MAX_BYTES, Manifest, load_manifest
from continuity.agents.protocol import Capabilities, InitParams, ModelEndpoint
from continuity.errors import AdapterError, InputError
from continuity.spend.containment import group_members

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = Path(__file__).with_name("echo_adapter.py")


def _manifest(tmp_path: Path, *command: str, env: tuple[str, ...] = ()) -> Manifest:
    path = tmp_path / "agent.toml"
    listed = ", ".join(f'"{c}"' for c in command or (sys.executable, str(ADAPTER)))
    names = ", ".join(f'"{n}"' for n in ("PYTHONPATH", *env))
    path.write_text(f'name = "echo"\nversion = "1"\ncommand = [{listed}]\nenv = [{names}]\n')
    return load_manifest(path)


def _params(tmp_path: Path, resume: str | None = None) -> InitParams:
    model = ModelEndpoint(base_url="http://127.0.0.1:9/v1", api_key="dummy")
    return InitParams(workspace=str(tmp_path / "ws"), model=model,
                      resume={"session_id": resume} if resume else None)  # fmt: skip


def _run(tmp_path: Path, body: Any, manifest: Manifest | None = None, **env: str) -> Any:
    chosen = manifest or _manifest(tmp_path)

    async def main() -> Any:
        async with spawn_adapter(chosen, workspace=tmp_path / "ws", log=tmp_path / "log",
                                 env={"PYTHONPATH": str(ROOT), **env}) as adapter:  # fmt: skip
            return await body(adapter)

    return anyio.run(main)


def test_turns_a_pending_steer_and_a_restart_that_resumes(tmp_path: Path) -> None:
    async def first(adapter: AdapterProcess) -> tuple[int, str, str]:
        info = await adapter.initialize(_params(tmp_path))
        assert info.capabilities.resume_after_restart
        session = await adapter.open_session("k1")
        await adapter.run_turn(session, "t1", "hello")
        async with anyio.create_task_group() as group:
            replies: list[str] = []

            async def turn() -> None:
                done = await adapter.run_turn(session, "t2", "wait-for-steer")
                replies.append(done.reply["text"])

            group.start_soon(turn)
            delivery = await adapter.steer(session, "t2", "s1", "draft only")
        assert delivery.delivery == "injected"
        adapter.kill()  # the restart continuity causes
        return adapter.pid, session, replies[0]

    pid, session, reply = _run(tmp_path, first)
    assert reply == "hello | wait-for-steer + draft only"
    assert group_members(pid) == []  # the whole group is gone

    async def second(adapter: AdapterProcess) -> tuple[int, str]:
        await adapter.initialize(_params(tmp_path, resume=session))
        done = await adapter.run_turn(session, "t3", "again")
        await adapter.shutdown()
        return adapter.pid, done.reply["text"]

    pid2, text = _run(tmp_path, second)
    assert pid2 != pid and text == "hello | wait-for-steer + draft only | again"


def test_the_adapter_gets_the_allowlisted_environment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("ALLOWED_ONE", "1")

    async def body(adapter: AdapterProcess) -> str:
        await adapter.initialize(_params(tmp_path))
        session = await adapter.open_session("k")
        return (await adapter.run_turn(session, "t", "env")).reply["text"]

    seen = _run(tmp_path, body, _manifest(tmp_path, env=("ALLOWED_ONE",)))
    assert seen.split(",") == ["ALLOWED_ONE"]  # PYTHON* and LC_CTYPE (Python sets it) left out


@pytest.mark.parametrize(
    ("mode", "code", "method"),
    [
        ("exit", "adapter_start_failed", "initialize"),
        ("slow", "adapter_timeout", "turn/run"),
    ],
)
def test_a_misbehaving_adapter_fails_with_its_code(
    tmp_path: Path, mode: str, code: str, method: str
) -> None:
    async def body(adapter: AdapterProcess) -> None:
        await adapter.initialize(_params(tmp_path))
        session = await adapter.open_session("k")
        await adapter.run_turn(session, "t", "hello", timeout=1.5)

    with pytest.raises(AdapterError) as caught:
        _run(tmp_path, body, ECHO_MODE=mode)
    assert (caught.value.code, caught.value.location) == (code, method)


def test_an_adapter_writing_garbage_on_the_protocol_is_a_protocol_error(tmp_path: Path) -> None:
    """Not through the SDK (which keeps stdout for the protocol and sends prints to
    stderr): a process that writes anything else on stdout."""
    script = "import sys, time; print('this is not json', flush=True); time.sleep(30)"
    manifest = _manifest(tmp_path, sys.executable, "-c", script)
    with pytest.raises(AdapterError) as caught:
        _run(tmp_path, lambda adapter: adapter.initialize(_params(tmp_path)), manifest)
    assert (caught.value.code, caught.value.location) == ("adapter_protocol_error", "initialize")


def test_an_agents_print_goes_to_the_log_not_the_protocol(tmp_path: Path) -> None:
    async def body(adapter: AdapterProcess) -> str:
        await adapter.initialize(_params(tmp_path))
        session = await adapter.open_session("k")
        return (await adapter.run_turn(session, "t", "hello")).reply["text"]

    assert _run(tmp_path, body, ECHO_MODE="print") == "hello"
    assert "printed by the agent" in (tmp_path / "log").read_text()


def test_a_command_that_cannot_start_is_adapter_start_failed(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, str(tmp_path / "no-such-agent"))
    with pytest.raises(AdapterError) as caught:
        _run(tmp_path, lambda adapter: adapter.initialize(_params(tmp_path)), manifest)
    assert caught.value.code == "adapter_start_failed"


def test_an_arm_needing_an_undeclared_capability_is_refused() -> None:
    require_capabilities(Capabilities(resume_after_restart=True), ["native", "restart"])
    with pytest.raises(AdapterError) as caught:
        require_capabilities(Capabilities(), ["native", "new_session"])
    assert caught.value.code == "adapter_capability_missing:new_session"
    assert caught.value.location == "new_session"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('name = "echo"\nversion = "1"\ncommand = []\n', "command"),
        ('name = "echo"\nversion = "1"\n', "command"),
        ('name = "e/cho"\nversion = "1"\ncommand = ["a"]\n', "name"),
        ('name = "echo"\nversion = "1"\ncommand = ["a"]\nprotocol = "cap/9"\n', "protocol"),
        ('name = "echo"\nversion = "1"\ncommand = ["a"]\nsecret = "x"\n', "secret"),
        ('name = "echo"\nversion = "1"\ncommand = ["a"]\nenv = ["A=1"]\n', "env"),
        ('name = "echo"\nversion = "1"\ncommand = ["a"]\nenv = ["OPENAI_API_KEY"]\n', "env"),
        ('name = "echo"\nversion = "1"\ncommand = ["a"]\nenv = ["GH_TOKEN"]\n', "env"),
        ("name = echo\n", ""),
    ],
)
def test_a_bad_manifest_is_refused_at_its_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    with pytest.raises(AdapterError) as caught:
        load_manifest(path)
    assert caught.value.code == "agent_manifest_invalid"
    assert caught.value.location == (f"{path}:{field}" if field else str(path))


def test_a_missing_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AdapterError) as caught:
        load_manifest(tmp_path / "agent.toml")
    assert caught.value.code == "agent_manifest_invalid"


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "huge"])
def test_a_manifest_that_is_not_a_small_regular_file_is_refused_fast(
    tmp_path: Path, kind: str
) -> None:
    """/dev/zero, a FIFO (a blocking read would hang), a directory, a sparse file over
    the limit: one coded error, never a hang or a MemoryError."""
    path = Path("/dev/zero") if kind == "device" else tmp_path / "agent.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "huge":
        with path.open("wb") as handle:
            handle.truncate(MANIFEST_MAX_BYTES + 1)
    with pytest.raises(InputError) as caught:
        load_manifest(path)
    assert caught.value.code == ("input_too_large" if kind == "huge" else "input_not_a_file")
    assert caught.value.location == str(path)


def test_the_manifest_digest_binds_what_starts_the_agent_not_where_it_lives(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = _manifest(tmp_path / "a", "python3", "agent.py")
    moved = _manifest(tmp_path / "b", "python3", "agent.py")
    changed = _manifest(tmp_path / "b", "python3", "agent2.py")
    assert one.digest == moved.digest != changed.digest
